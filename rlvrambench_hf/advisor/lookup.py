"""Plans looked up against the measured records (pure, vectorised over plans).

:func:`exact_matches` finds, for every plan at once, the records of every table that equal it in each defining
setting the table records, and summarises them per plan (how many, the most and least severe repeated label, the
first within-margin record). :func:`near_matches` lists, for one plan, the records that differ from it in exactly
one recorded setting, with that setting named.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .measured import DEFINING_SETTINGS, Codes, MeasuredIndex

#: Key of a record with a null in a setting its table records: it matches nothing.
NO_KEY = -2
NONE = -1


@dataclass(frozen=True)
class Matches:
    """Per plan: matched records, the most and least severe resolved label index (-1 / 3 when none is resolved),
    resolved records, and the first within-margin record (global index, -1 when none)."""

    count: np.ndarray
    worst: np.ndarray
    best: np.ndarray
    resolved: np.ndarray
    within_margin_record: np.ndarray


@dataclass(frozen=True)
class RecordIndex:
    """The records of a :class:`MeasuredIndex` in one list, with their codes and per-table group summaries."""

    index: MeasuredIndex
    records: tuple[dict, ...]
    codes: np.ndarray  # records × settings (int64; -1 where unrecorded or null)
    recorded: np.ndarray  # records × settings (bool)
    resolved: np.ndarray
    groups: tuple[tuple, ...]  # per table: (settings, unique keys, count, worst, best, resolved, first within margin)

    @classmethod
    def of(cls, index: MeasuredIndex) -> RecordIndex:
        radix = index.radix
        records, codes, recorded, resolved, groups = [], [], [], [], []
        offset = 0
        for table in index.tables:
            coded = index.codes(table.settings)
            keys = coded.key(table.recorded, radix)
            nulls = np.zeros(coded.rows, dtype=bool)
            for name in table.recorded:
                nulls |= coded.codes[name] < 0
            keys[nulls] = NO_KEY
            groups.append((table.recorded, *_summaries(keys, table.resolved, offset)))
            records += table.records
            codes.append(np.column_stack([coded.codes[n] for n in DEFINING_SETTINGS]))
            recorded.append(np.tile([n in table.recorded for n in DEFINING_SETTINGS], (coded.rows, 1)))
            resolved.append(table.resolved)
            offset += coded.rows
        return cls(
            index,
            tuple(records),
            np.vstack(codes),
            np.vstack(recorded),
            np.concatenate(resolved),
            tuple(groups),
        )


def _summaries(keys: np.ndarray, resolved: np.ndarray, offset: int) -> tuple[np.ndarray, ...]:
    """Per distinct key (sorted): records, worst and best resolved label, resolved count, first within margin."""
    usable = keys >= 0
    unique, inverse = np.unique(keys[usable], return_inverse=True)
    labels = resolved[usable]
    positions = np.flatnonzero(usable) + offset
    count = np.bincount(inverse, minlength=len(unique))
    worst = np.full(len(unique), NONE)
    np.maximum.at(worst, inverse, labels)
    best = np.full(len(unique), 3)
    np.minimum.at(best, inverse, np.where(labels >= 0, labels, 3))
    done = np.bincount(inverse, weights=labels >= 0, minlength=len(unique)).astype(np.int64)
    first = np.full(len(unique), NONE)
    for group, label, position in zip(inverse[::-1], labels[::-1], positions[::-1]):
        if label == 0:
            first[group] = position
    return unique, count, worst, best, done, first


def exact_matches(records: RecordIndex, codes: Codes) -> Matches:
    """The records equal to each plan in every defining setting their table records."""
    n = codes.rows
    count = np.zeros(n, dtype=np.int64)
    worst = np.full(n, NONE)
    best = np.full(n, 3)
    resolved = np.zeros(n, dtype=np.int64)
    within = np.full(n, NONE)
    radix = records.index.radix
    for settings, unique, g_count, g_worst, g_best, g_done, g_first in records.groups:
        if not len(unique):
            continue
        key = codes.key(settings, radix)
        position = np.minimum(np.searchsorted(unique, key), len(unique) - 1)
        hit = (key >= 0) & (unique[position] == key)
        at = position[hit]
        count[hit] += g_count[at]
        worst[hit] = np.maximum(worst[hit], g_worst[at])
        best[hit] = np.minimum(best[hit], g_best[at])
        resolved[hit] += g_done[at]
        within[hit] = np.where(within[hit] >= 0, within[hit], g_first[at])
    return Matches(count, worst, best, resolved, within)


def plan_codes(codes: Codes, row: int) -> np.ndarray:
    return np.array([codes.codes[n][row] for n in DEFINING_SETTINGS], dtype=np.int64)


def matched_records(records: RecordIndex, codes: Codes, row: int) -> list[dict]:
    """The records plan ``row`` matches (its answer's ``measured`` list)."""
    differing = _differing(records, plan_codes(codes, row))
    return [_with_match(records.records[i], records.recorded[i]) for i in np.flatnonzero(differing.sum(axis=1) == 0)]


def near_matches(records: RecordIndex, codes: Codes, row: int, settings: pa.Table) -> list[dict]:
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
    """records × settings: the recorded settings where a record differs from the plan (an unknown value differs)."""
    return records.recorded & ((records.codes != plan[None, :]) | (plan[None, :] < 0) | (records.codes < 0))


def _with_match(record: dict, recorded: np.ndarray) -> dict:
    out = dict(record)
    out["match"] = "exact" if recorded.all() else "recorded settings"
    return out
