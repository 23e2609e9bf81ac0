"""A shell word's expansion as bash does it, never running anything: ``$NAME``, ``${NAME}`` and its operators
(``:-`` ``-`` ``:=`` ``=`` ``:+`` ``+`` ``:?`` ``#`` ``##`` ``%`` ``%%`` ``/`` ``//`` ``^^`` ``,,`` ``:offset:length``,
``${#NAME}``), the script's arguments (``$1``, ``${1:-default}``, ``$#``, ``"$@"``, ``$*``), bash arrays
(:mod:`.arrays`), ``$(( ... ))`` and ``$(expr ...)`` over known integers (:mod:`.arithmetic`) and ``$(echo ...)``,
never inside single quotes; then the words split as the shell splits them.

What is known only when the script runs (another command's output, an unset variable, an argument not given, a
secret of the environment) becomes a *marker*: one word no splitting changes that says what it is and why it is not
known (:func:`unresolved`). A value that came from the environment carries a *taint* (:func:`clean` strips it and
names the variables), so that it can be named, never printed, where it is refused.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from ....errors import InputError
from .arithmetic import TooManySteps, expr_value, integer_expression
from .arrays import array_reference
from .patterns import operated
from .state import (
    _OPEN,
    _TAINT_CLOSE,
    _TAINT_OPEN,
    ARITHMETIC,
    COMPUTED,
    NO_ARGUMENT,
    NOT_SET,
    SECRET,
    SECRET_NAME,
    Shell,
    clean,
    marker,
)

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_PARAMETER = rf"{_NAME}|[0-9]+|[@*#?$!-]"
_BRACED = re.compile(rf"(#?)({_PARAMETER})(.*)", re.S)
_OPERATOR = re.compile(r"(:?[-=+?]|##?|%%?|//?|\^\^?|,,?|:)(.*)", re.S)
#: Most defaults expanded inside one another (``${A:-${B:-...}}``).
MAX_NESTING = 32
#: Longest command (its words joined), before and after expansion.
MAX_COMMAND = 64 * 1024


class TooDeep(Exception):
    """Defaults nested more than :data:`MAX_NESTING` deep."""


class TooLong(Exception):
    """An expansion longer than :data:`MAX_COMMAND` characters."""


def words(command: str, where: str, shell: Shell) -> list[str]:
    """The words of a command's raw text, expanded and split."""
    try:
        return split(expand(command, shell))
    except ValueError:  # an escape with nothing after it
        raise InputError(f"{where}: a quote or escape opened here is never closed") from None
    except TooDeep:
        raise InputError(f"{where}: variables nested more than {MAX_NESTING} deep") from None
    except TooLong:
        raise InputError(f"{where}: the command expands to more than {MAX_COMMAND:,} characters") from None
    except TooManySteps:
        raise InputError(f"{where}: arithmetic that takes more steps than any launch script needs") from None


def split(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
    lexer.whitespace = " \t\r\n"
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def expand(text: str, shell: Shell, depth: int = 0) -> str:
    """``text`` with its expansions done outside single quotes (escaped for the split that follows)."""
    if depth > MAX_NESTING:
        raise TooDeep
    out, i, quote, size = [], 0, None, len(text)
    while i < len(text):
        char = text[i]
        if char == "\\" and quote != "'" and i + 1 < len(text):
            out.append(text[i : i + 2])
            i += 2
            continue
        if char in "'\"" and quote in (None, char):
            quote = None if quote else char
        elif char == "$" and quote is None and text.startswith("$'", i):
            end = text.find("'", i + 2)
            end = len(text) - 1 if end < 0 else end
            out.append("'" + text[i + 2 : end].replace("'", "'\\''") + "'")
            i = end + 1
            continue
        elif char == "`" and quote != "'":
            end = text.find("`", i + 1)
            out.append(marker("`...`", COMPUTED))
            i = (len(text) if end < 0 else end) + 1
            continue
        elif char == "$" and quote != "'":
            value, i = _dollar(text, i, shell, depth, quote)
            out.append(value)
            size += len(value)
            if size > MAX_COMMAND:
                raise TooLong
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _dollar(text: str, i: int, shell: Shell, depth: int, quote: str | None) -> tuple[str, int]:
    """The text an expansion at ``text[i] == '$'`` leaves in its quoting context, and the index after it: an array's
    (or the arguments') elements stay one word each in ``"${A[@]}"`` / ``"$@"``, a value is literal text."""
    listed = _listed(text, i, shell)
    if listed is None:
        value, i = _variable(text, i, shell, depth, quote == '"')
        return (_escaped(value, quote) if _OPEN not in value else value), i
    elements, separate, i = listed
    if not separate:
        return _escaped(" ".join(elements), quote), i
    return ('" "' if quote == '"' else " ").join(_escaped(w, quote) for w in elements), i


def _listed(text: str, i: int, shell: Shell) -> tuple[list[str], bool, int] | None:
    """An array reference or ``$@`` / ``$*`` / ``${@:N}`` at ``text[i]``: its elements, whether they stay separate
    words and the index after it."""
    found = array_reference(text, i, shell)
    if found is not None:
        return found
    m = re.compile(r"\$(?:([@*])|\{([@*])(?::([0-9]+))?\})").match(text, i)
    if m is None:
        return None
    shell.argument_line = shell.argument_line or shell.line
    which = m.group(1) or m.group(2)
    start = int(m.group(3) or 1)
    elements = shell.positional[max(start - 1, 0) :] if len(m.group(3) or "") < 6 else []
    return elements, which == "@", m.end()


def _variable(text: str, i: int, shell: Shell, depth: int, quoted: bool) -> tuple[str, int]:
    """The value of the expansion at ``text[i] == '$'`` and the index after it (``quoted``: inside double
    quotes, where a single quote is a character)."""
    rest = text[i + 1 :]
    if rest.startswith("(("):
        end = _closing(rest, 0)
        if end is not None and rest[end - 2 : end] == "))":
            return _arithmetic(rest[2 : end - 2], shell, depth), i + 1 + end
    if rest.startswith("("):
        end = _closing(rest, 0)
        end = len(rest) if end is None else end
        return _substitution(rest[1 : end - 1], shell, depth), i + 1 + end
    if rest.startswith("{"):
        end = _brace(rest, quoted)
        if end is not None:
            return _braced(rest[1:end], shell, depth), i + 2 + end
    plain = re.match(rf"^({_NAME}|[0-9@*#?$!-])", rest)
    if plain:
        return _parameter(plain.group(1), shell), i + 1 + plain.end()
    return "$", i + 1


def _parameter(key: str, shell: Shell) -> str:
    """A parameter's value (a marker when it has none the script or environment gives)."""
    found = _lookup(key, shell)
    if found is not None:
        return found
    if key.isdigit():
        return marker(f"${key}", NO_ARGUMENT)
    return marker(f"${key}", NOT_SET)


def _lookup(key: str, shell: Shell) -> str | None:
    """The value of a name or positional / special parameter; None when unset."""
    if key.isdigit() or key in "#@*":
        shell.argument_line = shell.argument_line or shell.line
        if key == "#":
            return str(len(shell.positional))
        if key in "@*":
            return " ".join(shell.positional)
        number = int(key) if len(key) < 6 else 10**6
        if number == 0:
            return shell.script
        return shell.positional[number - 1] if number <= len(shell.positional) else None
    value = shell.get(key)
    if value is None or key not in shell.environment:
        return value
    if SECRET_NAME.search(key):
        return marker(f"${key}", SECRET)
    return f"{_TAINT_OPEN}{key.encode().hex()}{_TAINT_CLOSE}{value}"


def _braced(body: str, shell: Shell, depth: int) -> str:
    """``${body}``: a parameter, its length, or a parameter through an operator."""
    m = _BRACED.fullmatch(body)
    unknown = marker(f"${{{body}}}", COMPUTED)
    if m is None:
        return unknown
    length, key, rest = m.groups()
    value = _lookup(key, shell)
    if length:
        if rest:
            return unknown
        return marker(f"${{#{key}}}", NOT_SET) if value is None else str(len(clean(value)[0]))
    if not rest:
        return value if value is not None else _parameter(key, shell)
    op = _OPERATOR.fullmatch(rest)
    if op is None:
        return unknown
    operator, word = op.groups()
    if operator in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
        return _defaulted(key, value, operator, word, shell, depth)
    if value is None:
        return _parameter(key, shell)
    return unknown if _OPEN in value else operated(operator, _expand_word(word, shell, depth), value, unknown)


def _defaulted(key: str, value: str | None, operator: str, word: str, shell: Shell, depth: int) -> str:
    """``${key:-word}``, ``${key-word}``, ``${key:=word}``, ``${key:+word}``, ``${key:?word}`` as bash has them."""
    unset = value is None or (operator.startswith(":") and value == "")
    if operator in (":+", "+"):
        return "" if unset else _expand_word(word, shell, depth)
    if not unset:
        return value  # type: ignore[return-value]
    if operator in (":?", "?"):
        return marker(f"${{{key}}}", NOT_SET)
    default = _expand_word(word, shell, depth)
    if operator in (":=", "=") and re.fullmatch(_NAME, key):
        shell[key] = default
    return default


def _expand_word(word: str, shell: Shell, depth: int) -> str:
    """The word of an operator (``default`` in ``${A:-default}``), expanded, its quotes removed."""
    expanded = expand(word, shell, depth + 1)
    if _OPEN in expanded:
        return expanded
    try:
        return "".join(split(expanded)) if expanded.strip() else expanded
    except ValueError:
        return expanded


def _substitution(body: str, shell: Shell, depth: int) -> str:
    """``$(...)``: ``expr`` and ``echo`` of known words are computed; any other command's output is a marker."""
    command = body.strip()
    simple = not re.search(r"[|;&<>`]|\$\(", command)
    head = command.split(None, 1)
    if simple and head and head[0] in ("expr", "echo"):
        expanded = expand(command, shell, depth + 1)
        if _OPEN not in expanded:
            try:
                found = split(clean(expanded)[0])[1:]
            except ValueError:
                found = None
            if found is not None and head[0] == "echo" and not (found and found[0].startswith("-")):
                return " ".join(found)
            if found is not None and head[0] == "expr":
                value = expr_value(found)
                if value is not None:
                    return str(value)
    return marker(f"$({command[:40]}{'...' if len(command) > 40 else ''})", COMPUTED)


def _arithmetic(body: str, shell: Shell, depth: int) -> str:
    """``$(( body ))`` as the shell computes it over integers, from the script's own values."""
    expanded = expand(body, shell, depth + 1)
    if _OPEN in expanded:
        return marker(f"$(({body.strip()}))", ARITHMETIC)
    try:
        return str(integer_expression(clean(expanded)[0], _Plain(shell)))
    except (ValueError, ZeroDivisionError, RecursionError):
        return marker(f"$(({body.strip()}))", ARITHMETIC)


class _Plain(Mapping[str, str]):
    """The shell's values without taints, for arithmetic."""

    def __init__(self, shell: Shell) -> None:
        self.shell = shell

    def __getitem__(self, key: str) -> str:
        value = _lookup(key, self.shell)
        if value is None or _OPEN in value:
            raise KeyError(key)
        return clean(value)[0]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.shell)

    def __len__(self) -> int:
        return len(self.shell)


def _closing(rest: str, start: int) -> int | None:
    """The index after the parenthesis that closes ``rest[start] == '('`` (quotes skipped), or None."""
    level, j, quote = 0, start, None
    while j < len(rest):
        c = rest[j]
        if c == "\\" and quote != "'":
            j += 2
            continue
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "(":
            level += 1
        elif c == ")":
            level -= 1
            if level == 0:
                return j + 1
        j += 1
    return None


def _brace(rest: str, quoted: bool) -> int | None:
    """The index of the ``}`` that closes ``rest[0] == '{'`` (nested ``${...}`` and quotes counted; ``quoted``:
    inside double quotes, where a single quote is a character), or None."""
    depth, j, quote = 1, 1, None
    while j < len(rest):
        c = rest[j]
        if c == "\\" and quote != "'":
            j += 2
            continue
        if quote:
            quote = None if c == quote else quote
        elif c == '"' or (c == "'" and not quoted):
            quote = c
        elif rest.startswith("${", j):
            depth, j = depth + 1, j + 2
            continue
        elif c == "}":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return None


def _escaped(value: str, quote: str | None) -> str:
    """A variable's value as literal text in the quoting context it lands in (unquoted values still split into
    words at spaces, as the shell splits them)."""
    if quote == '"':
        return re.sub(r'(["\\])', r"\\\1", value)
    return re.sub(r"""(['"\\;&|()#])""", r"\\\1", value)
