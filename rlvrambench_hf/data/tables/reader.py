"""Typed tables: read a registry entry's file into a pyarrow Table of exactly the registry's types.

Every cell of a CSV file is read as text by ``pyarrow.csv`` and converted in one place (:func:`.cells.cast_column`):
a blank or the literal ``nan`` becomes null, and any other value must fit its declared type exactly or the read
fails with a one-line :class:`~rlvrambench_hf.errors.SchemaError` naming the file, column, line and value. Label
columns are stored as int64 class indices, as ``datasets`` stores a ``ClassLabel``; :func:`decode_labels` turns
them back into names for the cores.

A registry entry in one of the JSON layouts (a ``{key: record}`` mapping, a list of records, one record) is read by
the same function (:mod:`.jsonfile`): each value becomes the text the release's CSV files would hold
(:func:`.cells.text_cell`) and then goes through the same conversion, so one set of rules types every layout.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ...arrow import string_array
from ...data.sources.resolve import SourceLike
from ...errors import MissingFileError, SchemaError, first_line
from ..schema.registry import get_spec
from ..schema.spec import JSON_LAYOUTS, ConfigSpec
from ..sources.base import Source
from ..sources.resolve import open_source
from .cells import NULL_TOKENS, cast_column, check_header, text_cell, typed_records
from .jsonfile import read_json_table

#: The longest line (bytes) a release or user CSV file may have.
CSV_BLOCK_SIZE = 1 << 24

__all__ = [
    "NULL_TOKENS",
    "cast_column",
    "check_header",
    "config_file",
    "decode_labels",
    "header_cells",
    "load_table",
    "read_typed_file",
    "text_cell",
    "typed_records",
]


def read_typed_file(path: str | os.PathLike[str] | bytes, spec: ConfigSpec, *, name: str | None = None) -> pa.Table:
    """Read ``path`` (or the bytes of a file) as the table ``spec`` describes (a CSV file, or JSON when the spec's
    layout says so); ``name`` is how errors refer to the file. A CSV file pyarrow refuses is diagnosed by
    :func:`~.diagnose.csv_problem` (the line that is not UTF-8, the row with the wrong number of cells, ...)."""
    name = name or spec.path
    if spec.layout in JSON_LAYOUTS:
        return read_json_table(path, spec, name)
    convert = pacsv.ConvertOptions(
        column_types={c.name: pa.string() for c in spec.columns},
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
        null_values=[],
    )
    opener: Callable[[], Any] = (
        (lambda: pa.BufferReader(path)) if isinstance(path, bytes) else (lambda: pa.OSFile(os.fspath(path)))
    )
    try:
        with opener() as stream:
            read = pacsv.ReadOptions(block_size=CSV_BLOCK_SIZE)
            raw = pacsv.read_csv(stream, read_options=read, convert_options=convert)
            found = raw.column_names  # names that are not UTF-8 fail here
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        from .diagnose import csv_problem

        problem = csv_problem(opener, block_size=CSV_BLOCK_SIZE, header_cells=header_cells(opener))
        detail = problem or first_line(exc)
        raise SchemaError(f"{name}: cannot be read as CSV: {detail}", path=name, config=spec.name) from None
    except OSError as exc:
        from ...userfile import reason

        raise SchemaError(f"{name}: cannot be read: {reason(exc)}", path=name, config=spec.name) from None
    check_header(found, spec, name)
    columns = [cast_column(raw.column(c.name), c, name) for c in spec.columns]
    return pa.Table.from_arrays(columns, schema=spec.arrow_schema)


def header_cells(opener: Callable[[], pa.NativeFile]) -> int:
    """The number of cells of a CSV file's first line (as pyarrow reads it: quotes respected)."""
    with opener() as stream:
        first = io.BufferedReader(stream).readline(CSV_BLOCK_SIZE)
    try:
        return len(pacsv.read_csv(pa.py_buffer(first)).column_names) if first.strip() else 0
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return 0


def decode_labels(table: pa.Table, spec: ConfigSpec) -> pa.Table:
    """``table`` with each label column's class indices replaced by their names."""
    for column in spec.label_columns:
        i = table.schema.get_field_index(column.name)
        names = string_array(column.labels)
        table = table.set_column(i, column.name, pc.take(names, table.column(column.name)))
    return table


def load_table(
    config: str,
    source: SourceLike = None,
    revision: str | None = None,
    *,
    decode: bool = False,
) -> pa.Table:
    """The verified, typed table of ``config`` (no ``datasets`` import: the fast path of the cores)."""
    spec = get_spec(config)
    table = read_typed_file(config_file(open_source(source, revision), spec), spec)
    return decode_labels(table, spec) if decode else table


def config_file(source: Source, spec: ConfigSpec) -> Path:
    """Verified local path of ``spec``'s file; a missing file is named with its config and revision."""
    from .kept import CARDS

    source.check_card(CARDS)
    try:
        return source.path(spec.path)
    except MissingFileError as exc:
        raise MissingFileError(f"config {spec.name}: {exc}", config=spec.name, **exc.fields) from None
