"""Reading prediction files: one reader for every format a user has, one set of rules for every scoring feature.

Accepted (:data:`ACCEPTED`), whatever the file is called — the format is recognised from its first bytes, with the
extension as a hint for misnamed files:

- **CSV** in UTF-8 with a header naming the columns (``Dataset.to_csv``, ``pandas.to_csv(index=False)``); a
  byte-order mark, Windows line ends, blank lines and spaces or tabs around cells are tolerated;
- **JSON Lines**, one object per line (``Dataset.to_json``, ``pandas.to_json(orient="records", lines=True)``);
- either of them compressed with **gzip, bzip2 or zstandard** (``.csv.gz``, ``.jsonl.zst``, ...);
- **Parquet** (``Dataset.to_parquet``, ``pandas.to_parquet``); an integer ``ClassLabel`` column is decoded with the
  label names that ``datasets`` embeds;
- ``-``: standard input, in any of these formats.

pyarrow reads every format. The columns must be exactly the required ones (any order) plus, optionally, the
optional ones. Anything else — UTF-16 text, a spreadsheet, a ``;``-separated file, other binary data, unknown or
repeated columns, a missing column or value, an empty file, a header without rows — is a one-line
:class:`~rlvrambench_hf.errors.InputError` that names what was seen (never raw bytes). Only the first 64 KiB are
read before the format and header are checked, so a huge wrong file fails at once. A file pyarrow cannot parse is
diagnosed by the package (:mod:`~rlvrambench_hf.data.tables.diagnose`: the line that is not UTF-8, a line too long,
the row with the wrong number of cells, ...). A file is read once, into memory, its size checked on the open
handle (a file put in its place meanwhile is never read); a pipe or device (``/dev/stdin``, ``<(...)``) is read
once, fully.

Memory is bounded before anything is materialised (:mod:`.predictionbounds`): at most :data:`MAX_BYTES` of a file,
a stream or what compressed data decompresses to, a Parquet footer checked first, at most :data:`MAX_ROWS` rows. An
allocation that fails all the same is one line naming the file and the bounds.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pyarrow as pa
import pyarrow.compute as pc

from ..arrow import one_chunk
from ..data.tables.diagnose import csv_problem, first_non_utf8, json_lines_problem
from ..errors import InputError, first_line, quote, summary
from ..userfile import MAX_DEPTH, content_of, count_nodes, reason, standard_input, user_input
from .predictionbounds import MAX_BYTES, MAX_ROWS, decompressed, parquet_file, read_parquet

if TYPE_CHECKING:  # pragma: no cover
    pass

#: Characters stripped around cells and header names.
WHITESPACE = " \t"
#: The formats a predictions file may have, as messages name them.
ACCEPTED = "CSV (UTF-8), JSON Lines or Parquet, optionally gzip/bzip2/zstd-compressed, or - for standard input"
STDIN = "-"
_HEAD = 1 << 16
#: The longest line (bytes) the CSV and JSON Lines readers accept.
BLOCK_SIZE = 1 << 24
_COMPRESSION_MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bz2", b"\x28\xb5\x2f\xfd": "zstd"}
_SEEN_MAGIC = {  # formats recognised only to be named in the refusal
    b"\xfd7zXZ\x00": "xz-compressed data",
    b"PK\x03\x04": "a ZIP archive (e.g. an .xlsx or .ods spreadsheet)",
    b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1": "a legacy Office document (e.g. an .xls spreadsheet)",
    b"%PDF": "a PDF document",
    b"ARROW1": "an Arrow IPC file (write Parquet instead)",
    b"\x00\x00\xfe\xff": "UTF-32 text",
    b"\xff\xfe\x00\x00": "UTF-32 text",
    b"\xff\xfe": "UTF-16 text",
    b"\xfe\xff": "UTF-16 text",
}
_SPREADSHEET_SUFFIXES = {".xlsx": "an Excel spreadsheet", ".xls": "an Excel spreadsheet", ".ods": "a spreadsheet"}
_JSON_SUFFIXES = {".jsonl", ".ndjson", ".json"}
_OTHER_DELIMITERS = {";": "';' (semicolons)", "\t": "tabs", "|": "'|' (pipes)"}


def columns_spec(required: Sequence[str], optional: Sequence[str] = ()) -> str:
    """The expected header as users read it, e.g. ``configuration_id,predicted_state[,predicted_peak_mib]``."""
    return ",".join(required) + "".join(f"[,{name}]" for name in optional)


def describe(path: str | os.PathLike[str]) -> str:
    """How messages name a predictions file: its path, or ``standard input`` for ``-``."""
    name = os.fspath(path)
    return "standard input" if name == STDIN else name


@dataclass(frozen=True)
class _Input:
    """Where the bytes come from (a file, or a stream held in memory) and how they are compressed."""

    label: str  # "predictions file p.csv" or "predictions from standard input"
    path: str | None
    data: pa.Buffer | None
    compression: str | None = None
    name: str | None = None  # the name a stream was given (its suffixes are a hint of its format)
    decoded: bool = False  # ``data`` holds the decompressed bytes (``compression`` says what they were)

    def open(self) -> pa.NativeFile:
        raw: pa.NativeFile = pa.OSFile(self.path) if self.path is not None else pa.BufferReader(self.data)
        return pa.CompressedInputStream(raw, self.compression) if self.compression and not self.decoded else raw

    @property
    def suffixes(self) -> list[str]:
        named = self.path or self.name
        return [s.lower() for s in Path(named).suffixes] if named else []


def read_prediction_file(
    path: str | os.PathLike[str], required: Sequence[str], optional: Sequence[str] = ()
) -> dict[str, pa.Array]:
    """The columns of a predictions file as string arrays without nulls (cells as written; a missing optional
    value is ``""``), keyed by name. ``path`` is a file in any accepted format, or ``-`` for standard input."""
    name = os.fspath(path)
    try:
        return _read_predictions(name, required, optional)
    except MemoryError:  # pyarrow's ArrowMemoryError too: an allocation failed despite the bounds
        label = "predictions from standard input" if name == STDIN else f"predictions file {name}"
        raise InputError(
            f"{label}: not enough memory to read it (predictions files are read up to {MAX_BYTES >> 20} MiB "
            f"and {MAX_ROWS:,} rows)"
        ) from None


def _read_predictions(path: str, required: Sequence[str], optional: Sequence[str]) -> dict[str, pa.Array]:
    source, head = _open_input(path)
    expected = columns_spec(required, optional)
    kind = _kind(source, head)
    if kind == "empty":
        raise InputError(f"{source.label} is empty (expected the header {expected})")
    if kind == "csv":
        names = _csv_header(source, head, expected)
        _check_names(source, names, required, optional, expected)
        table = _read_csv(source, names)
    elif kind == "parquet":
        parquet = parquet_file(source.label, source.path, source.data)
        _check_names(source, parquet.schema_arrow.names, required, optional, expected)
        table = read_parquet(source.label, parquet)
    else:
        table = _read_json_lines(source)
        _check_names(source, table.column_names, required, optional, expected)
    if table.num_rows == 0:
        raise InputError(f"{source.label} has a header but no prediction rows")
    if table.num_rows > MAX_ROWS:
        raise InputError(f"{source.label} has {table.num_rows:,} rows; at most {MAX_ROWS:,} are read")
    columns = {}
    for raw, name in zip(table.column_names, _stripped(table.column_names)):
        values = _as_strings(source, name, table.column(raw))
        if values.null_count and name in required:
            raise InputError(f"{source.label}: {values.null_count} row(s) have no {name}")
        columns[name] = pc.fill_null(values, "") if values.null_count else values
    return columns


def _stripped(names: Sequence[str]) -> list[str]:
    return [n.strip(WHITESPACE) for n in names]


def _open_input(path: str) -> tuple[_Input, bytes]:
    """The input and its first 64 KiB (decompressed), after refusing what is not readable at all."""
    if path == STDIN:
        label = "predictions from standard input"
        data = standard_input(label, refused=_refused_at_once, limit=MAX_BYTES)
        source, size = _Input(label, None, pa.py_buffer(data)), len(data)
    else:
        label = f"predictions file {path}"
        found = user_input(path, label, refused=_refused_at_once, limit=MAX_BYTES)
        data = content_of(found, label, MAX_BYTES, _refused_at_once)  # read once, its size checked on the handle
        source, size = _Input(label, None, pa.py_buffer(data), name=path), len(data)
    try:
        with source.open() as stream:
            head = stream.read(_HEAD)
    except OSError as exc:
        raise InputError(f"cannot read {source.label}: {reason(exc)}") from None
    codec = next((c for magic, c in _COMPRESSION_MAGIC.items() if head.startswith(magic)), None)
    if codec is None:
        return source, head
    data = decompressed(_Input(source.label, source.path, source.data, codec).open, source.label, codec, size)
    source = _Input(source.label, None, pa.py_buffer(data), codec, source.path or source.name, decoded=True)
    return source, data[:_HEAD]


def _refused_at_once(head: bytes) -> bool:
    """Whether the first bytes of a stream are refused whatever follows (binary data that is not compressed)."""
    if head.startswith(b"PAR1") or any(head.startswith(m) for m in _COMPRESSION_MAGIC):
        return False
    return _binary_kind(_Input("", None, None), head) is not None


def _kind(source: _Input, head: bytes) -> str:
    """``parquet``, ``jsonl``, ``csv`` or ``empty``; anything else is refused here."""
    compressed = f"{source.compression}-compressed " if source.compression else ""
    if head.startswith(b"PAR1"):
        return "parquet"
    seen = _binary_kind(source, head)
    if seen is None:
        text = _utf8_head(head)
        if text is None:
            seen = f"text that is not UTF-8 at {first_non_utf8(head)} (e.g. Latin-1; save it as UTF-8)"
        elif not text.strip():
            return "empty"
        else:
            kind = _text_kind(source, text.lstrip())
            if kind in ("jsonl", "csv"):
                return kind
            seen = kind
    raise InputError(f"{source.label} is {compressed}{seen}; accepted: {ACCEPTED}")


def _binary_kind(source: _Input, head: bytes) -> str | None:
    """What a head that is not text is (a known format, a spreadsheet, UTF-16, binary), or None for text."""
    seen = next((what for magic, what in _SEEN_MAGIC.items() if head.startswith(magic)), None)
    if seen is None:
        seen = next((what for s, what in _SPREADSHEET_SUFFIXES.items() if s in source.suffixes), None)
    if seen is None and b"\x00" in head:
        even, odd = head[0::2], head[1::2]
        seen = "UTF-16 text" if min(even.count(0), odd.count(0)) == 0 and len(head) > 3 else "binary data"
    if seen is None and _control_bytes(head) > max(2, len(head) // 100):
        seen = "binary data"
    return seen


def _text_kind(source: _Input, text: str) -> str:
    """``jsonl`` or ``csv`` for UTF-8 text that can be read, else what it was seen to be."""
    if ".parquet" in source.suffixes:
        return "text, although it is named .parquet"
    if text.startswith("["):
        return "a JSON array, not JSON Lines (one object per line, as Dataset.to_json writes)"
    if text.startswith("{"):
        return "jsonl"
    if _JSON_SUFFIXES & set(source.suffixes):
        return "text that is not JSON Lines, although it is named .json/.jsonl"
    return "csv"


def _control_bytes(head: bytes) -> int:
    return sum(head.count(bytes([b])) for b in (*range(1, 9), 11, 12, *range(14, 32), 127))


def _utf8_head(head: bytes) -> str | None:
    """``head`` decoded as UTF-8 (a character cut at the 64 KiB boundary is allowed); None if it is not UTF-8."""
    for cut in range(4 if len(head) == _HEAD else 1):
        try:
            return head[: len(head) - cut].decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError:
            continue
    return None


def _check_names(
    source: _Input, raw_names: Sequence[str], required: Sequence[str], optional: Sequence[str], expected: str
) -> None:
    names = _stripped(raw_names)
    missing = [c for c in required if c not in names]
    extra = [n for n in names if n not in required and n not in optional]
    if missing or extra or len(names) != len(set(names)):
        found = quote(",".join(names[:8])) if len(names) <= 8 else f"{len(names):,} columns: {summary(names)}"
        raise InputError(
            f"{source.label} must have exactly the columns {expected} "
            f"(found {found}" + (f"; missing {', '.join(missing)}" if missing else "") + ")"
        )


def _csv_header(source: _Input, head: bytes, expected: str) -> list[str]:
    """The header names of a CSV file (as written); a header separated by another delimiter is named as such."""
    if len(head) == _HEAD and b"\n" not in head and b"\r" not in head:
        raise InputError(
            f"{source.label}: its first line is longer than {_HEAD >> 10} KiB, so it is no header; the file must "
            f"start with the header {expected}"
        )
    lines = (_utf8_head(head) or "").splitlines()
    first = lines[0] if lines else ""
    names = _header_names(first)
    if len(names) == 1 and "," not in first:
        for delimiter, called in _OTHER_DELIMITERS.items():
            if delimiter in first:
                raise InputError(
                    f"{source.label} is separated by {called}, not commas: write a comma-separated CSV "
                    f"with the columns {expected}"
                )
    return names


def _read_csv(source: _Input, names: list[str]) -> pa.Table:
    import pyarrow.csv as pacsv

    try:
        with source.open() as stream:
            return pacsv.read_csv(
                stream,
                read_options=pacsv.ReadOptions(column_names=names, skip_rows=1, block_size=BLOCK_SIZE),
                convert_options=pacsv.ConvertOptions(
                    column_types={n: pa.string() for n in names},
                    null_values=[],
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
    except (pa.ArrowInvalid, UnicodeDecodeError, OSError) as exc:
        problem = csv_problem(source.open, block_size=BLOCK_SIZE, header_cells=len(names))
        if problem is not None:
            raise InputError(f"{source.label}: {problem}") from None
        raise InputError(f"{source.label} cannot be read as CSV ({first_line(exc, limit=160)})") from None


def _header_names(first_line_text: str) -> list[str]:
    """The column names of a CSV header line, as pyarrow reads them (quotes removed; spaces kept)."""
    import pyarrow.csv as pacsv

    if not first_line_text.strip():
        return []
    try:
        return cast("list[str]", pacsv.read_csv(pa.py_buffer(first_line_text.encode("utf-8") + b"\n")).column_names)
    except pa.ArrowInvalid:
        return [first_line_text]


def _read_json_lines(source: _Input) -> pa.Table:
    import pyarrow.json as pajson

    _check_nesting(source)
    try:
        with source.open() as stream:
            return pajson.read_json(stream, read_options=pajson.ReadOptions(block_size=BLOCK_SIZE))
    except (pa.ArrowInvalid, OSError) as exc:
        problem = json_lines_problem(source.open, block_size=BLOCK_SIZE)
        if problem is not None:
            raise InputError(f"{source.label}: {problem}") from None
        raise InputError(f"{source.label} is not valid JSON Lines ({first_line(exc, limit=160)})") from None


def _check_nesting(source: _Input) -> None:
    """Refuse a JSON Lines row nested more than :data:`~rlvrambench_hf.userfile.MAX_DEPTH` deep before pyarrow reads
    it (its parser overflows its stack past a few thousand levels); a row of plain values is not even parsed."""
    import json

    data = source.data.to_pybytes() if source.data is not None else b""
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.count(b"{") + line.count(b"[") <= 1:
            continue
        where = f"{source.label}, line {number:,}"
        try:
            value = json.loads(line)
        except RecursionError:
            raise InputError(f"{where}: nested more than {MAX_DEPTH} deep") from None
        except ValueError:  # not JSON, or an integer Python will not convert: pyarrow's reading says what
            continue
        count_nodes(value, where, None)


def _as_strings(source: _Input, name: str, values: pa.ChunkedArray) -> pa.Array:
    """A column as one string array (numbers as their text; nulls kept)."""
    kind = values.type
    if pa.types.is_dictionary(kind):
        values, kind = values.cast(kind.value_type), kind.value_type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return one_chunk(values.cast(pa.string()))
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_null(kind):
        return one_chunk(values.cast(pa.string()))
    raise InputError(f"{source.label}: column {name} holds {kind} values, not text or numbers")
