"""A shell script read as it would run, without running anything: its commands in the order bash reaches them,
each with its words expanded from the values variables have at that point (:mod:`.expand`).

The script runs with the arguments the user gives (``advise --verl run.sh -- --model X``; none: the defaults it
sets). Assignments, ``export`` / ``declare`` / ``local``, ``unset``, ``shift``, ``set --``, ``getopts``, functions,
``exit`` / ``return`` / ``break`` / ``continue`` take effect; ``if`` / ``while`` / ``until`` / ``case`` / ``&&`` /
``||`` take the branch their test decides (:mod:`.conditions`), so that an argument loop (``while [[ $# -gt 0 ]];
do case $1 in --model) MODEL=$2; shift 2;; ... esac; done``) reads the arguments given. A test that depends on
what only the running script knows runs each branch once, and a variable the branches leave different becomes a
marker naming that line. Every other command (a launch among them) is collected with its line.

Bounded by construction: at most :data:`MAX_STEPS` commands, loop rounds and tests, and :data:`MAX_EXPANDED`
characters of expansion over the whole script.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ....errors import InputError
from .arithmetic import TooManySteps, integer_expression
from .arrays import take_arrays
from .builtins import BUILTINS, Break, Exit, Return
from .conditions import Truth
from .expand import MAX_COMMAND, words
from .grammar import AndOr, Arith, Block, Case, Command, For, Function, Group, If, Loop, Pipeline, Simple, parse
from .patterns import glob_match
from .state import Shell, clean, marker, unresolved
from .tokens import tokenize

#: Most commands, loop rounds and tests read.
MAX_STEPS = 50_000
#: Most characters the whole script's commands expand to.
MAX_EXPANDED = 2 * 2**20
#: Most rounds of one loop read; a loop that goes on longer is read as one that runs when the script runs.
MAX_ROUNDS = 1_000
#: Most functions calling one another.
MAX_CALLS = 64
_LITERAL = re.compile(r"[A-Za-z0-9_./=:@+,%^-]*")
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_DECLARE = frozenset({"export", "readonly", "declare", "local", "typeset"})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "ssh", "srun", "docker", "kubectl"})


@dataclass
class Ran:
    """What reading the script found: each collected command (line, words, the environment variables whose values
    are in each word), the here-documents fed to another shell, where it exits, and where it reads its arguments."""

    commands: list[tuple[int, list[str], list[list[str]]]] = field(default_factory=list)
    shells: list[tuple[int, str]] = field(default_factory=list)
    exit_line: int | None = None
    argument_line: int | None = None
    arguments_given: bool = False


def run_script(text: str, name: str, environ: Mapping[str, str], arguments: Sequence[str] | None = None) -> Ran:
    """Read ``text`` (named ``name`` in errors) as bash would run it with ``arguments`` and ``environ``."""
    block = parse(tokenize(text, name), name)
    reader = _Reader(name, Shell(environ, arguments, name.rsplit("/", 1)[-1]))
    try:
        reader.block(block)
    except Exit as exc:
        reader.ran.exit_line = exc.line
    except (Return, Break):
        pass
    reader.ran.argument_line = reader.shell.argument_line
    reader.ran.arguments_given = reader.shell.given
    return reader.ran


class _Reader:
    def __init__(self, name: str, shell: Shell) -> None:
        self.name, self.shell, self.ran = name, shell, Ran()
        self.functions: dict[str, Command] = {}
        self.steps = self.expanded = self.calls = 0

    def step(self, line: int) -> None:
        self.steps += 1
        self.shell.line = line
        if self.steps > MAX_STEPS:
            raise InputError(
                f"{self.name} line {line}: reading the script takes more than {MAX_STEPS:,} steps (a loop that "
                "never ends when read?)"
            )

    def expand(self, raw: Sequence[str], line: int) -> list[str]:
        self.shell.line = line
        if sum(map(len, raw)) + len(raw) > MAX_COMMAND:
            raise InputError(f"{self.name} line {line}: a command longer than {MAX_COMMAND:,} characters")
        if all(_LITERAL.fullmatch(w) for w in raw):  # nothing to expand or unquote
            return list(raw)
        found = words(" ".join(raw), f"{self.name} line {line}", self.shell)
        self.expanded += sum(map(len, found))
        if self.expanded > MAX_EXPANDED:
            raise InputError(f"{self.name} line {line}: the script expands to more than {MAX_EXPANDED:,} characters")
        return found

    def block(self, block: Block) -> Truth:
        status: Truth = True
        for item in block:
            status = self.and_or(item)
        return status

    def and_or(self, item: AndOr) -> Truth:
        status = self.pipeline(item.first)
        for op, pipeline in item.rest:
            if status is (op == "&&"):
                status = self.pipeline(pipeline)
            elif status is None:  # the right side runs or not: its effects are both
                self.branches([[AndOr(pipeline, [])], None], pipeline.line)
                status = None
        return status

    def pipeline(self, pipeline: Pipeline) -> Truth:
        status: Truth = True
        for command in pipeline.commands:
            status = self.command(command)
        return (None if status is None else not status) if pipeline.negated else status

    def command(self, command: Command) -> Truth:
        self.step(getattr(command, "line", 0))
        if isinstance(command, Simple):
            return self.simple(command)
        if isinstance(command, Arith):
            return self.arith(command.expression, command.line)
        if isinstance(command, Group):
            return self.block(command.body)
        if isinstance(command, Function):
            self.functions[command.name] = command.body
            return True
        if isinstance(command, If):
            return self.if_then(command)
        if isinstance(command, Case):
            return self.case(command)
        if isinstance(command, Loop):
            return self.loop(command)
        return self.for_loop(command)

    def arith(self, expression: str, line: int) -> Truth:
        found = self.expand([f'"$(({expression}))"'], line)
        if len(found) != 1 or unresolved(found[0]):
            return None
        return clean(found[0])[0].strip() not in ("0", "")

    def simple(self, command: Simple) -> Truth:
        found = take_arrays(self.expand(command.words, command.line), self.shell)
        count = next((i for i, w in enumerate(found) if _ASSIGNMENT.match(w) is None), len(found))
        if count == len(found) or (found and found[count] in _DECLARE):
            for word in found[:count] + ([] if count == len(found) else found[count + 1 :]):
                m = _ASSIGNMENT.match(word)
                if m:
                    self.shell[m.group(1)] = m.group(2)
            return True
        argv = found[count:]
        head = clean(argv[0])[0]
        builtin = BUILTINS.get(head)
        if builtin is not None:
            return builtin(self.shell, [clean(w)[0] if i == 0 else w for i, w in enumerate(argv)], command.line)
        if head in self.functions:
            return self.call(head, argv[1:], command.line)
        self.collect(argv, command)
        return None

    def collect(self, argv: list[str], command: Simple) -> None:
        cleaned = [clean(w) for w in argv]
        self.ran.commands.append((command.line, [c[0] for c in cleaned], [c[1] for c in cleaned]))
        head = [w.rsplit("/", 1)[-1] for w, _ in cleaned[:3]]
        if command.heredocs and _SHELLS & set(head):
            self.ran.shells += [(command.line, d.text) for d in command.heredocs]

    def call(self, name: str, arguments: list[str], line: int) -> Truth:
        self.calls += 1
        if self.calls > MAX_CALLS:
            raise InputError(f"{self.name} line {line}: functions call one another more than {MAX_CALLS} deep")
        saved = self.shell.positional
        self.shell.positional = list(arguments)
        try:
            return self.command(self.functions[name])
        except Return:
            return True
        finally:
            self.shell.positional, self.calls = saved, self.calls - 1

    def if_then(self, command: If) -> Truth:
        for i, (condition, body) in enumerate(command.branches):
            truth = self.block(condition)
            if truth is True:
                return self.block(body)
            if truth is None:
                rest: list[Block | None] = [body]
                for other_condition, other_body in command.branches[i + 1 :]:
                    rest.append([*other_condition, *other_body])
                rest.append(command.otherwise)
                self.branches(rest, command.line)
                return None
        return self.block(command.otherwise) if command.otherwise is not None else True

    def case(self, command: Case) -> Truth:
        text = clean(" ".join(self.expand([command.word], command.line)))[0]
        if unresolved(text) is None:
            for patterns, body in command.arms:
                expanded = ["".join(self.expand([p], command.line)) for p in patterns]
                if any(unresolved(p) for p in expanded):
                    break
                if any(glob_match(clean(p)[0], text) for p in expanded):
                    return self.block(body)
            else:
                return True
        self.branches([body for _, body in command.arms] + [None], command.line)
        return None

    def loop(self, command: Loop) -> Truth:
        for _ in range(MAX_ROUNDS):
            truth = self.block(command.condition)
            truth = (None if truth is None else not truth) if command.negated else truth
            if truth is False:
                return True
            if truth is None or not self.round(command.body, command.line):
                break
        else:  # a loop that does not end when read (while true; do sleep 60; done): what it leaves is not known
            truth = None
        if truth is None:
            self.branches([command.body, None], command.line)
            return None
        return True

    def round(self, body: Block, line: int) -> bool:
        """One round of a loop's body; whether the loop goes on (``break`` ends it)."""
        self.step(line)
        try:
            self.block(body)
        except Break as exc:
            if exc.levels > 1:
                raise Break(exc.levels - 1, exc.again) from None
            return exc.again
        return True

    def for_loop(self, command: For) -> Truth:
        if command.arith is not None:
            return self.arith_for(command)
        items = self.expand(command.words, command.line) if command.words is not None else list(self.shell.positional)
        if command.words is None:
            self.shell.argument_line = self.shell.argument_line or command.line
        if any(unresolved(i) for i in items):
            self.shell[command.name] = next(i for i in items if unresolved(i))
            self.branches([command.body, None], command.line)
            return None
        for item in items:
            self.shell[command.name] = item
            if not self.round(command.body, command.line):
                break
        return True

    def arith_for(self, command: For) -> Truth:
        """``for ((init; test; step))`` where each part is an assignment, a test or ``NAME++`` / ``NAME+=N``."""
        parts = (command.arith or "").split(";")
        if len(parts) != 3 or not self.arith_assign(parts[0], command.line):
            self.branches([command.body, None], command.line)
            return None
        for _ in range(MAX_ROUNDS):
            truth = self.arith(parts[1], command.line) if parts[1].strip() else True
            if truth is False:
                return True
            if truth is None or not self.round(command.body, command.line):
                break
            if not self.arith_assign(parts[2], command.line):
                break
        self.branches([command.body, None], command.line)
        return None

    def arith_assign(self, text: str, line: int) -> bool:
        m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*(\+\+|--|[-+*/]?=)\s*(.*?)\s*", text)
        if m is None:
            return not text.strip()
        name, op, value = m.groups()
        try:
            plain = {k: clean(v)[0] for k, v in self.shell.items() if unresolved(v) is None}
            right = integer_expression(value or "1", plain)
            current = integer_expression(name, plain) if op != "=" else 0
        except (ValueError, ZeroDivisionError, TooManySteps):
            return False
        new = {"++": current + 1, "--": current - 1, "=": right, "+=": current + right, "-=": current - right,
               "*=": current * right}.get(op)  # fmt: skip
        if new is None:
            return False
        self.shell[name] = str(new)
        return True

    def branches(self, bodies: list[Block | None], line: int) -> None:
        """Each of ``bodies`` (None: nothing runs) from the same state; what they leave different is a marker."""
        start = self.shell.copy()
        outcomes: list[Shell] = []
        ended: Exception | None = None
        for body in bodies:
            self.shell = start.copy()
            try:
                if body is not None:
                    self.block(body)
            except (Exit, Return, Break) as exc:
                ended = ended or exc
                continue  # this way the script (or function, or loop) ends: the others go on
            outcomes.append(self.shell)
        if not outcomes and ended is not None:
            self.shell = start
            raise ended
        self.shell = start if not outcomes else outcomes[0]
        if len(outcomes) <= 1:
            return
        why = f"set by a test at line {line} that depends on what the script does when it runs"
        for key in {k for o in outcomes for k in o}:
            values = [o.get(key) for o in outcomes]
            if any(v != values[0] for v in values):
                dict.__setitem__(self.shell, key, marker(f"${key}", why))
                self.shell.environment.discard(key)
        if any(o.positional != outcomes[0].positional for o in outcomes):
            self.shell.positional = [marker("$1", why)]
