"""Shell patterns for :mod:`.expand` and :mod:`.conditions`: globs (``case`` arms, ``[[ x == pattern ]]``) and the
pattern, case and substring operators of ``${NAME...}`` (``#`` ``##`` ``%`` ``%%`` ``/`` ``//`` ``^^`` ``,,``
``:offset:length``), bounded: a value longer than :data:`MAX_PATTERN_VALUE` or a pattern of many stars is not
matched (the operator's result is then not known)."""

from __future__ import annotations

import re

from .state import _TAINT_CLOSE, _TAINT_OPEN, clean

#: Longest value a pattern operator (``${A#*=}``) matches against.
MAX_PATTERN_VALUE = 4096


def operated(operator: str, word: str, value: str, unknown: str) -> str:
    """``value`` through a pattern, case or substring operator (``unknown``: what an operation this reader does not
    compute gives)."""
    plain, names = clean(value)
    taint = "".join(f"{_TAINT_OPEN}{n.encode().hex()}{_TAINT_CLOSE}" for n in names)
    if operator in ("^^", "^", ",,", ","):
        changed = plain.upper() if operator.startswith("^") else plain.lower()
        return taint + (changed if len(operator) == 2 else changed[:1] + plain[1:])
    if operator == ":":
        m = re.fullmatch(r"\s*(-?[0-9]{1,6})\s*(?::\s*([0-9]{1,6})\s*)?", word)
        if m is None:
            return unknown
        start = int(m.group(1))
        start = max(len(plain) + start, 0) if start < 0 else start
        return taint + (plain[start : start + int(m.group(2))] if m.group(2) else plain[start:])
    if len(plain) > MAX_PATTERN_VALUE or word.count("*") > 8:
        return unknown
    if operator in ("/", "//"):
        pattern, _, replacement = word.partition("/")
        regex = _glob(pattern, greedy=True)
        return taint + re.sub(regex, lambda _: replacement, plain, count=0 if operator == "//" else 1)
    regex = _glob(word, greedy=len(operator) == 2)
    if operator.startswith("#"):
        found = re.match(regex, plain)
        return taint + (plain[found.end() :] if found else plain)
    ends = [k for k in range(len(plain), -1, -1) if re.fullmatch(regex, plain[k:])]
    if not ends:
        return taint + plain
    return taint + plain[: (min(ends) if len(operator) == 2 else max(ends))]


def _glob(pattern: str, greedy: bool) -> str:
    """A shell glob as a regular expression (``*`` lazy unless ``greedy``)."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            out.append(".*" if greedy else ".*?")
        elif c == "?":
            out.append(".")
        elif c == "[":
            end = pattern.find("]", i + 2)
            if end > 0:
                inner = pattern[i + 1 : end].replace("\\", "\\\\")
                out.append("[" + ("^" + inner[1:] if inner.startswith("!") else inner) + "]")
                i = end
            else:
                out.append(re.escape(c))
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "(?s:" + "".join(out) + ")"


def glob_match(pattern: str, text: str) -> bool:
    """Whether ``text`` matches the shell glob ``pattern`` (a ``case`` arm, ``[[ x == pattern ]]``)."""
    return re.fullmatch(_glob(pattern, greedy=True), text) is not None
