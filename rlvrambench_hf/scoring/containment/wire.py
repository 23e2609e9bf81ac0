"""What crosses from user code's child process back to the command: JSON, never a pickle.

Unpickling runs code that the bytes name (an object's ``__reduce__``), so a child that answered with pickles could
run its own code in the command. A reply is JSON of plain values — text, numbers, booleans, null, lists and
objects with text keys — read here with a bounded decoder into one of the shapes below, and nothing else; what
it carries is then checked again by the command (:mod:`.bounded`), since the child may send anything at all.

Replies: ``["step", doing]``, ``["ready", class name]``, ``["stray", what]``, ``["ok", value]``, ``["raised" |
"unreadable", interrupted, text, trace]``, ``["refused", {"error": class, "message": text, "fields": {...}}]``.
"""

from __future__ import annotations

import json
from typing import Any

from ...errors import (
    InputError,
    OutputError,
    RLVRAMBenchError,
    SchemaError,
    UserCodeError,
    UserCodeInterrupted,
    quote,
)

#: The package's errors a child may report by name (anything else is an InputError).
_ERRORS: dict[str, type[RLVRAMBenchError]] = {
    cls.__name__: cls for cls in (InputError, UserCodeError, UserCodeInterrupted, SchemaError, OutputError)
}
_FIELDS = ("path", "column", "config", "repo_id", "revision")
#: Characters of a reply's texts kept (a message is cut to a line anyway; a traceback is a --debug note).
TEXT_LIMIT = 64 << 10
#: The deepest nesting a reply may have (a prediction is two levels deep).
MAX_DEPTH = 64


class WireError(Exception):
    """Bytes that are not a reply of the shapes above."""


def encode(reply: tuple[Any, ...]) -> bytes:
    """``reply`` as JSON bytes (in the child); an error object is sent as its class name, message and fields.
    Raises ``TypeError`` or ``ValueError`` for a value JSON cannot carry."""
    items: list[Any] = list(reply)
    if items and items[0] == "refused" and isinstance(items[1], RLVRAMBenchError):
        error = items[1]
        items[1] = {"error": type(error).__name__, "message": str(error), "fields": error.fields}
    return json.dumps(items, ensure_ascii=True, allow_nan=True, check_circular=True).encode("ascii")


def decode(data: bytes) -> tuple[Any, ...]:
    """The reply in ``data`` (in the command), or :class:`WireError` saying why it is none."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise WireError(f"not JSON ({type(exc).__name__})") from None
    except RecursionError:
        raise WireError("JSON nested too deeply") from None
    if not isinstance(value, list) or not value or not isinstance(value[0], str):
        raise WireError("not a reply")
    _check_depth(value)
    kind, rest = value[0], value[1:]
    if kind in ("step", "ready", "stray") and len(rest) == 1 and isinstance(rest[0], str):
        return (kind, rest[0][:TEXT_LIMIT])
    if kind == "ok" and len(rest) == 1:
        return ("ok", rest[0])
    if kind in ("raised", "unreadable") and len(rest) == 3 and type(rest[0]) is bool:
        if isinstance(rest[1], str) and isinstance(rest[2], str):
            return (kind, rest[0], rest[1][:TEXT_LIMIT], rest[2][:TEXT_LIMIT])
    if kind == "refused" and len(rest) == 1 and isinstance(rest[0], dict):
        return ("refused", _error(rest[0]))
    raise WireError(f"not a reply of a known shape ({quote(kind, 20)})")


def _error(given: dict[str, Any]) -> RLVRAMBenchError:
    message, fields = given.get("message"), given.get("fields")
    if not isinstance(message, str) or not isinstance(fields, dict):
        raise WireError("an error without its message")
    cls = _ERRORS.get(str(given.get("error")), InputError)
    named = {k: v[:TEXT_LIMIT] for k, v in fields.items() if k in _FIELDS and isinstance(v, str)}
    return cls(message[:TEXT_LIMIT], **named)


def _check_depth(value: Any) -> None:
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise WireError(f"nested more than {MAX_DEPTH} deep")
        if isinstance(item, list):
            stack.extend((x, depth + 1) for x in item)
        elif isinstance(item, dict):
            stack.extend((x, depth + 1) for x in item.values())
