"""Why a CSV or JSON Lines file could not be read, decided by the package rather than relayed from pyarrow.

After ``pyarrow.csv`` refused a file, :func:`csv_problem` reads it again and names the first cause it can check, in
the order a reader meets them: bytes that are not UTF-8 (the line and the bytes), a line longer than the reader
accepts in one piece, then, row by row (Python's :mod:`csv` module), a row whose number of cells differs from the
header's, a line break inside a quoted value, or a quote that is never closed. :func:`json_lines_problem` does the
same for JSON Lines (then: the line that is not JSON, or not an object, or whose value changes type). Both return
None when none of these applies; the caller then names pyarrow's own text, as detail only.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
from collections.abc import Callable
from typing import IO

from ...errors import quote

_CHUNK = 1 << 20
_MIB = 1 << 20


def csv_problem(opener: Callable[[], IO[bytes]], *, block_size: int, header_cells: int) -> str | None:
    """The first checkable problem of the CSV text that ``opener()`` streams (decompressed), as a phrase that
    follows the file's name (``"line 7 is not UTF-8: ..."``), or None. ``block_size`` is the longest line the
    reader accepts; ``header_cells`` the number of columns the header names."""
    with opener() as stream:
        if not stream.read(1):
            return "it is empty (no header line)"
    with opener() as stream:
        problem = _bytes_problem(stream, block_size)
    if problem is not None:
        return problem
    with opener() as stream:
        return _rows_problem(stream, block_size, header_cells)


def first_non_utf8(head: bytes) -> str:
    """Where the first byte of ``head`` that is not UTF-8 is: ``line 4, byte 7`` (the bytes themselves are not
    shown: they are what the reader could not read)."""
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _position(head, exc.start, 1, 0)
    return "at the end"


def _position(chunk: bytes, start: int, line: int, carried: int) -> str:
    """``line L, byte B`` of offset ``start`` in ``chunk``, whose first line already had ``carried`` bytes."""
    before = chunk.rfind(b"\n", 0, start)
    column = start - before if before >= 0 else carried + start + 1
    line += chunk[:start].count(b"\n")
    return f"line {line:,}, byte {column:,}"


def _bytes_problem(stream: IO[bytes], block_size: int) -> str | None:
    decoder = codecs.getincrementaldecoder("utf-8")()
    line, length, longest = 1, 0, (0, 0)  # longest: (length, line) of the longest line
    while chunk := stream.read(_CHUNK):
        try:
            decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            return f"{_position(chunk, max(exc.start, 0), line, length)} is not UTF-8; save the file as UTF-8"
        pieces = chunk.split(b"\n")
        for index, piece in enumerate(pieces):
            length += len(piece)
            longest = max(longest, (length, line))
            if index < len(pieces) - 1:
                line, length = line + 1, 0
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return f"line {line:,} ends inside a UTF-8 character (the file is cut?)"
    if longest[0] > block_size:
        return (
            f"line {longest[1]:,} is {longest[0] / _MIB:.1f} MiB long, more than the {block_size // _MIB} MiB the "
            "reader is sure to accept in one line (is a line break missing?)"
        )
    return None


def _rows_problem(stream: IO[bytes], block_size: int, header_cells: int) -> str | None:
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, block_size))
    reader = csv.reader(text, strict=True)
    row, started = 0, 1
    try:
        for cells in reader:
            if cells and row > 0 and len(cells) != header_cells:
                return (
                    f"data row {row:,} (line {started:,}) has {len(cells)} cell{'s' if len(cells) != 1 else ''} "
                    f"where the header has {header_cells}"
                )
            if any("\n" in c or "\r" in c for c in cells):
                return f"line {started:,} has a line break inside a quoted value, which the reader does not accept"
            row += bool(cells)
            started = reader.line_num + 1
    except csv.Error as exc:
        if "end of data" in str(exc) or "EOF" in str(exc):
            return f"a quote opened on line {started:,} is never closed"
        return f"line {started:,} is not valid CSV ({str(exc)[:80]})"
    except UnicodeDecodeError:  # bytes the first pass let through
        return f"line {started:,} is not UTF-8; save the file as UTF-8"
    finally:
        csv.field_size_limit(limit)
    return None


def json_lines_problem(opener: Callable[[], IO[bytes]], *, block_size: int) -> str | None:
    """As :func:`csv_problem`, for JSON Lines: bytes, line length, then each line as one JSON object whose
    values keep the type (text, number, ...) that earlier lines gave them."""
    with opener() as stream:
        problem = _bytes_problem(stream, block_size)
    if problem is not None:
        return problem
    kinds: dict[str, str] = {}
    with opener() as stream:
        for number, raw in enumerate(io.TextIOWrapper(stream, encoding="utf-8-sig"), start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as exc:
                return f"line {number:,} is not valid JSON ({exc.msg} at column {exc.colno})"
            if not isinstance(record, dict):
                return f"line {number:,} is a JSON {_json_kind(record)}, not an object"
            for key, value in record.items():
                kind = _json_kind(value)
                if kind != "null" and kinds.setdefault(key, kind) != kind:
                    return f"line {number:,}: {quote(key)} is a {kind} where earlier lines have a {kinds[key]}"
    return None


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), "value")
