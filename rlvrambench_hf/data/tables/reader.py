"""Typed tables: read a registry entry's CSV file into a pyarrow Table of exactly the registry's types.

Every cell is read as text by ``pyarrow.csv`` and converted in one place (:func:`cast_column`): a blank or the
literal ``nan`` becomes null, and any other value must fit its declared type exactly or the read fails with a
one-line :class:`~rlvrambench_hf.errors.SchemaError` naming the file, column, line and value. Label columns are
stored as int64 class indices, as ``datasets`` stores a ``ClassLabel``; :func:`decode_labels` turns them back
into names for the cores.

A registry entry whose layout is :data:`~.registry.JSON_MAPPING` (a JSON object ``{key: record}``) is read by the
same function: each value becomes the text the release's CSV files would hold (:func:`text_cell`) and then goes
through the same conversion, so one set of rules types both layouts.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ...data.sources.resolve import SourceLike
from ...errors import MissingFileError, SchemaError, first_line, quote, summary
from ..schema.kinds import LIST_SEPARATOR
from ..schema.registry import get_spec
from ..schema.spec import JSON_MAPPING, Column, ConfigSpec
from ..sources.base import Source
from ..sources.resolve import open_source
from .arrow import string_array

NULL_TOKENS = ("", "nan")
#: The longest line (bytes) a release or user CSV file may have.
CSV_BLOCK_SIZE = 1 << 24


def read_typed_file(path: str | os.PathLike | bytes, spec: ConfigSpec, *, name: str | None = None) -> pa.Table:
    """Read ``path`` (or the bytes of a file) as the table ``spec`` describes (a CSV file, or a JSON mapping when
    the spec's layout says so); ``name`` is how errors refer to the file. A CSV file pyarrow refuses is diagnosed
    by :func:`~.diagnose.csv_problem` (the line that is not UTF-8, the row with the wrong number of cells, ...)."""
    name = name or spec.path
    if spec.layout == JSON_MAPPING:
        return _read_json_mapping(path, spec, name)
    convert = pacsv.ConvertOptions(
        column_types={c.name: pa.string() for c in spec.columns},
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
        null_values=[],
    )
    opener = (lambda: pa.BufferReader(path)) if isinstance(path, bytes) else (lambda: pa.OSFile(os.fspath(path)))
    try:
        with opener() as stream:
            read = pacsv.ReadOptions(block_size=CSV_BLOCK_SIZE)
            raw = pacsv.read_csv(stream, read_options=read, convert_options=convert)
            found = raw.column_names  # names that are not UTF-8 fail here
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        from .diagnose import csv_problem

        problem = csv_problem(opener, block_size=CSV_BLOCK_SIZE, header_cells=_header_cells(opener))
        detail = problem or first_line(exc)
        raise SchemaError(f"{name}: cannot be read as CSV: {detail}", path=name, config=spec.name) from None
    except OSError as exc:
        raise SchemaError(f"{name}: cannot be read: {first_line(exc)}", path=name, config=spec.name) from None
    check_header(found, spec, name)
    columns = [cast_column(raw.column(c.name), c, name) for c in spec.columns]
    return pa.Table.from_arrays(columns, schema=spec.arrow_schema)


def _header_cells(opener: Callable[[], pa.NativeFile]) -> int:
    """The number of cells of a CSV file's first line (as pyarrow reads it: quotes respected)."""
    with opener() as stream:
        first = io.BufferedReader(stream).readline(CSV_BLOCK_SIZE)
    try:
        return len(pacsv.read_csv(pa.py_buffer(first)).column_names) if first.strip() else 0
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return 0


def text_cell(value: object) -> str:
    """A JSON or YAML value as the release's CSV files write it: null blank, booleans ``True``/``False``, lists
    ``;``-joined and mappings as ``;``-joined ``key=value`` pairs."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, Mapping):
        return LIST_SEPARATOR.join(f"{k}={text_cell(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return LIST_SEPARATOR.join(text_cell(v) for v in value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def typed_records(records: Sequence[Mapping], columns: Sequence[Column], name: str) -> pa.Table:
    """Records (JSON or YAML values; an absent key is null) as a table of ``columns``' types."""
    arrays = [cast_column(string_array([text_cell(r.get(c.name)) for r in records]), c, name) for c in columns]
    return pa.Table.from_arrays(arrays, schema=pa.schema([pa.field(c.name, c.arrow_type) for c in columns]))


def _read_json_mapping(path: str | os.PathLike | bytes, spec: ConfigSpec, name: str) -> pa.Table:
    from .userfile import parse_json

    try:
        content = path if isinstance(path, bytes) else Path(path).read_bytes()
    except OSError as exc:
        raise SchemaError(f"{name}: cannot be read: {first_line(exc)}", path=name, config=spec.name) from None
    try:
        data = parse_json(content, name, SchemaError)
    except SchemaError as exc:
        raise exc.with_fields(path=name, config=spec.name) from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise SchemaError(
            f"{name}: expected a JSON object mapping each {spec.keys[0]} to a record", path=name, config=spec.name
        )
    key = spec.keys[0]
    for mapped, record in data.items():
        check_header(list(record), spec, f"{name}: record {quote(mapped)}")
        if record[key] != mapped:
            raise SchemaError(f"{name}: record {quote(mapped)} has {key} {quote(record[key])}", path=name, column=key)
    return typed_records(list(data.values()), spec.columns, name)


def check_header(found: list[str], spec: ConfigSpec, name: str) -> None:
    expected = spec.column_names
    if found == expected:
        return
    missing = [c for c in expected if c not in found]
    extra = [c for c in found if c not in expected]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing column(s) {summary(missing, shown=6, quoted=False)}")
        if extra:
            parts.append(f"unexpected column(s) {summary(extra, shown=6, quoted=False)}")
        raise SchemaError(
            f"{name}: schema drift for config {spec.name}: {'; '.join(parts)}", path=name, config=spec.name
        )
    raise SchemaError(
        f"{name}: columns of config {spec.name} are not in the registry's order", path=name, config=spec.name
    )


def cast_column(values: pa.ChunkedArray, column: Column, name: str) -> pa.ChunkedArray:
    """Convert a text column to ``column``'s type; blanks and ``nan`` become null, anything unfit fails."""
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    is_null = pc.is_in(values, value_set=string_array(NULL_TOKENS))
    text = pc.if_else(is_null, pa.nulls(1, pa.string())[0], values)
    kind = column.type
    unfit = kind.unfit(text, column.labels)
    if unfit is not None:
        what = f"not one of its labels ({', '.join(column.labels)})" if column.labels else f"not a valid {kind.name}"
        _fail_where(unfit, text, column, name, what)
    return pa.chunked_array([kind.parse(text, column.labels)])


def _fail_where(bad: pa.Array, text: pa.Array, column: Column, name: str, what: str) -> None:
    if pc.any(bad).as_py():  # nulls are skipped
        bad = pc.fill_null(bad, False)
        row = pc.index(bad, True).as_py()
        count = pc.sum(bad).as_py()
        more = f" ({count} such values)" if count > 1 else ""
        raise SchemaError(
            f"{name}: column {quote(column.name)}, data row {row + 1}: value {quote(text[row].as_py())} is "
            f"{what}{more}",
            path=name,
            column=column.name,
        )


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
    source.check_card()
    try:
        return source.path(spec.path)
    except MissingFileError as exc:
        raise MissingFileError(f"config {spec.name}: {exc}", config=spec.name, **exc.fields) from None
