"""The tests a script decides with, read statically: ``[ ... ]`` / ``test``, ``[[ ... ]]`` and ``(( ... ))`` over
expanded words. A test is True, False, or None when it depends on what only the running script knows (a file, a
command's output, a value the script does not give)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from .arithmetic import TooManySteps, integer_expression
from .patterns import glob_match
from .state import NO_ARGUMENT, unresolved

_NUMERIC = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge"}
Truth = bool | None


def _value(word: str) -> str | None:
    """A word's text, "" for an argument not given (bash expands it to nothing), None for another run-time value."""
    found = unresolved(word)
    if found is None:
        return word
    return "" if found[1] == NO_ARGUMENT and word.startswith("\ue000") and word.endswith("\ue001") else None


def _number(word: str, arithmetic: Mapping[str, str] | None) -> int | None:
    text = _value(word)
    if text is None:
        return None
    try:
        return integer_expression(text, arithmetic or {}) if arithmetic is not None else int(text.strip())
    except (ValueError, ZeroDivisionError, TooManySteps):
        return None


def bracket(words: Sequence[str]) -> Truth:
    """``[ words ]`` / ``test words`` (POSIX rules by the number of words; ``-a`` / ``-o``, ``!``)."""
    if "-o" in words:
        i = list(words).index("-o")
        return _or(bracket(words[:i]), lambda: bracket(words[i + 1 :]))
    if "-a" in words:
        i = list(words).index("-a")
        return _and(bracket(words[:i]), lambda: bracket(words[i + 1 :]))
    if words and words[0] == "!":
        return _not(bracket(words[1:]))
    return _primary(list(words), None)


def double_bracket(words: Sequence[str], arithmetic: Mapping[str, str]) -> Truth:
    """``[[ words ]]``: ``&&`` / ``||`` / ``!`` / parentheses, ``==`` / ``!=`` against a glob, ``=~``, numeric
    comparisons of arithmetic expressions."""
    return _Double(list(words), arithmetic).expression()


class _Double:
    def __init__(self, words: list[str], arithmetic: Mapping[str, str]) -> None:
        self.words, self.i, self.arithmetic = words, 0, arithmetic

    def expression(self) -> Truth:
        left = self.conjunction()
        while self.i < len(self.words) and self.words[self.i] == "||":
            self.i += 1
            right = self.conjunction()
            left = _or(left, lambda r=right: r)  # type: ignore[misc]
        return left

    def conjunction(self) -> Truth:
        left = self.unary()
        while self.i < len(self.words) and self.words[self.i] == "&&":
            self.i += 1
            right = self.unary()
            left = _and(left, lambda r=right: r)  # type: ignore[misc]
        return left

    def unary(self) -> Truth:
        if self.i < len(self.words) and self.words[self.i] == "!":
            self.i += 1
            return _not(self.unary())
        if self.i < len(self.words) and self.words[self.i] == "(":
            self.i += 1
            found = self.expression()
            self.i += 1 if self.i < len(self.words) and self.words[self.i] == ")" else 0
            return found
        start = self.i
        while self.i < len(self.words) and self.words[self.i] not in ("&&", "||", ")"):
            self.i += 1
        return _primary(self.words[start : self.i], self.arithmetic)


def _primary(words: list[str], arithmetic: Mapping[str, str] | None) -> Truth:
    if not words:
        return False
    if len(words) == 1:
        text = _value(words[0])
        return None if text is None else text != ""
    if len(words) == 2:
        operator, text = words[0], _value(words[1])
        if operator in ("-z", "-n") and text is not None:
            return (text == "") == (operator == "-z")
        return None  # a file test, -v, or a value known when the script runs
    if len(words) == 3:
        return _binary(words[0], words[1], words[2], arithmetic)
    return None


def _binary(left: str, operator: str, right: str, arithmetic: Mapping[str, str] | None) -> Truth:
    """``left operator right``: numbers (``-eq`` ...), strings (``=`` / ``==`` / ``!=`` against a glob inside
    ``[[ ]]``, ``<`` / ``>``) or a regular expression (``=~``)."""
    if operator in _NUMERIC:
        a, b = _number(left, arithmetic), _number(right, arithmetic)
        if a is None or b is None:
            return None
        return {"-eq": a == b, "-ne": a != b, "-lt": a < b, "-le": a <= b, "-gt": a > b, "-ge": a >= b}[operator]
    a_text, b_text = _value(left), _value(right)
    if a_text is None or b_text is None:
        return None
    if operator in ("=", "==", "!="):
        same = glob_match(b_text, a_text) if arithmetic is not None else a_text == b_text
        return same if operator != "!=" else not same
    if operator == "=~" and len(b_text) <= 200:
        try:
            return re.search(b_text, a_text[:4096]) is not None
        except re.error:
            return None
    if operator in ("<", ">"):
        return a_text < b_text if operator == "<" else a_text > b_text
    return None


def _not(value: Truth) -> Truth:
    return None if value is None else not value


def _and(left: Truth, right: Callable[[], Truth]) -> Truth:
    if left is False:
        return False
    other = right()
    if other is False:
        return False
    return None if left is None or other is None else True


def _or(left: Truth, right: Callable[[], Truth]) -> Truth:
    if left is True:
        return True
    other = right()
    if other is True:
        return True
    return None if left is None or other is None else False
