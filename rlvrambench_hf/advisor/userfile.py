"""A user's plan file, opened safely: a regular file of bounded size, or what a pipe, a device or ``/dev/stdin``
streams, read once (never a folder or a binary), decoded as UTF-8, within the advisor's size limits; and a
suffix-less input's format told from its first line.

Each refusal is one :class:`~rlvrambench_hf.errors.InputError` line naming the file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..data.tables.userfile import (
    HEAD_BYTES,
    binary_head,
    check_text,
    content_of,
    reason,
    user_input,
)
from ..errors import InputError, first_line, quote

#: Largest config file read (a VERL or TRL config, a launch script, a planned YAML / JSON list), bytes.
MAX_CONFIG_BYTES = 16 * 2**20
#: Largest launch script read (VERL's launch scripts are a few KiB; the shell reader is slower than YAML's), bytes.
MAX_SCRIPT_BYTES = 2**20
#: Largest planned CSV read (100,000 plans take about 15 MB), bytes.
MAX_CSV_BYTES = 256 * 2**20
#: The first line of YAML or JSON: a mapping key, a list item or the start of a JSON value.
_STRUCTURED = re.compile(r"\s*(?:[{\[]|- |-$|[\"']?[A-Za-z_][\w.-]*[\"']?\s*:(?:\s|$))")


def opened(path: str | os.PathLike, what: str, limit: int = MAX_CONFIG_BYTES) -> str | bytes:
    """``path`` as a string when it is a regular file of at most ``limit`` bytes, else the bytes a pipe, a device
    or ``/dev/stdin`` streams (read once, at most ``limit``); a one-line error otherwise."""
    label = f"{what} {quote(str(path))}"
    found = user_input(path, label, refused=binary_head, limit=limit)
    if isinstance(found, str):
        size = os.stat(found).st_size
        if size > limit:
            raise InputError(f"{label}: {size} bytes is more than the {limit} bytes read")
    return found


def text_of(found: str | bytes, name: str, limit: int = MAX_CONFIG_BYTES) -> str:
    """The text of what :func:`opened` gave; NUL bytes or invalid UTF-8 make it a binary file, refused."""
    size = os.stat(found).st_size if isinstance(found, str) else len(found)
    if size > limit:
        raise InputError(f"{name}: {size} bytes is more than the {limit} bytes read")
    data = content_of(found, name)
    check_text(data, name)
    return data.decode("utf-8-sig")


def read_text(path: str | os.PathLike, what: str, limit: int = MAX_CONFIG_BYTES) -> str:
    """The text of a user's file (:func:`opened`, then :func:`text_of`)."""
    return text_of(opened(path, what, limit), f"{what} {quote(str(path))}", limit)


def head_of(found: str | bytes, name: str, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of what :func:`opened` gave (``name``: the file in errors)."""
    if isinstance(found, bytes):
        return found[:size]
    try:
        with open(found, "rb") as handle:
            return handle.read(size)
    except OSError as exc:
        raise InputError(f"cannot read {name}: {reason(exc)}") from None


def looks_structured(text: str | bytes) -> bool:
    """Whether text without a telling suffix (a pipe) is YAML or JSON rather than a CSV or a launch script: its
    first line that is neither blank nor a comment is a mapping key, a list item or opens a JSON value."""
    head = text[:HEAD_BYTES].decode("utf-8", "replace") if isinstance(text, bytes) else text[:HEAD_BYTES]
    for line in head.lstrip("\ufeff").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return bool(_STRUCTURED.match(line))
    return False


def check_text_file(path: Path, name: str, chunk: int = 2**20) -> None:
    """:func:`check_text` over a file read in chunks (a large CSV is never held twice)."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    try:
        with open(path, "rb") as handle:
            while block := handle.read(chunk):
                if b"\0" in block:
                    raise InputError(f"{name}: is a binary file (NUL bytes), not text")
                try:
                    decoder.decode(block)
                except UnicodeDecodeError as exc:
                    raise InputError(f"{name}: is not UTF-8 text (byte {offset + exc.start})") from None
                offset += len(block)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise InputError(f"{name}: is not UTF-8 text (it ends inside a character)") from None
    except OSError as exc:
        raise InputError(f"{name}: cannot be read: {exc.strerror or first_line(exc)}") from None
