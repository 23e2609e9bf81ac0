"""Reading prediction files: one reader and one set of rules for every scoring feature.

A predictions file is a UTF-8 CSV with a header naming exactly the required columns (in any order) and,
optionally, some optional ones. Tolerated, by design: a UTF-8 byte-order mark, Windows line ends, blank lines,
and spaces or tabs around cells (the scorers strip them). Not tolerated: other encodings, unknown or repeated
columns, a missing required column, an empty file or a header without rows. Each problem is a one-line
:class:`~rlvrambench_hf.errors.InputError`. Only the first 64 KiB are read before the header is checked, so a
huge file with a wrong header fails at once.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence

import pyarrow as pa

from ..data.arrowtools import one_chunk
from ..errors import InputError, first_line

#: Characters stripped around cells and header names.
WHITESPACE = " \t"


def columns_spec(required: Sequence[str], optional: Sequence[str] = ()) -> str:
    """The expected header as users read it, e.g. ``configuration_id,predicted_state[,predicted_peak_mib]``."""
    return ",".join(required) + "".join(f"[,{name}]" for name in optional)


def read_prediction_file(
    path: str | os.PathLike, required: Sequence[str], optional: Sequence[str] = ()
) -> dict[str, pa.Array]:
    """The columns of a predictions file as string arrays (cells as written, nothing stripped), keyed by name."""
    import pyarrow.csv as pacsv

    name = os.fspath(path)
    expected = columns_spec(required, optional)
    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 16)
    except OSError as exc:
        raise InputError(f"cannot read predictions file {name}: {exc.strerror or exc}") from None
    text = head.decode("utf-8", errors="replace").removeprefix("\ufeff")
    if not text.strip():
        raise InputError(f"predictions file {name} is empty (expected the header {expected})")
    header = next(csv.reader(io.StringIO(text.splitlines()[0])), [])  # a blank first line has no names
    names = [h.strip(WHITESPACE) for h in header]
    missing = [c for c in required if c not in names]
    extra = [n for n in names if n not in required and n not in optional]
    if missing or extra or len(names) != len(set(names)):
        found = ",".join(names)
        raise InputError(
            f"predictions file {name} must have exactly the columns {expected} "
            f"(found {found!r}" + (f"; missing {', '.join(missing)}" if missing else "") + ")"
        )
    try:
        table = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(column_names=names, skip_rows=1, block_size=1 << 24),
            convert_options=pacsv.ConvertOptions(
                column_types={n: pa.string() for n in names},
                null_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        raise InputError(f"predictions file {name} is not a valid UTF-8 CSV: {first_line(exc)}") from None
    if table.num_rows == 0:
        raise InputError(f"predictions file {name} has a header but no prediction rows")
    return {n: one_chunk(table.column(n)) for n in names}
