"""How much of a predictions file is read (:mod:`.predictions`), decided before anything is materialised: what
a file holds, or a pipe streams, or compressed data decompresses to, at most :data:`MAX_BYTES`; decompression read
in 1 MiB chunks and stopped there, or at :data:`MAX_RATIO` times the compressed size beyond the first 8 MiB (a
decompression bomb); a Parquet file's footer checked before any column is read (at most :data:`MAX_ROWS` rows and
:data:`MAX_BYTES` of declared column data); then the Parquet table itself, with ``datasets``' ``ClassLabel`` codes
decoded."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputError, first_line

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow.parquet as pq

#: The most bytes a predictions file may hold once decompressed (the largest task has 400 rows, a few KiB).
MAX_BYTES = 64 << 20
#: The most rows a predictions file may have (or a Parquet file declare).
MAX_ROWS = 1_000_000
#: The largest ratio of decompressed to compressed size, beyond the first :data:`_RATIO_FREE` bytes.
MAX_RATIO = 1000
_RATIO_FREE = 8 << 20
_CHUNK = 1 << 20


def decompressed(open_stream: Callable[[], pa.NativeFile], label: str, codec: str, size: int) -> bytes:
    """The decompressed bytes of ``label`` (``size`` bytes of ``codec`` data that ``open_stream`` decompresses),
    read in bounded chunks: refused beyond :data:`MAX_BYTES`, or beyond :data:`MAX_RATIO` times ``size`` once past
    the first 8 MiB."""
    out = bytearray()
    try:
        with open_stream() as stream:
            while block := stream.read(_CHUNK):
                out += block
                if len(out) > MAX_BYTES:
                    raise InputError(
                        f"{label} is {codec}-compressed data that decompresses to more than "
                        f"{MAX_BYTES >> 20} MiB, the most a predictions file may hold"
                    )
                if len(out) > _RATIO_FREE and len(out) > MAX_RATIO * max(size, 1):
                    raise InputError(
                        f"{label} is {codec}-compressed data that decompresses more than {MAX_RATIO:,}-fold "
                        f"({size:,} bytes to over {len(out):,}): refused as a decompression bomb"
                    )
    except MemoryError:
        raise
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"{label} is not valid {codec} data ({first_line(exc, limit=160)})") from None
    return bytes(out)


def parquet_file(label: str, path: str | None, data: pa.Buffer | None) -> pq.ParquetFile:
    """The Parquet file at ``path`` (or in ``data``), its footer checked (:func:`check_declared`)."""
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path if path is not None else pa.BufferReader(data))
    except MemoryError:
        raise
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{label} is not a readable Parquet file: {first_line(exc, limit=160)}") from None
    check_declared(label, parquet.metadata)
    return parquet


def check_declared(label: str, metadata: pq.FileMetaData) -> None:
    """Refuse a Parquet file whose footer declares more rows or column data than is read, before reading any."""
    groups = [metadata.row_group(i) for i in range(metadata.num_row_groups)]
    rows = max(metadata.num_rows, sum(g.num_rows for g in groups), 0)
    if rows > MAX_ROWS or any(g.num_rows < 0 for g in groups):
        raise InputError(f"{label} declares {rows:,} rows; at most {MAX_ROWS:,} are read")
    declared = 0
    for group in groups:
        for index in range(group.num_columns):
            column = group.column(index)
            declared += max(column.total_uncompressed_size, column.total_compressed_size, 0)
    if declared > MAX_BYTES:
        raise InputError(
            f"{label} declares {declared / 2**20:,.0f} MiB of column data; at most {MAX_BYTES >> 20} MiB are read"
        )


def read_parquet(label: str, parquet: pq.ParquetFile) -> pa.Table:
    """The table of ``parquet`` (its ``ClassLabel`` columns decoded)."""
    try:
        table = parquet.read()
    except MemoryError:
        raise
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{label} is not a readable Parquet file: {first_line(exc, limit=160)}") from None
    return decode_class_labels(table)


def decode_class_labels(table: pa.Table) -> pa.Table:
    """Integer columns that ``datasets`` describes as ``ClassLabel`` (in the schema metadata) as label names."""
    try:  # a description nested too deeply, or of integers too long, describes nothing: the codes stay numbers
        features = json.loads((table.schema.metadata or {}).get(b"huggingface", b"{}"))["info"]["features"]
    except (KeyError, TypeError, ValueError, RecursionError):
        return table
    for index, name in enumerate(table.column_names):
        feature = features.get(name) if isinstance(features, dict) else None
        column = table.column(name)
        if isinstance(feature, dict) and feature.get("_type") == "ClassLabel" and pa.types.is_integer(column.type):
            labels = pa.array([str(n) for n in feature.get("names") or []], pa.string())
            if pc.max(column).as_py() is not None and pc.max(column).as_py() >= len(labels):
                continue  # not codes of these names: left as numbers, refused as labels later
            table = table.set_column(index, name, pc.take(labels, column))
    return table
