"""A VERL launch script read as text, never run: the ``key=value`` overrides of each ``python3 -m verl...`` command.

The script is split into commands with :mod:`shlex` after joining ``\\``-continued lines. Variables are expanded
as the shell would, from the script's own assignments (``NAME=value``, ``export NAME=value``, in order) and the
environment: ``$NAME``, ``${NAME}``, ``${NAME:-default}`` and ``${NAME:=default}``, never inside single quotes.
What the script would compute at run time (``$(...)``, backquotes, ``$1``, an unset variable) is left as a marker
that becomes a one-line error only if a VERL override uses it. A command is a VERL launch when it runs a module
or script of VERL's trainer (``-m verl.trainer.main_ppo``, ``.../main_ppo.py``); its words of the form
``key=value`` (with Hydra's ``+`` / ``++`` prefixes) are its overrides, ``--config-path`` / ``--config-name`` its
base config. Text without any launch but with overrides (a pasted command line) is one launch.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import InputError

_OPEN, _CLOSE = "\ue000", "\ue001"
_MARKER = re.compile(f"{_OPEN}([0-9a-f]*){_CLOSE}")
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_ASSIGNMENT = re.compile(rf"^({_NAME})=(.*)$", re.S)
_OVERRIDE = re.compile(r"^(\+{0,2}|~)([A-Za-z_][\w.@/-]*)(=(.*))?$", re.S)
_SEPARATORS = {";", "&&", "||", "|", "&", "\n", "(", ")"}
_VERL_MODULE = re.compile(r"^verl\.trainer\.main_\w+$")
_VERL_SCRIPT = re.compile(r"(^|/)verl/trainer/main_\w+\.py$|(^|/)main_ppo\.py$")


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
    text = re.sub(r"\\\r?\n", " ", text.replace("\r\n", "\n"))
    for number, command in _commands(text, name, variables):
        launch = _launch_of(command, number, name)
        if launch is not None:
            launches.append(launch)
        else:
            loose.overrides += [o for o in map(_override, command) if o is not None and "." in o[1]]
    if not launches and loose.overrides:
        launches.append(loose)
    if not launches:
        raise InputError(f"{name}: no VERL launch (python3 -m verl.trainer.main_ppo key=value ...) and no overrides")
    return launches


def _commands(text: str, name: str, variables: dict[str, str]) -> list[tuple[int, list[str]]]:
    """(line, words) of each simple command, variables expanded and assignments applied in order."""
    out = []
    lines = text.split("\n")
    number, pending, start = 0, "", 1
    for number, line in enumerate(lines, 1):
        if not pending:
            start = number
        pending = f"{pending}\n{line}" if pending else line
        try:
            words = _split(_expand(pending, variables))
        except ValueError:  # an open quote: the command goes on on the next line
            continue
        pending = ""
        for command in _split_commands(words):
            assignments = [_ASSIGNMENT.match(w) for w in command]
            count = next((i for i, m in enumerate(assignments) if m is None), len(command))
            if count == len(command) or (command and command[0] in ("export", "readonly", "declare", "local")):
                for word in command[count:] if count < len(command) else command:
                    m = _ASSIGNMENT.match(word)
                    if m:
                        variables[m.group(1)] = m.group(2)
                continue
            out.append((start, command[count:]))
    if pending:
        raise InputError(f"{name} line {start}: a quote opened here is never closed")
    return out


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


def _expand(text: str, variables: Mapping[str, str]) -> str:
    """``text`` with its variables expanded outside single quotes; run-time values become markers."""
    out, i, quote = [], 0, None
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
            value, i = _variable(text, i, variables)
            out.append(_escaped(value, quote) if _OPEN not in value else value)
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _variable(text: str, i: int, variables: Mapping[str, str]) -> tuple[str, int]:
    """The value of the expansion starting at ``text[i] == '$'`` and the index after it."""
    rest = text[i + 1 :]
    if rest.startswith("("):
        depth, j = 0, 0
        for j, char in enumerate(rest):  # noqa: B007 (j is read after the loop)
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0:
                break
        return _marker("$(...) (a command substitution)"), i + 2 + j
    braced = re.match(rf"^\{{({_NAME})(:?[-=])?([^}}]*)\}}", rest)
    if braced:
        value = variables.get(braced.group(1))
        operator, default = braced.group(2), braced.group(3)
        if operator and (value is None or (operator.startswith(":") and value == "")):
            value = _expand(default, variables)
        return (value if value is not None else _marker(f"${{{braced.group(1)}}}")), i + 1 + braced.end()
    plain = re.match(rf"^({_NAME}|[0-9@*#?$!-])", rest)
    if plain:
        key = plain.group(1)
        value = variables.get(key)
        return (value if value is not None else _marker(f"${key}")), i + 1 + plain.end()
    return "$", i + 1


def _marker(what: str) -> str:
    """``what`` hidden in one word that no shell splitting or quoting changes."""
    return f"{_OPEN}{what.encode().hex()}{_CLOSE}"


def _escaped(value: str, quote: str | None) -> str:
    """A variable's value as literal text in the quoting context it lands in (unquoted values still split into
    words at spaces, as the shell splits them)."""
    if quote == '"':
        return re.sub(r'(["\\])', r"\\\1", value)
    return re.sub(r"""(['"\\;&|()#])""", r"\\\1", value)
