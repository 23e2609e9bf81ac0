"""The answers as a table, one row per plan, for sweeps (``--output F.csv`` or ``F.parquet``), and the verdict lines
stdout leads with. Built column by column from the assessment's arrays; no per-plan Python on the way.

Columns: ``configuration_id``, ``origin``, ``device``, ``verdict_state``, ``verdict_basis``, ``near_limit``,
``binding_phase`` and ``predicted_peak_mib`` (the per-phase model's), ``measured_state`` (the measured
label or ``unresolved``; null without a matching record), ``measured_records``, ``floors_failed`` (names,
``;``-separated), each method's ``*_state`` and ``*_peak_mib``, ``distance`` (to the nearest measured
configuration, standardised), ``outside_cloud`` and ``flags`` (scope-flag codes, ``;``-separated). The changes that
would make a plan fit are in the JSON answer.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...arrow import string_array
from ...estimation.references import METHODS
from ...memory.phases import PHASES
from ..assess.answers import Answers
from ..assess.floors import FLOORS
from ..assess.verdict import BASES, STATES
from ..plan.arrays import bools, floats, ints, strings, with_validity
from ..plan.plans import RowLabels
from .wording import short

SUFFIXES = (".csv", ".parquet")


def sweep_table(answers: Answers) -> pa.Table:
    """One row per plan (see the module docstring)."""
    a = answers.assessment
    n = len(answers)
    columns: dict[str, pa.Array] = {
        "configuration_id": _ids(answers),
        "origin": _origins(answers),
        "device": _repeat(answers.hardware.device_name, n),
        "verdict_state": _names(STATES, a.state),
        "verdict_basis": _names(BASES, np.where(a.state >= 0, a.basis, -1)),
        "near_limit": bools(a.near_limit & (a.basis == 2), None),
        "binding_phase": _names(PHASES, np.where(a.model.known & a.covered, a.model.binding, -1)),
        "predicted_peak_mib": floats(np.nan_to_num(a.model.peak), ~np.isnan(a.model.peak) & a.covered),
        "measured_state": _names(STATES, np.where(a.matches.count > 0, a.state, -1)),
        "measured_records": ints(a.matches.count),
        "floors_failed": _joined([(a.floors.known[f] & ~a.floors.holds[f], f) for f in FLOORS], n),
    }
    for method in METHODS:
        columns[f"{method}_state"] = _names(STATES, a.predictions.state[method])
        peak = a.predictions.peak[method]
        columns[f"{method}_peak_mib"] = floats(np.nan_to_num(peak), ~np.isnan(peak))
    columns["distance"] = floats(np.nan_to_num(answers.distance), ~np.isnan(answers.distance))
    columns["outside_cloud"] = bools(answers.distance > answers.context.cloud.limit, ~np.isnan(answers.distance))
    columns["flags"] = _joined([(f.mask, f.code) for f in answers.flags], n, answers.plans.flags)
    return pa.Table.from_arrays(list(columns.values()), names=list(columns))


def write_sweep(answers: Answers, path: str | os.PathLike[str]) -> None:
    """Write :func:`sweep_table` to ``path`` (``.csv`` or ``.parquet``) atomically."""
    from ...data.tables.output import atomic_output

    table = sweep_table(answers)
    with atomic_output(path, "wb") as handle:
        if str(path).lower().endswith(".parquet"):
            import pyarrow.parquet as pq

            pq.write_table(table, handle)
        else:
            import pyarrow.csv as pacsv

            pacsv.write_csv(table, handle)


def verdict_lines(answers: Answers) -> list[str]:
    """``ID: STATE (basis BASIS; cause)`` for every plan, the cause in a few words (the text after the id is made
    once per distinct state, basis, record count and failing floors)."""
    a = answers.assessment
    n = len(answers)
    floors = [(a.floors.known[f] & ~a.floors.holds[f]) for f in FLOORS]
    failing = np.zeros(n, dtype=np.int64)
    for bit, mask in enumerate(floors):
        failing |= mask.astype(np.int64) << bit
    count = np.where(a.basis == 0, a.matches.count, 0)
    key = ((a.state + 1) * len(BASES) + a.basis) * (1 << len(FLOORS)) + np.where(a.basis == 1, failing, 0)
    key = key * (int(count.max(initial=0)) + 1) + count
    distinct, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    texts = []
    for i in first.tolist():
        state, bits = int(a.state[i]), int(failing[i])
        failed = [f for bit, f in enumerate(FLOORS) if bits >> bit & 1]
        name = STATES[state] if state >= 0 else None
        texts.append(short(name, BASES[int(a.basis[i])], int(count[i]), failed, answers.hardware))
    suffix = strings(texts).take(ints(inverse.reshape(-1)))
    joined = pc.binary_join_element_wise(_ids(answers), suffix, _repeat("", n))
    return cast("list[str]", joined.to_pylist())


def verdict_counts(answers: Answers) -> list[tuple[str, int]]:
    """How many plans have each verdict and basis (``state / basis``), sorted."""
    a = answers.assessment
    keys, counts = np.unique((a.state + 1) * len(BASES) + a.basis, return_counts=True)
    named = []
    for key, count in zip(keys.tolist(), counts.tolist()):
        state, basis = divmod(key, len(BASES))
        named.append((f"{STATES[state - 1] if state else 'unknown'} / {BASES[basis]}", count))
    return sorted(named)


def _repeat(text: str, n: int) -> pa.Array:
    return string_array([text]).take(ints(np.zeros(n, dtype=np.int64)))


def _numbered(prefix: str, n: int) -> pa.Array:
    """``{prefix}1``, ``{prefix}2``, ... built by arrow."""
    numbers = ints(np.arange(1, n + 1, dtype=np.int64)).cast(pa.string())
    return pc.binary_join_element_wise(_repeat(prefix, n), numbers, _repeat("", n))


def _origins(answers: Answers) -> pa.Array:
    origins = answers.plans.origins
    if isinstance(origins, RowLabels):
        return _numbered(f"{origins.prefix} row ", len(origins))
    return strings(list(origins))


def _ids(answers: Answers) -> pa.Array:
    table = answers.assessment.table
    n = len(answers)
    generated = _numbered("planned-", n)
    if "configuration_id" not in table.column_names:
        return generated
    given = table.column("configuration_id").combine_chunks()
    usable = pc.fill_null(pc.greater(pc.utf8_length(given), ints(np.zeros(n)).cast(pa.int32())), bools(np.zeros(n)))
    return pc.if_else(usable, given, generated)


def _names(names: tuple[str, ...], codes: np.ndarray) -> pa.Array:
    codes = np.asarray(codes, dtype=np.int64)
    index = with_validity(pa.int64(), np.maximum(codes, 0), codes >= 0)
    return string_array(names).take(index)


def _joined(parts: list[tuple[np.ndarray, str]], n: int, extra: Sequence[Sequence[str]] = ()) -> pa.Array:
    """Per row: the texts whose mask is true, ``;``-separated (null when none); rows are grouped by which masks
    hold, so the texts are joined once per combination."""
    combination = np.zeros(n, dtype=np.int64)
    for bit, (mask, _) in enumerate(parts):
        combination |= mask.astype(np.int64) << bit
    distinct, inverse = np.unique(combination, return_inverse=True)
    texts = [";".join(t for bit, (_, t) in enumerate(parts) if c >> bit & 1) or None for c in distinct.tolist()]
    joined = strings(texts).take(ints(inverse.reshape(-1)))
    if extra and any(extra):
        mine = joined.to_pylist()
        return strings([";".join([*(f or ()), *([m] if m else [])]) or None for f, m in zip(extra, mine)])
    return joined
