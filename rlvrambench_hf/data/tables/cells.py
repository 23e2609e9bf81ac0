"""Text cells to typed columns: the one conversion every table of the release goes through, CSV or JSON.

A blank or the literal ``nan`` is null; any other value must fit its column's kind exactly, or the read fails with
a one-line :class:`~rlvrambench_hf.errors.SchemaError` naming the file, column, row and value. JSON values are
first written as the release's CSV files would hold them (:func:`text_cell`), so one set of rules types both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...arrow import string_array
from ...errors import SchemaError, quote, summary
from ..schema.kinds import LIST_SEPARATOR
from ..schema.spec import Column, ConfigSpec

NULL_TOKENS = ("", "nan")


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


def typed_records(records: Sequence[Mapping[str, Any]], columns: Sequence[Column], name: str) -> pa.Table:
    """Records (JSON or YAML values; an absent key is null) as a table of ``columns``' types."""
    arrays = [cast_column(string_array([text_cell(r.get(c.name)) for r in records]), c, name) for c in columns]
    return pa.Table.from_arrays(arrays, schema=pa.schema([pa.field(c.name, c.arrow_type) for c in columns]))


def check_header(found: Sequence[str], spec: ConfigSpec, name: str, *, ordered: bool = True) -> None:
    """Refuse columns (or JSON members) that are not exactly the registry's; ``ordered`` also asks for its order
    (a CSV header; the members of a JSON object have none)."""
    expected = spec.column_names
    if list(found) == expected or (not ordered and sorted(found) == sorted(expected)):
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


def cast_column(values: pa.Array | pa.ChunkedArray, column: Column, name: str) -> pa.ChunkedArray:
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
