"""The Parquet files of a release: label columns hold their class names, so every engine reads names.

DuckDB, Polars, pandas and pyarrow read a label column as text (``within_margin``, null where the release has no
label); plain ``datasets.load_dataset`` reads the same column as the card's ``ClassLabel``, because the card's
``dataset_info`` states the features and ``datasets`` casts the names to class indices on load (in memory and
streaming). The files carry no ``datasets`` features of their own: ``datasets`` ignores a ``ClassLabel`` in a
file's metadata over a text column, and features that said "text" would contradict the card. Columns whose values
repeat (labels above all) are dictionary-encoded in the Parquet file, the others written plain.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..arrow import string_array
from ..data.schema.kinds import LABEL
from ..data.schema.spec import Column, ConfigSpec
from ..errors import InputError

#: The key of the schema metadata where ``datasets`` keeps features (a release's files leave it to the card).
FEATURES_METADATA_KEY = b"huggingface"
#: Dictionary encoding pays when a column holds at most this share of distinct values among its non-null cells.
DICTIONARY_SHARE = 0.5


def release_type(column: Column) -> pa.DataType:
    """The Arrow type of ``column`` in a release's Parquet file: text for labels, the registry's type otherwise."""
    return pa.string() if column.type is LABEL else column.arrow_type


def release_schema(spec: ConfigSpec) -> pa.Schema:
    """The Arrow schema of ``spec``'s Parquet file in a release (no metadata)."""
    return pa.schema([pa.field(c.name, release_type(c)) for c in spec.columns])


def dictionary_columns(table: pa.Table) -> list[str]:
    """The columns whose values repeat enough for a Parquet dictionary to make the file smaller."""
    chosen = []
    for name in table.column_names:
        values = table.column(name)
        if pa.types.is_list(values.type):
            values = pc.list_flatten(values)
        present = values.drop_null()
        if len(present) and len(pc.unique(present)) <= DICTIONARY_SHARE * len(present):
            chosen.append(name)
    return chosen


def write_release_parquet(table: pa.Table, spec: ConfigSpec, path: Path) -> None:
    """Write ``table`` (labels decoded to names, see :func:`~..data.tables.reader.decode_labels`) as ``spec``'s
    release file, with fixed options so that the same table always gives the same bytes."""
    if table.schema.remove_metadata() != release_schema(spec):
        raise InputError(f"config {spec.name}: the table does not have the release's Arrow schema")
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        table.replace_schema_metadata(None),
        path,
        compression="snappy",
        use_dictionary=dictionary_columns(table),
    )


def storage_table(table: pa.Table, spec: ConfigSpec) -> pa.Table:
    """A release table as ``datasets`` holds it after loading: each label name replaced by its class index (with no
    validity buffer when there is no null, as ``datasets`` builds it), so that ``nbytes`` is the size it reports."""
    for column in spec.label_columns:
        i = table.schema.get_field_index(column.name)
        names = table.column(column.name).combine_chunks()
        indices = pc.index_in(names, value_set=string_array(column.labels)).cast(pa.int64())
        if indices.null_count == 0:
            indices = pa.Array.from_buffers(pa.int64(), len(indices), [None, indices.buffers()[1]], 0, indices.offset)
        table = table.set_column(i, column.name, indices)
    return table


def layout_problems(table: pa.Table, spec: ConfigSpec, rel: str) -> list[str]:
    """What is wrong with the schema of a release file ``rel`` read as ``table`` (empty: the release layout)."""
    metadata = table.schema.metadata or {}
    problems = []
    if FEATURES_METADATA_KEY in metadata:
        problems.append(f"{rel}: embeds datasets features in its schema metadata; the card's dataset_info states them")
    expected = release_schema(spec)
    if table.schema.names != expected.names:
        problems.append(f"{rel}: columns differ from the registry's for config {spec.name}")
        return problems
    for field in expected:
        found = table.schema.field(field.name).type
        if found != field.type:
            what = "class names as text" if spec.column(field.name).type is LABEL else field.type
            problems.append(f"{rel}: column {field.name} is {found}, the release stores {what}")
    return problems


def content_problems(table: pa.Table, typed: pa.Table, spec: ConfigSpec, rel: str) -> list[str]:
    """Every column of the release file ``rel`` (read as ``table``) against the typed table of the file beside it
    (``typed``, labels decoded): label values within the class names, nulls where the typed table has nulls, and
    equal values. Empty when they agree."""
    if table.num_rows != typed.num_rows:
        return [f"{rel}: {table.num_rows} rows, the typed {spec.path} has {typed.num_rows}"]
    problems = []
    for column in spec.columns:
        found, expected = table.column(column.name), typed.column(column.name)
        if column.type is LABEL:
            outside = pc.and_(pc.is_valid(found), pc.invert(pc.is_in(found, value_set=string_array(column.labels))))
            count = pc.sum(outside).as_py() or 0
            if count:
                first = str(found.filter(outside)[0].as_py())
                first = first if len(first) <= 60 else first[:60] + "…"
                problems.append(
                    f"{rel}: column {column.name}: {count} value(s) outside its class names, first {first!r}"
                )
                continue
        nulls = _null_problems(found, expected)
        if nulls:
            problems.append(f"{rel}: column {column.name}: {nulls} where the typed {spec.path} has {_other(nulls)}")
        elif not found.equals(expected):
            problems.append(f"{rel}: column {column.name}: {_differing(found, expected)} from the typed {spec.path}")
    return problems


def _differing(found: pa.ChunkedArray, expected: pa.ChunkedArray) -> str:
    """How many values of two columns with the same nulls differ (lists are compared as wholes)."""
    if pa.types.is_list(found.type) and pa.types.is_list(expected.type):
        count = sum(a != b for a, b in zip(found.to_pylist(), expected.to_pylist()))
    elif found.type == expected.type:
        count = pc.sum(pc.not_equal(found, expected)).as_py() or 0
    else:
        return "values of another type differ"
    return f"{count} value(s) differ"


def _null_problems(found: pa.ChunkedArray, expected: pa.ChunkedArray) -> str:
    """``null in N row(s)`` or ``a value in N row(s)`` when the nulls of ``found`` are not those of ``expected``."""
    missing = pc.sum(pc.and_(pc.is_null(found), pc.is_valid(expected))).as_py() or 0
    if missing:
        return f"null in {missing} row(s)"
    extra = pc.sum(pc.and_(pc.is_valid(found), pc.is_null(expected))).as_py() or 0
    return f"a value in {extra} row(s)" if extra else ""


def _other(nulls: str) -> str:
    return "a value" if nulls.startswith("null") else "null"
