"""A user's plan file, opened safely: a regular file of bounded size holding text (never a FIFO that would block,
a device, a folder or a binary), decoded as UTF-8; and YAML or JSON parsed into plain values.

Each refusal is one :class:`~rlvrambench_hf.errors.InputError` line naming the file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import InputError, first_line, quote

#: Largest config file read (a VERL or TRL config, a launch script, a planned YAML / JSON list), bytes.
MAX_CONFIG_BYTES = 16 * 2**20
#: Largest planned CSV read (100,000 plans take about 15 MB), bytes.
MAX_CSV_BYTES = 256 * 2**20
#: Most YAML / JSON nodes a config may hold once aliases are expanded (a YAML alias bomb stops here).
MAX_NODES = 200_000


def checked_file(path: str | os.PathLike, what: str, limit: int = MAX_CONFIG_BYTES) -> Path:
    """``path`` if it is a regular file of at most ``limit`` bytes; a one-line error otherwise."""
    file = Path(path)
    try:
        info = file.stat()
    except OSError as exc:
        raise InputError(f"{what} {quote(str(file))}: cannot be read: {exc.strerror or first_line(exc)}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file (a FIFO, socket or device)"
        raise InputError(f"{what} {quote(str(file))}: is {kind}")
    if info.st_size > limit:
        raise InputError(f"{what} {quote(str(file))}: {info.st_size} bytes is more than the {limit} bytes read")
    return file


def read_text(path: str | os.PathLike, what: str, limit: int = MAX_CONFIG_BYTES) -> str:
    """The text of a checked file; NUL bytes or invalid UTF-8 make it a binary file, refused."""
    file = checked_file(path, what, limit)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InputError(f"{what} {quote(str(file))}: cannot be read: {exc.strerror or first_line(exc)}") from None
    check_text(data, f"{what} {str(file)!r}")
    return data.decode("utf-8-sig")


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
