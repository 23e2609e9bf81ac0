"""Writing a typed table to CSV, Parquet (features embedded) or JSON lines, atomically."""

from __future__ import annotations

import json
import os
from typing import cast

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ...errors import InputError, quote
from ..schema.spec import ConfigSpec
from .output import atomic_output
from .reader import decode_labels

#: The export formats, as the command line names them.
FORMATS: tuple[str, ...] = ("csv", "parquet", "jsonl")


def with_features_metadata(table: pa.Table, spec: ConfigSpec) -> pa.Table:
    """``table`` with the registry's ``datasets.Features`` in its schema metadata, exactly as ``datasets``
    writes it, so that Parquet readers (plain ``datasets.load_dataset`` among them) restore the features."""
    return table.replace_schema_metadata(spec.features.arrow_schema.metadata)


def _release_text(table: pa.Table, spec: ConfigSpec) -> pa.Table:
    """The columns as the release's CSV files write them (see :meth:`Kind.release_text`)."""
    for i, column in enumerate(spec.columns):
        table = table.set_column(i, column.name, column.type.release_text(table.column(i)))
    return table


def export_table(spec: ConfigSpec, table: pa.Table, fmt: str, output: str | os.PathLike[str]) -> int:
    """Write ``table`` (storage types) as ``fmt``; CSV keeps the release's conventions (blank null, ``;`` lists)."""
    if fmt == "parquet":
        with atomic_output(output, "wb") as handle:
            pq.write_table(with_features_metadata(table, spec), handle)
    elif fmt == "csv":
        decoded = _release_text(decode_labels(table, spec), spec)
        with atomic_output(output, "wb") as handle:
            pacsv.write_csv(decoded, handle, pacsv.WriteOptions(quoting_style="needed"))
    elif fmt == "jsonl":
        with atomic_output(output, "w") as handle:
            for row in decode_labels(table, spec).to_pylist():
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    else:
        raise InputError(f"unknown export format {quote(fmt)}; use {', '.join(FORMATS)}")
    return cast("int", table.num_rows)
