"""A shell script's text as tokens, never run: words (their raw text, quotes and expansions kept, for
:mod:`.expand`), operators, redirections and here-document bodies, each with the line it starts on.

One pass over the text: every construct that opens (a quote, ``$(``, ``${``, ``$((``, a backquote, an array's
parenthesis) is scanned to its end once, so that the time is linear in the text; one that never closes is the error
bash reports ("unexpected EOF"), on the line it opens. Constructs nest at most :data:`MAX_NESTING` deep and a script
has at most :data:`MAX_TOKENS` tokens.
"""

from __future__ import annotations

import bisect
import re
from typing import NamedTuple

from ....errors import InputError

#: Most constructs nested inside one another (``$( "${A:-$(...)}" )``).
MAX_NESTING = 32
#: Most tokens of one script (a VERL launch script has a few hundred).
MAX_TOKENS = 100_000
#: Control operators, longest first.
OPERATORS = (";;&", ";;", ";&", "&&", "||", "|&", ";", "&", "|", "(", ")")
_REDIRECT = re.compile(r"[0-9]*(?:&>>|&>|>>|>\||>&|<<<|<<-|<<|<&|<>|>|<)")
_OPERATORS_BY_CHAR = {c: tuple(o for o in OPERATORS if o[0] == c) for c in ";&|()"}
_PLAIN = re.compile(r"[A-Za-z0-9_./=:@+,%^~!?*\[\]{}-]+")
_ARRAY_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=$")
_BREAKS = frozenset(" \t\n;&|()<>")
#: Inside ``[[ ... ]]`` these are words of the test, not operators.
_TEST_WORDS = ("&&", "||", "(", ")", "<", ">")


class Token(NamedTuple):
    """``kind``: ``word`` (raw text), ``op`` (a control operator), ``newline``, ``redirect`` (the operator; its
    target is the next word) or ``heredoc`` (the body; ``quoted``: its delimiter was quoted, so bash expands
    nothing in it)."""

    kind: str
    text: str
    line: int
    quoted: bool = False


class _Unclosed(Exception):
    def __init__(self, what: str, at: int) -> None:
        super().__init__(what)
        self.what, self.at = what, at


class _TooDeep(Exception):
    def __init__(self, at: int) -> None:
        super().__init__(at)
        self.at = at


def tokenize(text: str, name: str) -> list[Token]:
    """The tokens of ``text`` (a script or a command line; CRLF line ends read as LF); a one-line error for a
    construct that never closes, one nested too deeply, or too many tokens."""
    scanner = _Scanner(text.replace("\r\n", "\n"), name)
    try:
        return scanner.run()
    except _Unclosed as exc:
        raise InputError(f"{name} line {scanner.line(exc.at)}: {exc.what} opened here is never closed") from None
    except _TooDeep as exc:
        where = f"{name} line {scanner.line(exc.at)}"
        raise InputError(f"{where}: quotes and expansions nested more than {MAX_NESTING} deep") from None


class _Scanner:
    def __init__(self, text: str, name: str) -> None:
        self.text, self.name, self.n = text, name, len(text)
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.tokens: list[Token] = []
        self.at, self.at_line = 0, 1  # the last position a line was counted to, and its line
        self.pending: list[tuple[str, bool, bool, int]] = []  # here-docs: delimiter, quoted, strip tabs, line
        self.in_test = False

    def line(self, at: int) -> int:
        return bisect.bisect_right(self.starts, at)

    def emit(self, kind: str, text: str, at: int, quoted: bool = False) -> None:
        if len(self.tokens) >= MAX_TOKENS:
            raise InputError(f"{self.name}: more than {MAX_TOKENS:,} words and operators (longer than a launch script)")
        if at >= self.at:  # tokens come in order: count the lines since the last one
            self.at_line += self.text.count("\n", self.at, at)
            self.at = at
            line = self.at_line
        else:
            line = self.line(at)
        self.tokens.append(Token(kind, text, line, quoted))

    def run(self) -> list[Token]:
        text, i = self.text, 0
        while i < self.n:
            c = text[i]
            if c in " \t\r":
                i += 1
            elif c == "\\" and (text.startswith("\n", i + 1) or i + 1 == self.n):  # continued (into the end)
                i += 2
            elif c == "#":
                end = text.find("\n", i)
                i = self.n if end < 0 else end
            elif c == "\n":
                if self.pending or not self.tokens or self.tokens[-1].kind != "newline":  # blank lines: one token
                    self.emit("newline", "\n", i)
                i = self.heredocs(i + 1)
            else:
                i = self.token(i)
        if self.pending:  # bash reads a here-document up to the end of the file
            self.heredocs(self.n)
        return self.tokens

    def token(self, i: int) -> int:
        text = self.text
        plain = self.plain(i)
        if plain:
            return plain
        if self.in_test:
            test = next((w for w in _TEST_WORDS if text.startswith(w, i)), None)
            if test:
                self.emit("word", test, i)
                return i + len(test)
        if text.startswith(("<(", ">("), i):  # a process substitution: a word computed when the script runs
            end = _parens_end(text, i + 1, 0)
            self.emit("word", text[i:end], i)
            return end
        redirect = _REDIRECT.match(text, i) if text[i] in "<>&0123456789" else None
        if redirect:
            return self.redirect(redirect.group(0), i)
        if text.startswith("((", i) and self.command_position():
            end = _parens_end(text, i, 0)
            self.emit("word", text[i:end], i)
            return end
        op = next((o for o in _OPERATORS_BY_CHAR.get(text[i], ()) if text.startswith(o, i)), None)
        if op:
            self.emit("op", op, i)
            return i + len(op)
        end, word = self.word(i)
        if _ARRAY_WORD.match(word) and text.startswith("(", end):
            return self.array(word, i, end + 1)
        self.emit("word", word, i)
        self.in_test = (word == "[[") or (self.in_test and word != "]]")
        return end

    def plain(self, i: int) -> int:
        """A word of plain characters at ``i`` (no quote, expansion, operator or redirection in it) emitted, and the
        index after it; 0 when there is none."""
        text = self.text
        found = _PLAIN.match(text, i)
        if not found or self.in_test or text.startswith("(", found.end()) or text[i] in "0123456789":
            return 0
        end = found.end()
        if end < self.n and text[end] not in " \t\n;&|)":
            return 0
        self.emit("word", text[i:end], i)
        self.in_test = text[i:end] == "[["
        return end

    def command_position(self) -> bool:
        last = self.tokens[-1] if self.tokens else None
        return last is None or last.kind in ("op", "newline") or last.text in ("do", "then", "else", "for", "!")

    def redirect(self, op: str, i: int) -> int:
        self.emit("redirect", op, i)
        j = i + len(op)
        if op.endswith(("<<", "<<-")) and not op.endswith("<<<"):
            while j < self.n and self.text[j] in " \t":
                j += 1
            end, word = self.word(j)
            quoted = any(q in word for q in "'\"\\")
            delimiter = re.sub(r"""['"\\]""", "", word)
            self.pending.append((delimiter, quoted, op.endswith("-"), self.line(i)))
            return end
        return j

    def heredocs(self, i: int) -> int:
        """The bodies of the here-documents opened on the line that ended before ``i``; the index after them."""
        while self.pending:
            delimiter, quoted, strip, line = self.pending.pop(0)
            body: list[str] = []
            while i < self.n:
                end = self.text.find("\n", i)
                end = self.n if end < 0 else end
                row = self.text[i:end]
                i = end + 1
                if (row.lstrip("\t") if strip else row) == delimiter:
                    break
                body.append(row)
            self.tokens.append(Token("heredoc", "\n".join(body), line, quoted))
        return min(i, self.n)

    def word(self, i: int) -> tuple[int, str]:
        """The end of the word starting at ``i`` and its raw text (line continuations removed)."""
        text, pieces, start = self.text, [], i
        while i < self.n and text[i] not in _BREAKS:
            c = text[i]
            if c == "\\":
                if text.startswith("\n", i + 1) or i + 1 == self.n:  # a continuation (into the end of the file)
                    pieces.append(text[start:i])
                    i += 2
                    start = i
                    continue
                i += 2
            elif c in "'\"`$":
                i = _skip(text, i, 0)
            else:
                i += 1
        if i == start and not pieces and i < self.n and text[i] in "<>":  # a lone < or > that is no redirection
            i += 1
        pieces.append(text[start : min(i, self.n)])
        return min(i, self.n), "".join(pieces)

    def array(self, word: str, at: int, i: int) -> int:
        """``NAME=( elements )`` over any number of lines (comments inside dropped) as one word."""
        text, elements = self.text, []
        while True:
            while i < self.n and (text[i] in " \t\n" or text.startswith("\\\n", i)):
                i += 2 if text[i] == "\\" else 1
            if i >= self.n:
                raise _Unclosed("an array's parenthesis", at)
            if text[i] == ")":
                break
            if text[i] == "#":
                end = text.find("\n", i)
                i = self.n if end < 0 else end
                continue
            end, element = self.word(i)
            if end == i:  # an operator inside an array: taken as a word of its own
                end, element = i + 1, text[i]
            elements.append(element)
            i = end
        self.emit("word", f"{word}({' '.join(elements)})", at)
        return i + 1


def _skip(text: str, i: int, depth: int, quoted: bool = False) -> int:
    """The index after the quote or expansion that starts at ``text[i]`` (one of ``' " ` $``; ``quoted``: inside
    double quotes, where a single quote in ``${...}`` is a character)."""
    if depth > MAX_NESTING:
        raise _TooDeep(i)
    c = text[i]
    if c == "'":
        end = text.find("'", i + 1)
        if end < 0:
            raise _Unclosed("a quote", i)
        return end + 1
    if c in '`"':
        return _until(text, i + 1, c, "a backquote" if c == "`" else "a quote", i, depth)
    if text.startswith("$'", i):
        return _until(text, i + 2, "'", "a quote", i, depth)
    if text.startswith("$(", i):
        return _parens_end(text, i + 1, depth + 1)
    if text.startswith("${", i):
        return _until(text, i + 2, "}", "${", i, depth, inner='"`$' if quoted else "'\"`$")
    return i + 1


def _until(text: str, j: int, end: str, what: str, opened: int, depth: int, inner: str = "") -> int:
    """The index after the ``end`` that closes a construct opened at ``opened`` (its body from ``j``): escapes
    skipped, and the expansions inside a double quote, or the ``inner`` constructs of ``${...}``."""
    n = len(text)
    while j < n and text[j] != end:
        if text[j] == "\\":
            j += 2
        elif end == '"' and (text[j] == "`" or text.startswith(("$(", "${"), j)):
            j = _skip(text, j, depth + 1, quoted=True)
        elif inner and text[j] in inner:
            j = _skip(text, j, depth + 1)
        else:
            j += 1
    if j >= n:
        raise _Unclosed(what, opened)
    return j + 1


def _parens_end(text: str, i: int, depth: int) -> int:
    """The index after the parenthesis that closes ``text[i] == '('`` (``$(``, ``$((``, ``((``), nested ones,
    quotes and expansions inside skipped."""
    if depth > MAX_NESTING:
        raise _TooDeep(i)
    j, level, n = i, 0, len(text)
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c in "'\"`" or (c == "$" and j + 1 < n and text[j + 1] in "({'"):
            j = _skip(text, j, depth + 1)
            continue
        if c == "(":
            level += 1
        elif c == ")":
            level -= 1
            if level == 0:
                return j + 1
        j += 1
    raise _Unclosed("$(" if text.startswith("$(", i - 1) else "(", i - 1 if text.startswith("$", i - 1) else i)
