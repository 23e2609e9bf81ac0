"""Scoring label predictions of the transfer queries: alignment with a scoring key, then per task, track and
overall metrics (the label metrics of :mod:`rlvrambench_hf.scoring.labels`).

Prediction rows (decision documented in ``docs/transfer.md``): surrounding spaces and tabs are stripped from ids
and labels, and nothing else is forgiven. Letter case is significant (``Within_Margin`` is not a label; query ids
are matched exactly); missing, repeated or unexpected ids are errors.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..arrow import arrow_ints, arrow_strings, numpy_ints, one_chunk
from ..errors import InputError, quote
from ..scoring.intervals import IntervalsLike, interval_options
from ..scoring.labels import encode_labels, label_array, metrics_from_confusion
from ..scoring.predictions import WHITESPACE, read_prediction_file
from .intervals import add_transfer_intervals
from .key import ALL_TRACKS, PREDICTION_COLUMNS, PROTOCOL_VERSION, ScoringKey

COST_SCOPE = (
    "source configurations are counted once per scope (overall, track or task); their eligible "
    "processes and recorded attempts are summed over those distinct sources"
)
COST_WARNING = (
    "sources are shared between tasks and tracks, so the costs of different scopes overlap: "
    "never add them up across tracks or tasks"
)
EVALUATION_WARNING = (
    "open descriptive transfer tasks, not a blind leaderboard: the labels are public, queries "
    "reuse 94 target configurations, and pooled accuracy is dominated by the workload track; "
    "report recall, approval precision and approval errors per track"
)


def _examples(values: pa.Array | list[str], limit: int = 3) -> str:
    """The first ``limit`` values, quoted (invisible characters shown as escapes)."""
    items = values.slice(0, limit).to_pylist() if isinstance(values, (pa.Array, pa.ChunkedArray)) else values[:limit]
    return ", ".join(map(quote, items))


def _ids_at(key: ScoringKey, positions: np.ndarray) -> str:
    return _examples(pc.take(key.query_ids, arrow_ints(positions[:3])))


def align_predictions(
    key: ScoringKey, query_ids: pa.Array | Sequence[str], states: pa.Array | Sequence[str], origin: str = "predictions"
) -> np.ndarray:
    """The predicted label code of each query of ``key`` (in key order).

    ``query_ids`` and ``states`` are the prediction rows (surrounding spaces/tabs are stripped). The rows must
    cover exactly the selected queries, once each, with labels among the three; otherwise a one-line
    :class:`InputError` says what is wrong, how often, with a few example ids."""
    ids, labels = _strings(query_ids), _strings(states)
    if len(ids) != len(labels):
        raise InputError(f"{origin}: {len(ids)} query ids but {len(labels)} predicted labels")
    scope = "" if key.track == ALL_TRACKS else f" of track {key.track}"
    if len(ids) == 0:
        raise InputError(f"{origin}: no predictions ({len(key)} selected queries{scope} expected)")
    codes = _label_codes(labels, origin)
    if len(ids) == len(key) and pc.all(pc.equal(ids, key.query_ids)).as_py():
        return codes  # rows already in query order (e.g. sorted by id, as the queries are): no lookup needed
    if key.id_index is not None and len(ids) == len(key):
        positions = key.id_index.positions_of(ids)
        if positions is not None:  # exactly the selected queries, once each, in another order
            aligned = np.empty(len(key), dtype=np.int8)
            aligned[positions] = codes
            return aligned
    return _align_by_lookup(key, ids, codes, origin, scope)


def _label_codes(labels: pa.Array, origin: str) -> np.ndarray:
    codes = pc.index_in(labels, value_set=label_array())
    if codes.null_count:  # only then pay for stripping spaces and tabs
        labels = pc.utf8_trim(labels, characters=WHITESPACE)
        codes = pc.index_in(labels, value_set=label_array())
    return encode_labels(labels, f"{origin}: predicted_state", codes)


def _align_by_lookup(key: ScoringKey, ids: pa.Array, codes: np.ndarray, origin: str, scope: str) -> np.ndarray:
    """Rows in any order, ids stripped: each query once, or a one-line error naming what is off."""
    ids = pc.utf8_trim(ids, characters=WHITESPACE)
    if pc.min(pc.binary_length(ids)).as_py() == 0:
        blank = pc.sum(pc.equal(pc.binary_length(ids), 0)).as_py()
        raise InputError(f"{origin}: {blank} row(s) have an empty query_id")
    position = pc.index_in(ids, value_set=key.query_ids)
    problems = []
    if position.null_count:
        unexpected = pc.filter(ids, pc.is_null(position))
        problems.append(
            f"{len(unexpected)} unexpected query id(s) not among the selected queries (e.g. {_examples(unexpected)})"
        )
    found = numpy_ints(pc.drop_null(position)).astype(np.intp)
    counts = np.bincount(found, minlength=len(key))
    duplicated = np.flatnonzero(counts > 1)
    if len(duplicated):
        problems.append(f"{len(duplicated)} duplicated query id(s) (e.g. {_ids_at(key, duplicated)})")
    missing = np.flatnonzero(counts == 0)
    if len(missing):
        problems.append(f"{len(missing)} missing query id(s) (e.g. {_ids_at(key, missing)})")
    if problems:
        raise InputError(f"{origin} must cover exactly the {len(key)} selected queries{scope}: " + "; ".join(problems))
    aligned = np.empty(len(key), dtype=np.int8)
    aligned[found] = codes[numpy_ints(pc.is_valid(position))]
    return aligned


def _strings(values: pa.Array | pa.ChunkedArray | Sequence[str]) -> pa.Array:
    """``values`` as one string array without nulls."""
    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        if any(v is None for v in values):
            raise InputError(f"predictions: {sum(v is None for v in values)} missing (None) value(s)")
        values = arrow_strings(values)
    values = one_chunk(values)
    if values.null_count:
        raise InputError(f"predictions: {values.null_count} missing (None) value(s)")
    return values


def read_predictions(path: str | os.PathLike[str]) -> tuple[pa.Array, pa.Array]:
    """The ``query_id`` and ``predicted_state`` columns of a predictions file, as strings: CSV, JSON Lines or
    Parquet, compressed or not, or ``-`` for standard input (the formats and rules of
    :mod:`rlvrambench_hf.scoring.predictions`)."""
    columns = read_prediction_file(path, PREDICTION_COLUMNS)
    return columns["query_id"], columns["predicted_state"]


_BLOCK = 1 << 20  # rows counted at a time


def score(key: ScoringKey, predicted: np.ndarray) -> dict[str, Any]:
    """The score file of label codes ``predicted`` (aligned with ``key``): overall, per track and per task."""
    n_tasks = len(key.task_ids)
    n_tracks = len(key.tracks)
    cell_counts = np.zeros(n_tasks * 9, dtype=np.int64)
    for begin in range(0, len(predicted), _BLOCK):  # in blocks: bincount's intp copy stays small
        cells = key.cell_base[begin : begin + _BLOCK] + predicted[begin : begin + _BLOCK] * np.int8(3)
        cell_counts += np.bincount(cells, minlength=n_tasks * 9)
    by_task = cell_counts.reshape(n_tasks, 3, 3)
    by_track = np.zeros((n_tracks, 3, 3), dtype=np.int64)
    np.add.at(by_track, key.track_of_task, by_task)
    counts = key.scope_counts

    def entry(level: str, i: int, confusion: np.ndarray) -> dict[str, Any]:
        c = counts[level]
        out = {
            "queries": int(c["queries"][i]),
            "distinct_target_configurations": int(c["distinct_target_configurations"][i]),
        }
        out.update(metrics_from_confusion(confusion))
        for name in ("distinct_source_configurations", "eligible_source_processes", "recorded_source_attempts"):
            out[name] = int(c[name][i])
        return out

    per_task = {}
    task_accuracy: dict[int, list[Fraction]] = {i: [] for i in range(n_tracks)}
    for t in key.task_order:
        e = entry("task", t, by_task[t])
        per_task[key.task_ids[t].as_py()] = {"track": key.task_track[t], **e}
        task_accuracy[int(key.track_of_task[t])].append(Fraction(e["correct_three_state"], e["queries"]))
    per_track = {}
    for k, name in enumerate(key.tracks):
        e = entry("track", k, by_track[k])
        accuracies = task_accuracy[k]
        e["tasks"] = len(accuracies)
        e["macro_task_three_state_accuracy"] = float(sum(accuracies) / len(accuracies)) if accuracies else None
        per_track[name] = e
    return {
        "protocol_version": PROTOCOL_VERSION,
        "selected_track": key.track,
        "rate_with_zero_denominator": None,
        "cost_scope": COST_SCOPE,
        "cost_warning": COST_WARNING,
        "evaluation_warning": EVALUATION_WARNING,
        "overall": entry("overall", 0, by_track.sum(axis=0)),
        "per_track": per_track,
        "per_task": per_task,
    }


def score_predictions(
    key: ScoringKey,
    query_ids: pa.Array | Sequence[str],
    states: pa.Array | Sequence[str],
    origin: str = "predictions",
    *,
    intervals: IntervalsLike = None,
) -> dict[str, Any]:
    """Validate prediction rows against ``key`` and score them; with ``intervals`` (True, a mapping of
    level/resamples/seed, or :class:`~rlvrambench_hf.scoring.intervals.IntervalOptions`) every scope also gets its
    bootstrap interval block (:mod:`.intervals`)."""
    options = interval_options(intervals)
    predicted = align_predictions(key, query_ids, states, origin)
    scores = score(key, predicted)
    return scores if options is None else add_transfer_intervals(key, predicted, scores, options)
