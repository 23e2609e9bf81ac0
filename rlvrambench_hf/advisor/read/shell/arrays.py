"""Bash's indexed arrays in a launch script read as text, as VERL's newer examples write their overrides:
``ACTOR=( key=value ... )`` over several lines (comments inside), ``ACTOR+=( ... )``, ``declare -a``, and
``"${ACTOR[@]}"`` (one word per element), ``${ACTOR[*]}``, ``${ACTOR[0]}``, ``${#ACTOR[@]}`` in a command.

An array is kept among the script's variables under ``NAME[@]`` (its elements as JSON, a name no shell variable can
have), and ``NAME`` holds its first element, as bash's ``$NAME`` does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
#: Where a line opens an array assignment (the parenthesis is the match's last character).
ARRAY_START = re.compile(rf"(?:^|[\s;&|])(?:{_NAME})\+?=\(")
_ASSIGNS = re.compile(rf"({_NAME})(\+?)=")
_REFERENCE = re.compile(rf"\$\{{(#?)({_NAME})\[([@*]|[0-9]{{1,9}})\]\}}")


def quote_after(line: str, quote: str | None) -> str | None:
    """The quote still open at the end of ``line`` (None: none), given the one open at its start; outside quotes a
    backslash escapes the next character and a ``#`` that starts a word starts a comment."""
    return scan(line, quote, 0)[0]


def scan(line: str, quote: str | None, depth: int, start: int = 0) -> tuple[str | None, int]:
    """The quote open and the parentheses left open at the end of ``line`` read from ``start`` (``depth``: those
    open before it); parentheses inside quotes and comments do not count."""
    i, n = start, len(line)
    while i < n:
        char = line[i]
        if quote == "'":
            end = line.find("'", i)
            if end < 0:
                return quote, depth
            quote, i = None, end + 1
            continue
        if char == "\\":
            i += 2
            continue
        if quote == '"':
            quote = None if char == '"' else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1] in " \t;&|("):
            return None, depth
        elif char in "()" and depth:
            depth += 1 if char == "(" else -1
        i += 1
    return quote, depth


def parens_open(line: str, depth: int) -> int:
    """The array parentheses still open after ``line`` (``depth``: those open at its start)."""
    if depth:
        return scan(line, None, depth)[1]
    found = ARRAY_START.search(line)
    return scan(line, None, 1, found.end())[1] if found else 0


def take_arrays(words: list[str], variables: dict[str, str]) -> list[str]:
    """``words`` without its array assignments (``NAME=`` ``(`` ... ``)``), each applied to ``variables``."""
    out: list[str] = []
    i = 0
    while i < len(words):
        m = _ASSIGNS.fullmatch(words[i])
        if m is None or i + 1 >= len(words) or words[i + 1] != "(":
            out.append(words[i])
            i += 1
            continue
        end = next((j for j in range(i + 2, len(words)) if words[j].startswith(")")), len(words))
        name, elements = m.group(1), words[i + 2 : end]
        if m.group(2):
            elements = array_elements(variables, name) + elements
        variables[f"{name}[@]"] = json.dumps(elements)
        variables[name] = elements[0] if elements else ""
        if end < len(words) and words[end][1:]:
            out.append(words[end][1:])  # ");" ends the command too
        i = end + 1
    return out


def array_elements(variables: Mapping[str, str], name: str) -> list[str]:
    """The elements of array ``name`` (a plain variable is an array of one; an unset one has none)."""
    stored = variables.get(f"{name}[@]")
    if stored is not None:
        return list(json.loads(stored))
    value = variables.get(name)
    return [] if value is None else [value]


def array_reference(text: str, i: int, variables: Mapping[str, str]) -> tuple[list[str], bool, int] | None:
    """At ``text[i] == '$'``, an array reference: its words, whether they stay separate words (``[@]``), and the
    index after it; None when ``text[i:]`` is no array reference."""
    m = _REFERENCE.match(text, i)
    if m is None:
        return None
    count, name, index = m.groups()
    elements = array_elements(variables, name)
    if index in "@*":
        return ([str(len(elements))] if count else elements), index == "@" and not count, m.end()
    element = elements[int(index)] if int(index) < len(elements) else ""
    return [str(len(element)) if count else element], False, m.end()
