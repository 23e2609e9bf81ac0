"""A user's plan file, opened safely: a regular file of bounded size, or what a pipe, a device or ``/dev/stdin``
streams, read once (never a folder or a binary), decoded as UTF-8; and YAML or JSON parsed into plain values.

Each refusal is one :class:`~rlvrambench_hf.errors.InputError` line naming the file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..data.tables.userfile import content_of, reason, user_input
from ..errors import InputError, first_line, quote

#: Largest config file read (a VERL or TRL config, a launch script, a planned YAML / JSON list), bytes.
MAX_CONFIG_BYTES = 16 * 2**20
#: Largest launch script read (VERL's launch scripts are a few KiB; the shell reader is slower than YAML's), bytes.
MAX_SCRIPT_BYTES = 2**20
#: Largest planned CSV read (100,000 plans take about 15 MB), bytes.
MAX_CSV_BYTES = 256 * 2**20
#: Most YAML / JSON nodes a config may hold once aliases are expanded (a YAML alias bomb stops here).
MAX_NODES = 200_000
#: The first line of YAML or JSON: a mapping key, a list item or the start of a JSON value.
_STRUCTURED = re.compile(r"\s*(?:[{\[]|- |-$|[\"']?[A-Za-z_][\w.-]*[\"']?\s*:(?:\s|$))")


def opened(path: str | os.PathLike, what: str, limit: int = MAX_CONFIG_BYTES) -> str | bytes:
    """``path`` as a string when it is a regular file of at most ``limit`` bytes, else the bytes a pipe, a device
    or ``/dev/stdin`` streams (read once, at most ``limit``); a one-line error otherwise."""
    label = f"{what} {quote(str(path))}"
    found = user_input(path, label, refused=lambda head: b"\0" in head, limit=limit)
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


def head_of(found: str | bytes, name: str, size: int = 65536) -> bytes:
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
    head = text[:65536].decode("utf-8", "replace") if isinstance(text, bytes) else text[:65536]
    for line in head.lstrip("\ufeff").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return bool(_STRUCTURED.match(line))
    return False


def check_text(data: bytes, name: str) -> None:
    """Refuse binary content: a NUL byte or bytes that are not UTF-8."""
    if b"\0" in data:
        raise InputError(f"{name}: is a binary file (NUL bytes), not text")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: is not UTF-8 text (byte {exc.start})") from None


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


def parse_structured(text: str, name: str, suffix: str) -> object:
    """YAML (any suffix but ``.json``) or JSON text as plain values; bounded in size once expanded."""
    import json

    import yaml

    try:
        data = json.loads(text) if suffix == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{name}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise InputError(f"{name}: not valid YAML{where}: {exc.problem or exc.context}") from None
    except (ValueError, yaml.YAMLError) as exc:
        kind = "JSON" if suffix == ".json" else "YAML"
        raise InputError(f"{name}: not valid {kind}: {first_line(exc)}") from None
    except RecursionError:
        raise InputError(f"{name}: nested too deeply") from None
    count_nodes(data, name)
    return data


def count_nodes(data: object, name: str) -> None:
    """Refuse a structure of more than :data:`MAX_NODES` nodes (shared YAML aliases count each time)."""
    stack, seen = [data], 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen > MAX_NODES:
            raise InputError(f"{name}: more than {MAX_NODES} values (a YAML alias bomb?); refused")
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
