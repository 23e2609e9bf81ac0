"""Plans looked up against the measured records (pure, vectorised over plans).

:func:`exact_matches` finds, for every plan at once, the records of every table that equal it in each defining
setting the table records, and summarises them per plan (how many, the most and least severe repeated label, the
first within-margin record). :func:`near_matches` lists, for one plan, the records that differ from it in exactly
one recorded setting, with that setting named.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa

from .records import DEFINING_SETTINGS, NOT_GIVEN, Codes, MeasuredIndex

NONE = -1


@dataclass(frozen=True)
class Matches:
    """Per plan: matched records, the most and least severe resolved label index (-1 / 3 when none is resolved),
    resolved records, the first within-margin record (global index, -1 when none) and the largest completed peak
    of the matched records (MiB; NaN when none completed)."""

    count: np.ndarray
    worst: np.ndarray
    best: np.ndarray
    resolved: np.ndarray
    within_margin_record: np.ndarray
    peak: np.ndarray


@dataclass(frozen=True)
class RecordIndex:
    """The records of a :class:`MeasuredIndex` in one list, with their codes (per table and as one matrix)."""

    index: MeasuredIndex
    records: tuple[dict[str, Any], ...]
    codes: np.ndarray  # records × settings (int64; negative where unrecorded or null)
    recorded: np.ndarray  # records × settings (bool)
    resolved: np.ndarray
    peaks: np.ndarray  # per record: its largest completed peak, MiB (NaN: none completed)
    tables: tuple[tuple[tuple[str, ...], Codes, int], ...]  # per table: recorded settings, codes, first record

    @classmethod
    def of(cls, index: MeasuredIndex) -> RecordIndex:
        records: list[dict[str, Any]] = []
        codes, recorded, resolved, tables = [], [], [], []
        for table in index.tables:
            coded = index.codes(table.settings)
            tables.append((table.recorded, coded, len(records)))
            records += table.records
            codes.append(np.column_stack([coded.codes[n] for n in DEFINING_SETTINGS]))
            recorded.append(np.tile([n in table.recorded for n in DEFINING_SETTINGS], (coded.rows, 1)))
            resolved.append(table.resolved)
        peaks = np.array([np.nan if (p := r["max_completed_peak_mib"]) is None else p for r in records])
        return cls(
            index, tuple(records), np.vstack(codes), np.vstack(recorded), np.concatenate(resolved),
            peaks.astype(np.float64).reshape(len(records)), tuple(tables),
        )  # fmt: skip


def _summaries(keys: np.ndarray, resolved: np.ndarray, peaks: np.ndarray, offset: int) -> tuple[np.ndarray, ...]:
    """Per distinct key (sorted): records, worst and best resolved label, resolved count, first within margin,
    largest completed peak."""
    usable = keys >= 0
    unique, inverse = np.unique(keys[usable], return_inverse=True)
    inverse = inverse.reshape(-1)
    labels = resolved[usable]
    positions = np.flatnonzero(usable) + offset
    count = np.bincount(inverse, minlength=len(unique))
    worst = np.full(len(unique), NONE)
    np.maximum.at(worst, inverse, labels)
    best = np.full(len(unique), 3)
    np.minimum.at(best, inverse, np.where(labels >= 0, labels, 3))
    done = np.bincount(inverse, weights=labels >= 0, minlength=len(unique)).astype(np.int64)
    first = np.full(len(unique), NONE)
    within = labels == 0
    for group, position in zip(inverse[within][::-1], positions[within][::-1]):
        first[group] = position
    peak = np.full(len(unique), np.nan)
    np.fmax.at(peak, inverse, peaks[usable])
    return unique, count, worst, best, done, first, peak


def exact_matches(records: RecordIndex, codes: Codes) -> Matches:
    """The records equal to each plan in every defining setting both the plan gives and the record's table
    records (plans are grouped by the settings they leave out)."""
    n = codes.rows
    count = np.zeros(n, dtype=np.int64)
    worst = np.full(n, NONE)
    best = np.full(n, 3)
    resolved = np.zeros(n, dtype=np.int64)
    within = np.full(n, NONE)
    peak = np.full(n, np.nan)
    radix = records.index.radix
    pattern = np.zeros(n, dtype=np.int64)
    for bit, name in enumerate(DEFINING_SETTINGS):
        pattern |= (codes.codes[name] == NOT_GIVEN).astype(np.int64) << bit
    for missing in sorted(set(pattern.tolist())):  # not np.unique: its masked-array check imports numpy.ma (12 ms)
        rows = np.flatnonzero(pattern == missing)
        left_out = {name for bit, name in enumerate(DEFINING_SETTINGS) if missing >> bit & 1}
        for recorded, coded, offset in records.tables:
            settings = [name for name in recorded if name not in left_out]
            keys = coded.key(settings, radix)
            part = slice(offset, offset + coded.rows)
            unique, g_count, g_worst, g_best, g_done, g_first, g_peak = _summaries(
                keys, records.resolved[part], records.peaks[part], offset
            )
            if not len(unique):
                continue
            key = codes.key(settings, radix)[rows]
            position = np.minimum(np.searchsorted(unique, key), len(unique) - 1)
            hit = (key >= 0) & (unique[position] == key)
            at, mine = position[hit], rows[hit]
            count[mine] += g_count[at]
            worst[mine] = np.maximum(worst[mine], g_worst[at])
            best[mine] = np.minimum(best[mine], g_best[at])
            resolved[mine] += g_done[at]
            within[mine] = np.where(within[mine] >= 0, within[mine], g_first[at])
            peak[mine] = np.fmax(peak[mine], g_peak[at])
    return Matches(count, worst, best, resolved, within, peak)


def plan_codes(codes: Codes, row: int) -> np.ndarray:
    return np.array([codes.codes[n][row] for n in DEFINING_SETTINGS], dtype=np.int64)


def matched_records(records: RecordIndex, codes: Codes, row: int) -> list[dict[str, Any]]:
    """The records plan ``row`` matches (its answer's ``measured`` list)."""
    plan = plan_codes(codes, row)
    differing = _differing(records, plan)
    return [
        _with_match(records.records[i], records.recorded[i], plan) for i in np.flatnonzero(differing.sum(axis=1) == 0)
    ]


def near_matches(records: RecordIndex, codes: Codes, row: int, settings: pa.Table) -> list[dict[str, Any]]:
    """Records that differ from plan ``row`` in exactly one recorded setting: that setting, theirs and the plan's."""
    differing = _differing(records, plan_codes(codes, row))
    out = []
    for i in np.flatnonzero(differing.sum(axis=1) == 1):
        j = int(np.flatnonzero(differing[i])[0])
        name = DEFINING_SETTINGS[j]
        record = records.records[i]
        theirs = records.index.values[name][int(records.codes[i, j])].as_py()
        mine = settings.column(name)[row].as_py() if name in settings.column_names else None
        out.append(
            {
                "table": record["table"],
                "configuration_id": record["configuration_id"],
                "observed_state": record["observed_state"],
                "max_completed_peak_mib": record["max_completed_peak_mib"],
                "setting": name,
                "plan": mine,
                "measured": theirs,
            }
        )
    return out


def _differing(records: RecordIndex, plan: np.ndarray) -> np.ndarray:
    """records × settings: the settings the record's table records and the plan gives where they differ (a value
    never measured differs from every record)."""
    compared = records.recorded & (plan[None, :] != NOT_GIVEN)
    return cast("np.ndarray", compared & ((records.codes != plan[None, :]) | (plan[None, :] < 0) | (records.codes < 0)))


def _with_match(record: dict[str, Any], recorded: np.ndarray, plan: np.ndarray) -> dict[str, Any]:
    out = dict(record)
    not_given = [
        n
        for n, code in zip(DEFINING_SETTINGS, plan)
        if code == NOT_GIVEN and n not in record.get("unrecorded_settings", ())
    ]
    out["match"] = "exact" if recorded.all() and not not_given else "on the settings both give"
    if not_given:
        out["settings_not_given"] = not_given
    return out


@dataclass(frozen=True)
class Carried:
    """Release measurements carried to each plan's device (:func:`carried`): per plan, whether one is carried, its
    label index (-1: none), the carried peak (MiB; NaN for a failure carried down) and the plans' codes on the
    release's device (for the records the answer lists)."""

    found: np.ndarray
    state: np.ndarray
    peak: np.ndarray
    codes: Codes


def carried(
    records: RecordIndex,
    codes_on_release: Codes,
    exact: Matches,
    utilization: np.ndarray,
    capacity: np.ndarray,
    margin: np.ndarray,
    release_capacity: int,
) -> Carried:
    """The release's measurement of each plan's settings carried from its device (capacity ``C``) to the plan's
    (``C'``), by the one term that depends on the capacity: vLLM reserves ``u × C`` of the device (vLLM ≥ 0.7),
    nothing else a run holds depends on it, so the same run peaks at ``peak + u × (C' − C)``.

    A run that completed is labelled by that peak against the plan's margin and capacity, never better than its
    measured label on a smaller device nor worse on a larger one while ``u ≤ 0.95`` (the margin then grows faster
    than the peak). A run that ran out of memory runs out on any device no larger (its memory less the
    reservation's shrink ``u (C − C')`` still exceeds ``C'``, as ``u ≤ 1``); on a larger one nothing is carried, nor
    for plans with an exact match, without ``u``, or whose records are not all resolved."""
    n = codes_on_release.rows
    on_release = exact_matches(records, codes_on_release)
    candidate = (exact.count == 0) & (on_release.count > 0) & np.isfinite(utilization)
    shift = utilization * (capacity - release_capacity)
    peak = on_release.peak + shift
    label = np.where(peak > capacity, 2, np.where(peak > margin, 1, 0))
    worst = on_release.worst
    larger = capacity > release_capacity
    failed = candidate & (worst == 2) & ~larger
    completed = candidate & (worst >= 0) & (worst < 2) & (on_release.resolved == on_release.count) & np.isfinite(peak)
    keeps_pace = utilization <= 0.95
    state = np.full(n, NONE)
    up = np.where(keeps_pace, np.minimum(worst, label), np.maximum(worst, label))
    state = np.where(completed, np.where(larger, up, np.maximum(worst, label)), state)
    state = np.where(failed, 2, state)
    found = failed | completed
    return Carried(found, state, np.where(completed, peak, np.nan), codes_on_release)
