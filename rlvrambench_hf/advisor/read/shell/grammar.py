"""The structure of a shell script, from its tokens (:mod:`.tokens`): simple commands, pipelines and ``&&`` / ``||``
lists, and the compound commands scripts wrap their launches and argument parsing in (``while`` / ``until``,
``for``, ``if``, ``case``, ``{ ...; }``, ``( ... )``, ``((...))``, functions). Words stay raw text: they are expanded
when :mod:`.run` reaches them, with the values variables have then.

A construct bash would refuse to parse (``do`` without ``done``, ``case`` without ``esac``, a stray ``)``) is the
one-line error of its line; compound commands nest at most :data:`MAX_DEPTH` deep.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ....errors import InputError, quote
from .tokens import Token

#: Most compound commands nested inside one another.
MAX_DEPTH = 64
_CASE_ENDS = frozenset({";;", ";&", ";;&"})
_COMPOUND = {"while": "loop", "until": "loop", "for": "for_loop", "if": "if_then", "case": "case", "{": "group",
             "function": "function"}  # fmt: skip


@dataclass
class Simple:
    """A simple command: its words (raw), its line, and the bodies of the here-documents it reads."""

    words: list[str]
    line: int
    heredocs: list[Token] = field(default_factory=list)


@dataclass
class Arith:
    """``(( expression ))``."""

    expression: str
    line: int


@dataclass
class Loop:
    """``while`` (``until``: ``negated``) ``condition; do body; done``."""

    condition: Block
    body: Block
    line: int
    negated: bool = False


@dataclass
class For:
    """``for name in words; do body; done`` (``words`` None: the script's arguments) or ``for ((a; b; c))``."""

    name: str
    words: list[str] | None
    body: Block
    line: int
    arith: str | None = None


@dataclass
class If:
    branches: list[tuple[Block, Block]]
    otherwise: Block | None
    line: int


@dataclass
class Case:
    word: str
    arms: list[tuple[list[str], Block]]
    line: int


@dataclass
class Group:
    """``{ ...; }`` or a subshell ``( ... )``."""

    body: Block
    line: int


@dataclass
class Function:
    name: str
    body: Command
    line: int


@dataclass
class Pipeline:
    commands: list[Command]
    negated: bool
    line: int


@dataclass
class AndOr:
    """A pipeline, then pipelines each after ``&&`` or ``||``."""

    first: Pipeline
    rest: list[tuple[str, Pipeline]]


Command = Simple | Arith | Loop | For | If | Case | Group | Function
Block = list[AndOr]


def parse(tokens: list[Token], name: str) -> Block:
    """The script's commands, in order."""
    parser = _Parser(tokens, name)
    block = parser.block(frozenset(), frozenset())
    token = parser.peek()
    if token is not None:
        raise InputError(f"{name} line {token.line}: unexpected {quote(token.text)} (bash refuses to run this script)")
    return block


class _Parser:
    def __init__(self, tokens: list[Token], name: str) -> None:
        self.tokens, self.name, self.i, self.depth = tokens, name, 0, 0
        self.awaiting: list[Simple] = []  # commands whose here-documents come after the line ends

    def peek(self) -> Token | None:
        while self.i < len(self.tokens) and self.tokens[self.i].kind == "heredoc":
            token = self.tokens[self.i]
            if self.awaiting:
                self.awaiting.pop(0).heredocs.append(token)
            self.i += 1
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> Token:
        token = self.peek()
        assert token is not None
        self.i += 1
        return token

    def is_word(self, *texts: str) -> bool:
        token = self.peek()
        return token is not None and token.kind == "word" and token.text in texts

    def is_op(self, *texts: str) -> bool:
        token = self.peek()
        return token is not None and token.kind == "op" and token.text in texts

    def skip_newlines(self) -> None:
        while (token := self.peek()) is not None and token.kind == "newline":
            self.i += 1

    def skip_separators(self) -> None:
        while (token := self.peek()) is not None and (token.kind == "newline" or token.text in (";", "&")):
            if token.kind == "op" and token.text not in (";", "&"):
                break
            self.i += 1

    def expect(self, word: str, opened: str, line: int) -> None:
        if not self.is_word(word):
            raise InputError(
                f"{self.name} line {line}: {opened} here has no {quote(word)} (bash refuses to run this script)"
            )
        self.i += 1

    def block(self, words: frozenset[str], ops: frozenset[str]) -> Block:
        items: Block = []
        while True:
            self.skip_separators()
            token = self.peek()
            if token is None or (token.kind == "word" and token.text in words):
                return items
            if token.kind == "op" and token.text in ops:
                return items
            if token.kind == "op" and token.text in (*_CASE_ENDS, ")", "|", "||", "&&", "|&"):
                raise InputError(
                    f"{self.name} line {token.line}: unexpected {quote(token.text)} (bash refuses to run this script)"
                )
            items.append(self.and_or())

    def and_or(self) -> AndOr:
        first, rest = self.pipeline(), []
        while self.is_op("&&", "||"):
            op = self.take().text
            self.skip_newlines()
            rest.append((op, self.pipeline()))
        return AndOr(first, rest)

    def pipeline(self) -> Pipeline:
        token = self.peek()
        assert token is not None
        negated = self.is_word("!")
        if negated:
            self.i += 1
        commands = [self.command()]
        while self.is_op("|", "|&"):
            self.i += 1
            self.skip_newlines()
            commands.append(self.command())
        return Pipeline(commands, negated, token.line)

    def command(self) -> Command:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise InputError(f"{self.name}: compound commands nested more than {MAX_DEPTH} deep")
        try:
            found = self._command()
            self.redirections(None)
            return found
        finally:
            self.depth -= 1

    def _command(self) -> Command:
        token = self.peek()
        if token is None:
            raise InputError(f"{self.name}: the script ends where a command is expected")
        line = token.line
        if token.kind == "op" and token.text == "(":
            self.i += 1
            body = self.block(frozenset(), frozenset({")"}))
            if not self.is_op(")"):
                raise InputError(f"{self.name} line {line}: a '(' here is never closed")
            self.i += 1
            return Group(body, line)
        if token.kind != "word":
            raise InputError(
                f"{self.name} line {line}: unexpected {quote(token.text)} (bash refuses to run this script)"
            )
        word = token.text
        method = _COMPOUND.get(word)
        if method is not None:
            self.i += 1
            return getattr(self, method)(word, line)  # type: ignore[no-any-return]
        if word.startswith("((") and word.endswith("))"):
            self.i += 1
            return Arith(word[2:-2], line)
        if (
            self.i + 2 < len(self.tokens)
            and self.tokens[self.i + 1].text == "("
            and self.tokens[self.i + 2].text == ")"
            and self.tokens[self.i + 1].kind == "op"
        ):
            self.i += 3
            self.skip_newlines()
            return Function(word, self.command(), line)
        return self.simple(line)

    def simple(self, line: int) -> Simple:
        command = Simple([], line)
        while (token := self.peek()) is not None and token.kind in ("word", "redirect"):
            if token.kind == "word":
                command.words.append(token.text)
                self.i += 1
            else:
                self.redirections(command)
        return command

    def redirections(self, command: Simple | None) -> None:
        """Redirections after a command (their targets dropped); a ``<<`` makes the command wait for its body."""
        while (token := self.peek()) is not None and token.kind == "redirect":
            self.i += 1
            if token.text.endswith(("<<", "<<-")) and not token.text.endswith("<<<"):  # delimiter read with it
                self.awaiting.append(command or Simple([], token.line))
            elif (nxt := self.peek()) is not None and nxt.kind == "word":
                self.i += 1

    def loop(self, word: str, line: int) -> Loop:
        condition = self.block(frozenset({"do"}), frozenset())
        self.expect("do", f"{quote(word)}", line)
        body = self.block(frozenset({"done"}), frozenset())
        self.expect("done", f"{quote(word)}", line)
        return Loop(condition, body, line, word == "until")

    def for_loop(self, word: str, line: int) -> For:
        token = self.peek()
        if token is None or token.kind != "word":
            raise InputError(f"{self.name} line {line}: 'for' without a name (bash refuses to run this script)")
        self.i += 1
        arith = token.text[2:-2] if token.text.startswith("((") and token.text.endswith("))") else None
        words: list[str] | None = None
        if arith is None:
            self.skip_newlines()
            if self.is_word("in"):
                self.i += 1
                words = []
                while (nxt := self.peek()) is not None and nxt.kind == "word":
                    words.append(nxt.text)
                    self.i += 1
        self.skip_separators()
        if self.is_word("{"):
            self.i += 1
            body = self.block(frozenset({"}"}), frozenset())
            self.expect("}", "'for'", line)
        else:
            self.expect("do", "'for'", line)
            body = self.block(frozenset({"done"}), frozenset())
            self.expect("done", "'for'", line)
        return For("" if arith is not None else token.text, words, body, line, arith)

    def if_then(self, word: str, line: int) -> If:
        branches = []
        while True:
            condition = self.block(frozenset({"then"}), frozenset())
            self.expect("then", "'if'", line)
            branches.append((condition, self.block(frozenset({"elif", "else", "fi"}), frozenset())))
            if not self.is_word("elif"):
                break
            self.i += 1
        otherwise = None
        if self.is_word("else"):
            self.i += 1
            otherwise = self.block(frozenset({"fi"}), frozenset())
        self.expect("fi", "'if'", line)
        return If(branches, otherwise, line)

    def case(self, word: str, line: int) -> Case:
        token = self.peek()
        if token is None or token.kind != "word":
            raise InputError(f"{self.name} line {line}: 'case' without a word (bash refuses to run this script)")
        self.i += 1
        self.skip_newlines()
        self.expect("in", "'case'", line)
        arms = []
        while True:
            self.skip_newlines()
            if self.is_word("esac") or self.peek() is None:
                break
            if self.is_op("("):
                self.i += 1
            patterns = []
            while (nxt := self.peek()) is not None and nxt.kind == "word":
                patterns.append(nxt.text)
                self.i += 1
                if not self.is_op("|"):
                    break
                self.i += 1
            if not self.is_op(")"):
                raise InputError(f"{self.name} line {line}: a 'case' pattern here has no ')' (bash refuses it)")
            self.i += 1
            body = self.block(frozenset({"esac"}), _CASE_ENDS)
            if self.is_op(*_CASE_ENDS):
                self.i += 1
            arms.append((patterns, body))
        self.expect("esac", "'case'", line)
        return Case(token.text, arms, line)

    def group(self, word: str, line: int) -> Group:
        body = self.block(frozenset({"}"}), frozenset())
        self.expect("}", "'{'", line)
        return Group(body, line)

    def function(self, word: str, line: int) -> Function:
        token = self.peek()
        if token is None or token.kind != "word":
            raise InputError(f"{self.name} line {line}: 'function' without a name (bash refuses to run this script)")
        self.i += 1
        if self.is_op("(") and self.i + 1 < len(self.tokens) and self.tokens[self.i + 1].text == ")":
            self.i += 2
        self.skip_newlines()
        return Function(token.text, self.command(), line)
