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
from collections.abc import Mapping, Sequence

from ....errors import InputError
from .arithmetic import TooManySteps, expr_value, integer_expression
from .arrays import array_reference

_OPEN, _CLOSE = "\ue000", "\ue001"
_MARKER = re.compile(f"{_OPEN}([0-9a-f]*){_CLOSE}")
_TAINT_OPEN, _TAINT_CLOSE = "\ue002", "\ue003"
_TAINT = re.compile(f"{_TAINT_OPEN}([0-9a-f]*){_TAINT_CLOSE}")
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_PARAMETER = rf"{_NAME}|[0-9]+|[@*#?$!-]"
_BRACED = re.compile(rf"(#?)({_PARAMETER})(.*)", re.S)
_OPERATOR = re.compile(r"(:?[-=+?]|##?|%%?|//?|\^\^?|,,?|:)(.*)", re.S)
#: Most defaults expanded inside one another (``${A:-${B:-...}}``).
MAX_NESTING = 32
#: Longest command (its words joined), before and after expansion.
MAX_COMMAND = 64 * 1024
#: Longest value a pattern operator (``${A#*=}``) matches against.
MAX_PATTERN_VALUE = 4096
#: Environment variables whose names say they hold a secret: their values are never read.
SECRET_NAME = re.compile(r"(?i)(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH|PRIVATE)(_|$)")

NOT_SET = "not set in the script or environment"
COMPUTED = "computed when the script runs"
ARITHMETIC = "arithmetic over a value the script does not give"
NO_ARGUMENT = "an argument of the script that was not given (give the script's arguments after --)"
SECRET = "an environment variable named as a secret, whose value is never read"


class TooDeep(Exception):
    """Defaults nested more than :data:`MAX_NESTING` deep."""


class TooLong(Exception):
    """An expansion longer than :data:`MAX_COMMAND` characters."""


class Shell(dict[str, str]):
    """The script's variables (arrays as :mod:`.arrays` keeps them) and the rest of the state expansion reads: which
    values are the environment's, the script's arguments (``given``: whether any were given) and its name."""

    def __init__(self, environ: Mapping[str, str], arguments: Sequence[str] | None, script: str) -> None:
        super().__init__(environ)
        self.environment = set(environ)
        self.positional = list(arguments or ())
        self.given = arguments is not None
        self.script = script
        self.argument_line: int | None = None  # the first line that reads the script's arguments
        self.line = 0

    def __setitem__(self, key: str, value: str) -> None:
        self.environment.discard(key)
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.environment.discard(key)
        super().__delitem__(key)

    def copy(self) -> Shell:  # type: ignore[override]
        other = Shell({}, None, self.script)
        dict.update(other, self)
        other.environment, other.positional, other.given = set(self.environment), list(self.positional), self.given
        other.argument_line, other.line = self.argument_line, self.line
        return other


def marker(what: str, why: str) -> str:
    """``what`` (and ``why`` it is not known) hidden in one word that no shell splitting or quoting changes."""
    return f"{_OPEN}{(what + chr(0) + why).encode().hex()}{_CLOSE}"


def unresolved(text: str) -> tuple[str, str] | None:
    """The first run-time value ``text`` depends on and why it is not known (``("$MODEL", NOT_SET)``), or None."""
    found = _MARKER.search(text)
    if found is None:
        return None
    what, _, why = bytes.fromhex(found.group(1)).decode().partition(chr(0))
    return what, why


def clean(text: str) -> tuple[str, list[str]]:
    """``text`` without taints, and the environment variables whose values are in it."""
    names = [bytes.fromhex(h).decode() for h in _TAINT.findall(text)]
    return (_TAINT.sub("", text) if names else text), names


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
    m = _BRACED.fullmatch(body)
    if m is None:
        return marker(f"${{{body}}}", COMPUTED)
    length, key, rest = m.groups()
    value = _lookup(key, shell)
    if length:
        if rest:
            return marker(f"${{{body}}}", COMPUTED)
        return marker(f"${{#{key}}}", NOT_SET) if value is None else str(len(clean(value)[0]))
    if not rest:
        return value if value is not None else _parameter(key, shell)
    op = _OPERATOR.fullmatch(rest)
    if op is None:
        return marker(f"${{{body}}}", COMPUTED)
    operator, word = op.groups()
    unset = value is None or (operator.startswith(":") and value == "")
    if operator in (":-", "-", ":=", "="):
        if not unset:
            return value  # type: ignore[return-value]
        default = _expand_word(word, shell, depth)
        if operator in (":=", "=") and re.fullmatch(_NAME, key):
            shell[key] = default
        return default
    if operator in (":+", "+"):
        return "" if unset else _expand_word(word, shell, depth)
    if operator in (":?", "?"):
        return marker(f"${{{key}}}", NOT_SET) if unset else value  # type: ignore[return-value]
    if value is None:
        return _parameter(key, shell)
    if _OPEN in value:
        return marker(f"${{{body}}}", COMPUTED)
    return _operated(operator, _expand_word(word, shell, depth), value, body)


def _expand_word(word: str, shell: Shell, depth: int) -> str:
    """The word of an operator (``default`` in ``${A:-default}``), expanded, its quotes removed."""
    expanded = expand(word, shell, depth + 1)
    if _OPEN in expanded:
        return expanded
    try:
        return "".join(split(expanded)) if expanded.strip() else expanded
    except ValueError:
        return expanded


def _operated(operator: str, word: str, value: str, body: str) -> str:
    """``value`` through a pattern, case or substring operator."""
    plain, names = clean(value)
    taint = "".join(f"{_TAINT_OPEN}{n.encode().hex()}{_TAINT_CLOSE}" for n in names)
    if operator in ("^^", "^", ",,", ","):
        changed = plain.upper() if operator.startswith("^") else plain.lower()
        return taint + (changed if len(operator) == 2 else changed[:1] + plain[1:])
    if operator == ":":
        m = re.fullmatch(r"\s*(-?[0-9]{1,6})\s*(?::\s*([0-9]{1,6})\s*)?", word)
        if m is None:
            return marker(f"${{{body}}}", COMPUTED)
        start = int(m.group(1))
        start = max(len(plain) + start, 0) if start < 0 else start
        return taint + (plain[start : start + int(m.group(2))] if m.group(2) else plain[start:])
    if len(plain) > MAX_PATTERN_VALUE or word.count("*") > 8:
        return marker(f"${{{body}}}", COMPUTED)
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
