"""Plans written in the dataset's own vocabulary: a CSV with columns of ``benchmark/configurations.csv`` (one row
per plan; ``targets.csv`` itself is one), a YAML or JSON mapping of settings, a list of them or
``{"configurations": [...]}``, or the same as Python mappings.

A CSV is read by ``pyarrow.csv`` as text and typed column by column (:func:`~.checks.typed_from_text`): 100,000
plans keep no Python object per plan. YAML and JSON values are typed by the same rules from their text, so that
``"2"`` is the count 2 as in a CSV while ``"two"``, ``2.5``, ``.nan`` or ``2**70`` are refused. Beside those
columns a plan may carry the memory knobs of :mod:`..plan.knobs` (``gradient_checkpointing``, ``layered_summon``,
``lora_rank``, ``rollout_engine``, ...), typed as the knob is. An unknown column is refused; a blank cell or a null
is a setting not given.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from ...data.schema.spec import ConfigSpec
from ...data.tables.diagnose import csv_problem
from ...data.tables.reader import header_cells
from ...errors import InputError, first_line, quote
from ...userfile import (
    MAX_CSV_BYTES,
    check_text,
    check_text_file,
    head_of,
    looks_structured,
    opened,
    parse_structured,
    reason,
    text_of,
)
from ..plan.knobs import KNOB_BY_NAME, KNOBS
from ..plan.plans import RowLabels
from .checks import Where, typed_from_text

SUFFIXES = (".yaml", ".yml", ".json", ".csv")
PlannedLike = str | os.PathLike[str] | Mapping[str, Any] | Sequence[Mapping[str, Any]]


def read_planned(planned: PlannedLike, spec: ConfigSpec) -> tuple[pa.Table, Sequence[str], dict[str, str]]:
    """The typed table of the plans (``spec``'s columns, null where not given), each plan's origin and how each
    setting is named in errors. A pipe (``<(...)``, ``/dev/stdin``) is read once and recognised by its content."""
    if not isinstance(planned, (str, os.PathLike)):
        return _from_records(planned, "planned configurations", spec)
    path, name = Path(planned), str(planned)
    suffix = path.suffix.lower()
    found = opened(path, "planned configurations", MAX_CSV_BYTES)
    if isinstance(found, bytes) or not suffix:  # a pipe, /dev/stdin: recognised by its content
        suffix = ".yaml" if looks_structured(head_of(found, name)) else ".csv"
    if suffix not in SUFFIXES:
        raise InputError(f"planned configurations {quote(name)}: use a {', '.join(SUFFIXES)} file")
    if suffix == ".csv":
        return _read_csv(found, name, spec)
    return _from_records(parse_structured(text_of(found, name), name, suffix), name, spec)


def _from_records(records: object, name: str, spec: ConfigSpec) -> tuple[pa.Table, Sequence[str], dict[str, str]]:
    if isinstance(records, Mapping):
        records = records.get("configurations", [records])
    if isinstance(records, (str, bytes)) or not isinstance(records, Sequence) or not records:
        raise InputError(f"{name}: expected a mapping of settings, a list of them, or a CSV with one row per plan")
    bad = next((i for i, r in enumerate(records) if not isinstance(r, Mapping)), None)
    if bad is not None:
        raise InputError(f"{name}: plan {bad + 1} is not a mapping of settings")
    _refuse_unknown({str(k) for r in records for k in r}, name, spec)
    origins = [name] if len(records) == 1 else [f"{name} plan {i + 1}" for i in range(len(records))]
    _refuse_collections(records, origins, spec)
    where = Where(origins.__getitem__, {})
    from ...arrow import string_array
    from ...data.tables.reader import text_cell

    present = [c for c in spec.column_names if any(c in r for r in records)]
    raw = pa.table({c: string_array([text_cell(r.get(c)) for r in records]) for c in present})
    knobs = [k.name for k in KNOBS if any(k.name in r for r in records)]
    raw_knobs = pa.table({c: string_array([text_cell(r.get(c)) for r in records]) for c in knobs})
    return _with_knobs(typed_from_text(raw, spec.columns, where), raw_knobs, origins.__getitem__), origins, {}


def _refuse_collections(records: Sequence[Mapping[str, Any]], origins: Sequence[str], spec: ConfigSpec) -> None:
    """A list or mapping where a setting takes one value (``gpu_count: [2]``) is refused, not read as its items."""
    single = {c.name for c in spec.columns if c.kind != "string_list"}
    for origin, record in zip(origins, records):
        for key, value in record.items():
            if key in single and isinstance(value, (Mapping, list, tuple, set)):
                raise InputError(f"{origin}: {key}: {quote(value)} is a {type(value).__name__}, not one value")


def _refuse_unknown(names: set[str], name: str, spec: ConfigSpec) -> None:
    unknown = sorted(names - set(spec.column_names) - set(KNOB_BY_NAME))
    if unknown:
        shown = ", ".join(map(repr, unknown[:5])) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise InputError(f"{name}: unknown setting(s) {shown} (use the columns of {spec.path})")


def _read_csv(found: str | bytes, name: str, spec: ConfigSpec) -> tuple[pa.Table, Sequence[str], dict[str, str]]:
    """The plans of a CSV: a regular file's path (its text checked in chunks) or the bytes a pipe streamed."""
    import pyarrow.csv as pacsv

    if isinstance(found, bytes):
        check_text(found, name)
    else:
        check_text_file(Path(found), name)
    opener: Callable[[], Any] = (
        (lambda: pa.BufferReader(found)) if isinstance(found, bytes) else (lambda: pa.OSFile(found))
    )
    options = pacsv.ConvertOptions(
        column_types={c: pa.string() for c in spec.column_names},
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
        null_values=[],
    )
    read = pacsv.ReadOptions(use_threads=False)  # one thread: as fast on two cores, and a third less memory
    try:
        with opener() as stream:
            raw = pacsv.read_csv(stream, read_options=read, convert_options=options)
    except pa.ArrowInvalid as exc:  # the package's diagnosis first (the ragged row, the unclosed quote, ...)
        problem = csv_problem(opener, block_size=read.block_size, header_cells=header_cells(opener))
        raise InputError(f"{name}: cannot be read as CSV: {problem or first_line(exc)}") from None
    except OSError as exc:
        raise InputError(f"{name}: cannot be read: {reason(exc)}") from None
    header = raw.column_names
    duplicated = sorted({c for c in header if header.count(c) > 1})
    if duplicated:
        raise InputError(f"{name}: column(s) {', '.join(map(repr, duplicated))} appear more than once")
    _refuse_unknown(set(header), name, spec)
    if raw.num_rows == 0:
        raise InputError(f"{name}: no plans (a header and no rows)")
    origins = RowLabels(name, raw.num_rows)
    written = {c: f"column {c!r}" for c in header}
    knobs = [c for c in header if c in KNOB_BY_NAME]
    table = typed_from_text(raw.drop_columns(knobs), spec.columns, Where(origins.__getitem__, written))
    return _with_knobs(table, raw.select(knobs), origins.__getitem__), origins, written


_TRUE, _FALSE = ["true", "1", "yes"], ["false", "0", "no"]


def _with_knobs(table: pa.Table, raw: pa.Table, origin: object) -> pa.Table:
    """``table`` with the knob columns of ``raw`` (text) typed as :mod:`..plan.knobs` types them; a value that is not of
    the knob's type is one line naming the plan, the knob and the value."""
    import numpy as np
    import pyarrow.compute as pc

    for name in raw.column_names:
        knob = KNOB_BY_NAME[name]
        text = pc.utf8_trim_whitespace(raw.column(name).combine_chunks())
        blank = pc.fill_null(pc.equal(text, ""), True)
        lower = pc.utf8_lower(text)
        if knob.type == pa.bool_():
            good = pc.or_(pc.is_in(lower, pa.array(_TRUE)), pc.is_in(lower, pa.array(_FALSE)))
            typed = pc.if_else(blank, pa.scalar(None, pa.bool_()), pc.is_in(lower, pa.array(_TRUE)))
        elif knob.type == pa.int64():
            good = pc.match_substring_regex(text, r"^[+-]?[0-9]{1,18}$")
            typed = pc.cast(pc.if_else(pc.or_(blank, pc.invert(good)), pa.scalar(None, pa.string()), text), pa.int64())
        elif knob.type == pa.float64():
            good = pc.match_substring_regex(
                text, r"^[+-]?([0-9]{1,18}\.?[0-9]{0,18}|\.[0-9]{1,18})([eE][+-]?[0-9]{1,3})?$"
            )
            typed = pc.cast(
                pc.if_else(pc.or_(blank, pc.invert(good)), pa.scalar(None, pa.string()), text), pa.float64()
            )
        else:
            good = pc.match_substring_regex(lower, r"^[a-z0-9_.\-]{1,64}$")
            typed = pc.if_else(blank, pa.scalar(None, pa.string()), lower)
        bad = np.flatnonzero(~np.asarray(pc.or_(blank, pc.fill_null(good, False)), dtype=bool))
        if len(bad):
            i = int(bad[0])
            value = text[i].as_py()
            raise InputError(
                f"{origin(i)}: {name}: {quote(value)} is not a {knob.type} ({knob.meaning})"  # type: ignore[operator]
            )
        table = table.append_column(name, typed)
    return table
