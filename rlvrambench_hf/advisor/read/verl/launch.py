"""A VERL launch script read as text, never run: the ``key=value`` overrides of each ``python3 -m verl...`` command.

Commands are split with :mod:`shlex` after joining ``\\``-continued lines. Variables expand as the shell would, from
the script's own assignments (in order) and the environment: ``$NAME``, ``${NAME}``, ``${NAME:-default}``,
``${NAME:=default}``, ``${NAME:+word}`` (positional parameters unset: ``${1:-vllm}`` is ``vllm``), and ``$(( ... ))``
over known values (:mod:`.shellmath`), never inside single quotes; bash arrays (``ARGS=( ... )``, ``"${ARGS[@]}"``)
as bash has them (:mod:`.shellarrays`). What the script computes at run time (``$(...)``, backquotes, ``$1``, an
unset variable) is a marker, an error only if an override the advisor reads uses it. A VERL
launch runs VERL's trainer (``-m verl.trainer.main_ppo``, ``.../main_ppo.py``); its ``key=value`` words (Hydra's
``+`` / ``++`` / ``~`` too) are its overrides, ``--config-path`` / ``--config-name`` its base config. Text without a
launch but with overrides (a pasted command line) is one launch.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from ....errors import InputError
from ..shell.arithmetic import closing_brace, closing_parens, integer_expression
from ..shell.arrays import array_reference, parens_open, quote_after, take_arrays

_OPEN, _CLOSE = "\ue000", "\ue001"
_MARKER = re.compile(f"{_OPEN}([0-9a-f]*){_CLOSE}")
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
#: The inside of ``${...}``: a name, positional or special parameter, then an operator and its word.
_BRACED = re.compile(rf"({_NAME}|[0-9]+|[@*#?$!-])(?:(:?)([-=+?])(.*))?", re.S)
#: Most defaults expanded inside one another (``${A:-${B:-...}}``).
MAX_NESTING = 32
#: Longest command (its lines joined), before and after expansion: a VERL launch is a few thousand characters,
#: and shlex takes time that grows with the square of a word's length.
MAX_COMMAND = 64 * 1024
#: Most characters the whole script's commands expand to: every variable copied bounds time and memory (shlex
#: splits about a million characters a second), far above any real launch script.
MAX_EXPANDED = 2 * 2**20
_ASSIGNMENT = re.compile(rf"^({_NAME})=(.*)$", re.S)
_OVERRIDE = re.compile(r"^(\+{0,2}|~)([A-Za-z_][\w.@/-]*)(=(.*))?$", re.S)
_SEPARATORS = {";", "&&", "||", "|", "&", "\n", "(", ")"}
_VERL_MODULE = re.compile(r"^verl\.trainer\.main_ppo\w*$")
_VERL_SCRIPT = re.compile(r"(^|/)verl/trainer/main_ppo\w*\.py$|(^|/)main_ppo\w*\.py$")
#: VERL's other programs (supervised fine-tuning, generation, evaluation), as a module or a script.
_VERL_OTHER = re.compile(r"^verl\.trainer\.\w+$|(^|/)verl/trainer/\w+\.py$")


class _TooDeep(Exception):
    """Defaults nested more than :data:`MAX_NESTING` deep."""


class _TooLong(Exception):
    """An expansion longer than :data:`MAX_COMMAND` characters."""


@dataclass
class Launch:
    """One VERL launch: where it starts, its overrides in order (``(prefix, key, value text or None)``) and the
    Hydra config it names."""

    line: int
    overrides: list[tuple[str, str, str | None]] = field(default_factory=list)
    config_path: str | None = None
    config_name: str | None = None


def unresolved(text: str) -> str | None:
    """The first run-time value ``text`` depends on (``$MODEL``, ``$(...)``), or None."""
    found = _MARKER.search(text)
    return bytes.fromhex(found.group(1)).decode() if found else None


def read_launches(text: str, name: str, environ: Mapping[str, str] | None = None) -> list[Launch]:
    """The VERL launches of a script or command line; a one-line error when there is none."""
    variables = dict(os.environ if environ is None else environ)
    launches: list[Launch] = []
    loose = Launch(1)
    text = text.replace("\r\n", "\n")
    starts = _line_starts(text)
    text = re.sub(r"\\\n", " ", text)
    text = text[:-1] if text.endswith("\\") and not text.endswith("\\\\") else text  # a continuation into the end
    other: tuple[int, str] | None = None  # the first VERL program run that is not its RL trainer
    for number, command in _commands(text, name, variables):
        line = starts[min(number, len(starts)) - 1]
        launch = _launch_of(command, line, name)
        if launch is not None:
            launches.append(launch)
        else:
            loose.overrides += [o for o in map(_override, command) if o is not None and "." in o[1]]
            program = next((w for w in command if _VERL_OTHER.search(w)), None)
            other = other or ((line, program) if program else None)
    if not launches and other:
        raise InputError(
            f"{name} line {other[0]}: runs {other[1]}, not VERL's RL trainer (verl.trainer.main_ppo): the advisor "
            "answers GRPO/PPO training runs"
        )
    if not launches and loose.overrides:
        launches.append(loose)
    if not launches:
        raise InputError(f"{name}: no VERL launch (python3 -m verl.trainer.main_ppo key=value ...) and no overrides")
    return launches


def _line_starts(text: str) -> list[int]:
    """Per line of ``text`` with its ``\\``-continuations joined, the number of the line it starts on."""
    starts, continued = [], False
    for number, line in enumerate(text.split("\n"), 1):
        if not continued:
            starts.append(number)
        continued = line.endswith("\\") and not line.endswith("\\\\")
    return starts


def key_lines(text: str, launch: Launch, name: str) -> dict[str, str]:
    """Where each override of ``launch`` is written: ``{key: "run.sh line 12"}`` (the first line at or after the
    launch's that writes ``key=``)."""
    lines = text.replace("\r\n", "\n").split("\n")
    found: dict[str, str] = {}
    after, before = range(launch.line, len(lines) + 1), range(launch.line - 1, 0, -1)  # an array's, before it
    for _, key, _ in launch.overrides:
        pattern = re.compile(rf"(^|[\s'\"(])[+~]{{0,2}}{re.escape(key)}=")
        number = next((n for n in itertools.chain(after, before) if pattern.search(lines[n - 1])), None)
        if number is not None:
            found[key] = f"{name} line {number}"
    return found


def _commands(text: str, name: str, variables: dict[str, str]) -> list[tuple[int, list[str]]]:
    """(line, words) of each simple command, variables expanded and assignments applied in order. A command goes
    on over the lines a quote or an array's parenthesis stays open (:mod:`.shellarrays`, linear in the text); each
    is split once."""
    out = []
    pending: list[str] = []
    size, start, quote, parens, expanded = 0, 1, None, 0, 0
    for number, line in enumerate(text.split("\n"), 1):
        if not pending:
            start = number
        pending.append(line)
        size += len(line) + 1
        if size > MAX_COMMAND:
            raise InputError(f"{name} line {start}: a command longer than {MAX_COMMAND:,} characters")
        quote = quote_after(line, quote)
        parens = parens_open(line, parens) if quote is None else parens
        if quote is not None or parens:
            continue
        words = _words("\n".join(pending), f"{name} line {start}", variables)
        pending, size, expanded = [], 0, expanded + sum(map(len, words))
        if expanded > MAX_EXPANDED:
            raise InputError(f"{name} line {start}: the script expands to more than {MAX_EXPANDED:,} characters")
        for command in _split_commands(take_arrays(words, variables)):
            if not _assigned(command, variables):
                out.append((start, command[_assignments(command) :]))
    if pending:
        what = "a quote" if quote is not None else "an array's parenthesis"
        raise InputError(f"{name} line {start}: {what} opened here is never closed")
    return out


def _words(command: str, where: str, variables: Mapping[str, str]) -> list[str]:
    """The words of one command (its lines joined), variables expanded."""
    try:
        return _split(_expand(command, variables))
    except ValueError:  # an escape with nothing after it
        raise InputError(f"{where}: a quote or escape opened here is never closed") from None
    except _TooDeep:
        raise InputError(f"{where}: variables nested more than {MAX_NESTING} deep") from None
    except _TooLong:
        raise InputError(f"{where}: the command expands to more than {MAX_COMMAND:,} characters") from None


def _assignments(command: list[str]) -> int:
    """How many ``NAME=value`` words lead ``command``."""
    return next((i for i, word in enumerate(command) if _ASSIGNMENT.match(word) is None), len(command))


def _assigned(command: list[str], variables: dict[str, str]) -> bool:
    """Apply ``command``'s assignments when it only assigns (``A=1 B=2``, ``export A=1``); whether it did."""
    count = _assignments(command)
    if count < len(command) and command[0] not in ("export", "readonly", "declare", "local"):
        return False
    for word in command[count:] if count < len(command) else command:
        m = _ASSIGNMENT.match(word)
        if m:
            variables[m.group(1)] = m.group(2)
    return True


def _split(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
    lexer.whitespace = " \t\r\n"
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def _split_commands(words: list[str]) -> list[list[str]]:
    commands: list[list[str]] = []
    current: list[str] = []
    for word in words:
        if word in _SEPARATORS or set(word) <= set(";&|()"):
            commands.append(current)
            current = []
        else:
            current.append(word)
    commands.append(current)
    return [c for c in commands if c]


def _launch_of(words: list[str], line: int, name: str) -> Launch | None:
    start = _launch_start(words)
    if start is None:
        return None
    launch = Launch(line)
    rest = iter(words[start:])
    for word in rest:
        option, equals, value = word.partition("=")
        if option in ("--config-path", "-cp", "--config-name", "-cn"):
            value = value if equals else next(rest, "")
            if option in ("--config-path", "-cp"):
                launch.config_path = value
            else:
                launch.config_name = value
            continue
        parsed = _override(word)
        if parsed is not None:
            launch.overrides.append(parsed)
    return launch


def _launch_start(words: list[str]) -> int | None:
    """The index of the first word after VERL's module or script in a command, or None if it runs no VERL."""
    for i, word in enumerate(words):
        if word == "-m" and i + 1 < len(words) and _VERL_MODULE.match(words[i + 1]):
            return i + 2
        if _VERL_SCRIPT.search(word):
            return i + 1
    return None


def _override(word: str) -> tuple[str, str, str | None] | None:
    m = _OVERRIDE.match(word)
    if m is None or (m.group(3) is None and m.group(1) != "~"):
        return None
    return m.group(1), m.group(2), m.group(4)


def _expand(text: str, variables: Mapping[str, str], depth: int = 0) -> str:
    """``text`` with its variables expanded outside single quotes; run-time values become markers. ``depth``
    counts the defaults (``${A:-${B:-...}}``) being expanded, at most :data:`MAX_NESTING`."""
    if depth > MAX_NESTING:
        raise _TooDeep
    out, i, quote, size = [], 0, None, len(text)
    while i < len(text):
        char = text[i]
        if char == "\\" and quote != "'" and i + 1 < len(text):
            out.append(text[i : i + 2])
            i += 2
            continue
        if char == "#" and quote is None and (i == 0 or text[i - 1] in " \t\n;&|("):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        if char in "'\"" and quote in (None, char):
            quote = None if quote else char
        elif char == "`" and quote != "'":
            end = text.find("`", i + 1)
            end = len(text) - 1 if end < 0 else end
            out.append(_marker("`...` (a command substitution)"))
            i = end + 1
            continue
        elif char == "$" and quote != "'":
            value, i = _array_or_variable(text, i, variables, depth, quote)
            out.append(value)
            size += len(out[-1])
            if size > MAX_COMMAND:
                raise _TooLong
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _array_or_variable(
    text: str, i: int, variables: Mapping[str, str], depth: int, quote: str | None
) -> tuple[str, int]:
    """The text an expansion at ``text[i] == '$'`` leaves in its quoting context, and the index after it: an array's
    elements stay one word each (``"${A[@]}"``), a variable's value is literal text."""
    array = array_reference(text, i, variables)
    if array is None:
        value, i = _variable(text, i, variables, depth)
        return (_escaped(value, quote) if _OPEN not in value else value), i
    words, separate, i = array
    if not separate:
        return _escaped(" ".join(words), quote), i
    return ('" "' if quote == '"' else " ").join(_escaped(w, quote) for w in words), i


def _variable(text: str, i: int, variables: Mapping[str, str], depth: int) -> tuple[str, int]:
    """The value of the expansion starting at ``text[i] == '$'`` and the index after it. ``${P}``, ``${P:-word}``,
    ``${P-word}``, ``${P:=word}``, ``${P:+word}`` as the shell has them, for names and for positional and special
    parameters (a script is read with none: ``${1:-vllm}`` is ``vllm``)."""
    rest = text[i + 1 :]
    if rest.startswith("(("):
        end = closing_parens(rest)
        if end is not None:
            return _arithmetic(rest[2:end], variables, depth), i + 1 + end + 2
    if rest.startswith("("):
        parens, j = 0, 0
        for j, char in enumerate(rest):  # noqa: B007 (j is read after the loop)
            parens += {"(": 1, ")": -1}.get(char, 0)
            if parens == 0:
                break
        return _marker("$(...) (a command substitution)"), i + 2 + j
    end = closing_brace(rest) if rest.startswith("{") else None
    braced = _BRACED.fullmatch(rest[1:end]) if end is not None else None
    if end is not None and braced:
        key, colon, operator, word = braced.groups()
        value = variables.get(key)
        unset = value is None or (colon == ":" and value == "")
        if operator in ("-", "=") and unset:
            value = _expand(word, variables, depth + 1)
        elif operator == "+":
            value = "" if unset else _expand(word, variables, depth + 1)
        return (value if value is not None else _marker(f"${{{key}}}")), i + 2 + end
    plain = re.match(rf"^({_NAME}|[0-9@*#?$!-])", rest)
    if plain:
        key = plain.group(1)
        value = variables.get(key)
        return (value if value is not None else _marker(f"${key}")), i + 1 + plain.end()
    return "$", i + 1


def _arithmetic(body: str, variables: Mapping[str, str], depth: int) -> str:
    """``$(( body ))`` as the shell computes it over integers, from the script's own values; a marker when it uses
    a value the script does not give (or an operator this reader does not evaluate)."""
    expanded = _expand(body, variables, depth + 1)
    if _OPEN in expanded:
        return _marker(f"$(({body.strip()}))")
    try:
        return str(integer_expression(expanded, variables))
    except (ValueError, ZeroDivisionError, RecursionError):
        return _marker(f"$(({body.strip()}))")


def _marker(what: str) -> str:
    """``what`` hidden in one word that no shell splitting or quoting changes."""
    return f"{_OPEN}{what.encode().hex()}{_CLOSE}"


def _escaped(value: str, quote: str | None) -> str:
    """A variable's value as literal text in the quoting context it lands in (unquoted values still split into
    words at spaces, as the shell splits them)."""
    if quote == '"':
        return re.sub(r'(["\\])', r"\\\1", value)
    return re.sub(r"""(['"\\;&|()#])""", r"\\\1", value)
