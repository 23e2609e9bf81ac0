"""Exceptions raised by rlvrambench-hf, and the one formatter every error line goes through.

Every error a user can cause derives from :class:`RLVRAMBenchError`; its message is one line that names the
problem. The command line prints that line and exits with status 2. As huggingface_hub's errors do, an error also
carries what it is about as fields, for code that handles it: ``path`` (the file, as the message names it),
``column``, ``config``, ``repo_id`` and ``revision``, each None where it does not apply.

Messages are bounded and escaped in one place. At the sites that build them, :func:`quote` shows a value (repr-
escaped, so that invisible and control characters read ``\\u200b``, ``\\x00``; cut with ``…``) and :func:`summary`
a collection (its first few items and how many more). :func:`one_line`, applied to every message when an error is
made and again by :func:`first_line` (the function the command line prints through), is the safety net: one line
of at most :data:`MESSAGE_LIMIT` characters, non-printable characters escaped, and credentials redacted
(:func:`redact`: the user-info of URLs, Hugging Face tokens, ``Authorization`` values).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .redaction import redact as redact  # re-exported: every face redacts through errors

#: The longest message (characters); a longer one keeps its head and its tail around :data:`CUT`.
MESSAGE_LIMIT = 300
#: Characters of one quoted value before it is cut.
VALUE_LIMIT = 60
#: Characters beyond ``limit`` that a small collection shown item by item may take (brackets, commas, cut marks).
COLLECTION_SLACK = 40
#: Items of a collection that a message names before "and N more".
SHOWN_ITEMS = 3
#: What marks a cut.
CUT = "…"
#: Exit status of an error, and of an interrupt.
EXIT_ERROR, EXIT_INTERRUPTED = 2, 130


class RLVRAMBenchError(Exception):
    """Base class of every error the package raises on bad input or a bad release."""

    #: The command line's exit status for this error.
    exit_status: int = EXIT_ERROR

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        column: str | None = None,
        config: str | None = None,
        repo_id: str | None = None,
        revision: str | None = None,
    ) -> None:
        super().__init__(one_line(str(message)))
        self.path, self.column, self.config = path, column, config
        self.repo_id, self.revision = repo_id, revision

    def __reduce__(self) -> tuple[Any, ...]:  # the fields (and a subclass's own attributes) survive pickling
        return _rebuild, (type(self), self.args[0] if self.args else "", dict(self.__dict__))

    @property
    def fields(self) -> dict[str, str]:
        """The fields that are set, by name."""
        named = {"path": self.path, "column": self.column, "config": self.config}
        named |= {"repo_id": self.repo_id, "revision": self.revision}
        return {k: v for k, v in named.items() if v is not None}

    def with_fields(self, **fields: str | None) -> RLVRAMBenchError:
        """This error with the given fields set where they are still unset (for re-raising with more context)."""
        for name, value in fields.items():
            if getattr(self, name) is None:
                setattr(self, name, value)
        return self


def _rebuild(cls: type[RLVRAMBenchError], message: str, state: dict[str, Any]) -> RLVRAMBenchError:
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    exc.__dict__.update(state)
    return exc


class UnknownConfigError(RLVRAMBenchError, KeyError):
    """A config, split, track, rule or other name that the registry does not know."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class SourceError(RLVRAMBenchError):
    """The source (Hub repository, revision or local folder) cannot be opened or reached, or a cache folder cannot
    be written."""


class MissingFileError(SourceError):
    """A file that a config needs is not part of the requested revision."""


class IntegrityError(RLVRAMBenchError):
    """A file does not match its published SHA-256 digest, or a manifest is unsafe."""


class SchemaError(RLVRAMBenchError):
    """A data file does not fit the registry: extra or missing columns, or a value outside its type."""


class InputError(RLVRAMBenchError, ValueError):
    """A user-supplied file or argument (predictions, decisions, policy, options) is invalid."""


class UserCodeError(InputError):
    """A user's policy or estimator failed: it raised (``SystemExit`` and ``KeyboardInterrupt`` too), did not
    return within its time limit, ended the process it ran in, or returned something unusable."""


class UserCodeInterrupted(UserCodeError):
    """A user's policy or estimator raised ``KeyboardInterrupt`` (the command line exits with 130)."""

    exit_status = EXIT_INTERRUPTED


class NumericalError(RLVRAMBenchError, ArithmeticError):
    """A computation failed on valid input: a solver did not converge, or produced non-finite values."""


class OutputError(InputError):
    """An output cannot be written: refused before any work (it would overwrite an input, its folder is a file, ...)
    or the write itself failed (a full disk); nothing is left behind."""


class MissingExtraError(RLVRAMBenchError, ImportError):
    """An optional dependency is not installed; the message names the ``pip install`` that brings it."""


def import_extra(module: str, extra: str, purpose: str, alternative: str = "") -> Any:
    """Import ``module`` of the optional extra ``extra``, or raise a one-line :class:`MissingExtraError` saying
    which ``pip install 'rlvrambench-hf[extra]'`` brings it (``purpose``: what needs it, e.g. "drawing figures";
    ``alternative``: another way out, appended after "or")."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(
            f"{purpose} needs {module.split('.')[0]}, which is not installed: "
            f"pip install 'rlvrambench-hf[{extra}]'" + (f" (or {alternative})" if alternative else "")
        ) from None


# ---- the formatter ---------------------------------------------------------------------------------------------


def quote(value: object, limit: int = VALUE_LIMIT) -> str:
    """``value`` as a message shows it, without running any code of its class: text and bytes repr-escaped and
    cut after ``limit`` characters (with their length), numbers as written (a huge integer by its digit count),
    a small builtin collection item by item, a larger one or any other object by its type (and size)."""
    kind = type(value)
    if kind.__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        value = value.item()
        kind = type(value)
    if value is None or kind is bool:
        return repr(value)
    if isinstance(value, str):
        return _quoted_text(str.__str__(value), limit)
    if isinstance(value, (bytes, bytearray)):
        data = bytes(value)
        pieces = _take([repr(data[i : i + 1])[2:-1] for i in range(min(len(data), limit))], limit)
        shown = "b'" + "".join(pieces) + "'"
        return shown if len(pieces) == len(data) else f"{shown}{CUT} ({len(data):,} bytes)"
    if isinstance(value, int):
        digits = int(int.bit_length(value) * 0.30103) + 1
        return int.__repr__(value) if digits <= 40 else f"an integer of about {digits:,} digits"
    if isinstance(value, float):
        return float.__repr__(value)
    if kind in (list, tuple, set, frozenset, dict):
        return _quoted_collection(value, limit)
    return f"an object of type {type_name(value)}"


def printable(text: str) -> str:
    """``text`` as a terminal may be given it: every character that is not printable (the ESC of an escape
    sequence, BEL and the other C0 and C1 controls, bidirectional overrides, ...) escaped as Python writes it
    (``\\x1b``, ``\\u202e``); line breaks kept. For whole lines of a command's text, whose names and values came
    from the user (a file's name, a planned value, a log's excerpt)."""
    if text.isprintable():
        return text
    return "\n".join(line if line.isprintable() else "".join(_visible(c) for c in line) for line in text.split("\n"))


def type_name(value: object) -> str:
    """The name of ``value``'s class, escaped and cut (read without running the class's own code)."""
    name = type.__dict__["__name__"].__get__(type(value), type)
    return _escaped(name, 40)


def summary(items: Iterable[object], *, shown: int = SHOWN_ITEMS, quoted: bool = True, total: int | None = None) -> str:
    """The first ``shown`` of ``items`` (each :func:`quote`-d, or escaped as plain names when not ``quoted``) and
    how many more there are: ``'a', 'b', 'c' and 1,999,997 more``. With ``total`` (the number of items, when the
    caller knows it) only the first ``shown`` items are taken from ``items``."""
    head: list[object] = []
    count = 0
    for item in items:
        if count < shown:
            head.append(item)
        count += 1
        if total is not None and count >= shown:
            count = max(total, count)
            break
    text = ", ".join(quote(i) if quoted else _escaped(str(i), VALUE_LIMIT) for i in head)
    return text + (f" and {count - shown:,} more" if count > shown else "")


def one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` as one line of at most ``limit`` characters: credentials redacted, line breaks and other
    non-printable characters escaped, and the middle of a longer text replaced by `` … `` (head and tail kept)."""
    window = 4 * limit
    if len(text) > 2 * window:  # never escape megabytes: the cut below keeps far less than these two slices
        first, last = text[:window], text[-window:]  # cut at spaces, so that no credential is cut below its shape
        text = f"{first[: first.rfind(' ') + 1 or window]} {CUT} {last[last.find(' ') + 1 :]}"
    pieces = [_visible(c) for c in redact(text).strip()]
    if sum(map(len, pieces)) > limit:  # a long path gives way first: the names and the remedy after it stay whole
        pieces = [_visible(c) for c in _LONG_PATH.sub(_path_tail, redact(text).strip())]
    if sum(map(len, pieces)) <= limit:
        return "".join(pieces)
    budget = limit - len(CUT) - 2
    tail_budget = budget // 3
    head, tail = _take(pieces, budget - tail_budget), _take(pieces[::-1], tail_budget)[::-1]
    return f"{''.join(head).rstrip()} {CUT} {''.join(tail).lstrip()}".strip()


#: A file path of three or more folders (not a URL), longer than :data:`PATH_LIMIT`.
_LONG_PATH = re.compile(r"(?<![\w:/.~-])[~.]{0,2}/?(?:[^\s/'\"]+/){3,}[^\s/'\"]+")
#: Characters of a path in a message that is too long; a longer one keeps its last folder and its file name.
PATH_LIMIT = 40


def _path_tail(match: re.Match[str]) -> str:
    path = match.group(0)
    return path if len(path) <= PATH_LIMIT else f"{CUT}/" + "/".join(path.rsplit("/", 2)[-2:])


def _take(pieces: list[str], budget: int) -> list[str]:
    taken, used = [], 0
    for piece in pieces:
        if used + len(piece) > budget:
            break
        taken.append(piece)
        used += len(piece)
    return taken


def first_line(exc: BaseException, *, typed: bool = False, limit: int = MESSAGE_LIMIT) -> str:
    """The one line that describes ``exc``: the package's own message, or the first non-empty line of a library's
    (its type name when empty), bounded by :func:`one_line`; ``typed`` prefixes the type name (``ValueError:
    ...``), for exceptions raised by a user's own code. Every error line the package prints comes from here."""
    name = type_name(exc)
    try:
        text = str(exc)
    except Exception:  # an exception whose arguments cannot even be shown
        text = ""
    lines = [line for line in text[: 8 * limit].strip().splitlines() if line.strip()]
    line = lines[0].strip() if lines else ""
    if not line:
        return one_line(name, limit)
    return one_line(f"{name}: {line}" if typed else line, limit)


def error_line(exc: BaseException, prog: str = "rlvrambench") -> str:
    """What a command prints for ``exc`` on standard error: ``PROG: error: <first_line>``, or, for an exception
    that is not the package's own (a bug), ``PROG: internal error: Type: ... (--debug shows the traceback)``."""
    if isinstance(exc, RLVRAMBenchError):
        return f"{prog}: error: {first_line(exc)}"
    return f"{prog}: internal error: {first_line(exc, typed=True)} (a bug of rlvrambench-hf; --debug shows where)"


def debug_text(exc: BaseException) -> str:
    """The traceback of ``exc`` as ``--debug`` prints it: in full, but with credentials redacted and every
    character that is not printable escaped (line breaks kept)."""
    import traceback

    return escaped(redact("".join(traceback.format_exception(exc))))


def _quoted_text(text: str, limit: int) -> str:
    pieces = _take([_visible(c, quoted=True) for c in text[:limit]], limit)
    shown = "".join(pieces)
    return f"'{shown}'" if len(pieces) == len(text) else f"'{shown}'{CUT} ({len(text):,} characters)"


_SCALARS = (str, bytes, int, float, bool, type(None))


def _quoted_collection(value: Any, limit: int) -> str:
    size = len(value)  # an exact builtin collection: no user code runs
    kind = type(value).__name__
    if size <= SHOWN_ITEMS and kind in ("list", "tuple", "dict"):
        pairs = list(value.items()) if kind == "dict" else [(item,) for item in value]
        if all(type(x) in _SCALARS for pair in pairs for x in pair):
            inner = ", ".join(": ".join(quote(x, limit // 2) for x in pair) for pair in pairs)
            brackets = {"list": "[]", "tuple": "()", "dict": "{}"}[kind]
            if len(inner) + 2 <= limit + COLLECTION_SLACK:  # else too long to show item by item
                return f"{brackets[0]}{inner}{brackets[1]}"
    return f"a {kind} of {size:,} item{'' if size == 1 else 's'}"


def _visible(c: str, *, quoted: bool = False) -> str:
    if quoted and c in "\\'":
        return "\\" + c
    return c if c.isprintable() else repr(c)[1:-1]


def _escaped(text: str, limit: int) -> str:
    """``text`` with non-printable characters escaped, cut after ``limit`` characters (a name, not a value)."""
    pieces = _take([_visible(c) for c in text[:limit]], limit)
    return "".join(pieces) + ("" if len(pieces) == len(text) else CUT)


# ---- text for a terminal (issue 38, item 5) ----------------------------------------------------------------------


def escaped(text: str, keep: str = "\n") -> str:
    """``text`` with every character that is not printable escaped as Python writes it (``\\x1b``, ``\\x07``,
    ``\\x9b``, ``\\u202e``, ``\\u200b``), but those of ``keep``: no escape sequence, bell, C1 control or
    bidirectional override reaches a terminal raw. Unlike :func:`quote`, nothing is cut and no quotes are added
    (a file name in an output line, a table cell)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in keep else repr(c)[1:-1] for c in text)
