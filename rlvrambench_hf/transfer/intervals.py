"""Intervals on a transfer score file: a percentile bootstrap that resamples target configurations.

Why target configurations, not tasks (the argument from the release, also in ``docs/reporting.md``): a query's
label is its target's measured label, so every query of a target shares that one measurement. Tasks do not own
their targets: each ``model_transfer`` target appears in 2 tasks and each ``workload_transfer`` target in 3, and
54 of the 94 targets are queried on two tracks, 18 on three. Resampling tasks would count one measurement as
several independent draws and split it across scopes; resampling targets keeps all queries of a target together
(in every task and track) and leaves 94 units overall, 72/72/36/4 per track, instead of 52 tasks. Scopes with
fewer than :data:`~rlvrambench_hf.scoring.intervals.MIN_UNITS` targets (the horizon track, most single tasks) get
the exact range over their targets instead.

Pure: the score file, the key and the aligned predictions in, the same file with ``intervals`` blocks out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..scoring.intervals import (
    MIN_UNITS,
    IntervalOptions,
    bootstrap_block,
    confusion_draws,
    numeric_names,
    range_block,
    resample_weights,
    settings,
)
from ..scoring.labels import metrics_from_confusion
from .key import ScoringKey

if TYPE_CHECKING:  # scipy is imported by the function that builds the matrix: only a bootstrap needs it
    from scipy import sparse

UNIT = "target_configuration"
WHY_TARGETS = (
    "a query's label is its target's one measurement; targets are shared by tasks (2 per model-transfer target, "
    "3 per workload-transfer target) and by tracks (72 of 94 targets on two or three), so tasks are not "
    "independent while targets are the measured units (94 overall, 72/72/36/4 per track)"
)
MACRO = "macro_task_three_state_accuracy"


@dataclass(frozen=True)
class Scope:
    """One scope of a score file: where it sits (level, name), its column block and its tasks (for the macro)."""

    level: str  # "overall", "per_track" or "per_task"
    name: str
    index: int
    tasks: tuple[int, ...] = ()


def scopes_of(key: ScoringKey) -> list[Scope]:
    """Overall, the tracks (key order) and the tasks (sorted by id), each with its column block index."""
    n_tracks = len(key.tracks)
    out = [Scope("overall", "overall", 0)]
    for k, track in enumerate(key.tracks):
        tasks = tuple(t for t in key.task_order if key.track_of_task[t] == k)
        out.append(Scope("per_track", track, 1 + k, tasks))
    out += [Scope("per_task", key.task_ids[t].as_py(), 1 + n_tracks + t) for t in key.task_order]
    return out


def unit_cells(key: ScoringKey, predicted: np.ndarray) -> sparse.csr_matrix:
    """Targets × (scope × 9 confusion cells): each query counted in its target's row, once per scope it is in."""
    from scipy import sparse

    n_tracks, n_tasks = len(key.tracks), len(key.task_ids)
    cells = predicted.astype(np.int64) * 3 + key.observed
    track_scope = 1 + key.track_of_task[key.task_of]
    task_scope = 1 + n_tracks + key.task_of.astype(np.int64)
    columns = np.concatenate([cells, track_scope * 9 + cells, task_scope * 9 + cells])
    rows = np.tile(key.target_of.astype(np.int64), 3)
    shape = (int(key.target_of.max()) + 1, (1 + n_tracks + n_tasks) * 9)
    return sparse.csr_matrix((np.ones(len(columns), dtype=np.int64), (rows, columns)), shape=shape)


def macro_accuracy(task_confusions: np.ndarray) -> list[float | None]:
    """The unweighted mean task accuracy of each draw (draws × tasks × 9; tasks without a query skipped)."""
    queries = task_confusions.sum(axis=2)
    correct = task_confusions[:, :, [0, 4, 8]].sum(axis=2)
    present = queries > 0
    accuracy = np.divide(correct, queries, out=np.zeros(queries.shape), where=present)
    counts = present.sum(axis=1)
    means = np.divide(accuracy.sum(axis=1), counts, out=np.zeros(len(counts)), where=counts > 0)
    return [float(m) if c else None for m, c in zip(means, counts)]


def add_transfer_intervals(
    key: ScoringKey, predicted: np.ndarray, scores: Mapping[str, Any], options: IntervalOptions
) -> dict[str, Any]:
    """``scores`` (the score file of ``predicted`` on ``key``) with an ``intervals`` block in every scope and the
    file's ``interval_settings``."""
    cells = unit_cells(key, predicted)
    weights = resample_weights(cells.shape[0], options)
    task_base = 1 + len(key.tracks)
    blocks: dict[tuple[str, str], dict[str, Any]] = {}
    for scope in scopes_of(key):
        entry = _entry(scores, scope)
        names = numeric_names({k: v for k, v in entry.items() if k in _LABEL_NAMES or k == MACRO})
        present = units_in(cells, scope)
        if len(present) >= MIN_UNITS:
            draws = scope_draws(cells, weights, scope, task_base)
            block = bootstrap_block(entry, draws, names, unit=UNIT, units=len(present), level=options.level)
        else:
            block = range_block(scope_draws(cells, present, scope, task_base), names, unit=UNIT)
        blocks[(scope.level, scope.name)] = block
    return with_blocks(scores, blocks, settings(options, UNIT, WHY_TARGETS))


def units_in(cells: sparse.csr_matrix, scope: Scope) -> np.ndarray:
    """The targets with at least one query in ``scope``."""
    return np.flatnonzero(cells[:, scope.index * 9 : scope.index * 9 + 9].sum(axis=1).A1)


def scope_draws(cells: sparse.csr_matrix, draws_of: np.ndarray, scope: Scope, task_base: int) -> list[dict[str, Any]]:
    """The metrics of ``scope`` (its macro task accuracy too, for a track) under each draw: ``draws_of`` is either
    resample weights (draws × units) or the indices of the units to score one at a time."""
    draws = confusion_draws(_confusions(cells, draws_of, scope.index))
    if scope.tasks:
        per_task = np.stack([_confusions(cells, draws_of, task_base + t) for t in scope.tasks], axis=1)
        for draw, macro in zip(draws, macro_accuracy(per_task)):
            draw[MACRO] = macro
    return draws


def _confusions(cells: sparse.csr_matrix, draws_of: np.ndarray, index: int) -> np.ndarray:
    """Draws × 9: the confusion cells of column block ``index`` under each draw (weights, or units alone)."""
    block = cells[:, index * 9 : index * 9 + 9]
    if draws_of.ndim == 1:  # each unit alone: its own row
        return np.asarray(block[draws_of].toarray(), dtype=np.int64)
    return np.asarray((block.T @ draws_of.T).T, dtype=np.int64)


_LABEL_NAMES = frozenset(k for k in metrics_from_confusion(np.zeros((3, 3), dtype=np.int64)) if "confusion" not in k)


def _entry(scores: Mapping[str, Any], scope: Scope) -> Mapping[str, Any]:
    return cast("Mapping[str, Any]", scores["overall"] if scope.level == "overall" else scores[scope.level][scope.name])


def with_blocks(
    scores: Mapping[str, Any], blocks: Mapping[tuple[str, str], dict[str, Any]], about: dict[str, Any]
) -> dict[str, Any]:
    """A copy of ``scores`` with ``interval_settings`` before ``overall`` and each scope's block appended."""
    out: dict[str, Any] = {}
    for name, value in scores.items():
        if name == "overall":
            out["interval_settings"] = about
            out[name] = {**value, "intervals": blocks[("overall", "overall")]}
        elif name in ("per_track", "per_task"):
            out[name] = {scope: {**entry, "intervals": blocks[(name, scope)]} for scope, entry in value.items()}
        else:
            out[name] = value
    return out


def iter_blocks(scores: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(scope name, scope entry) of every scope of a transfer score file: overall, tracks, tasks."""
    yield "overall", scores["overall"]
    yield from scores["per_track"].items()
    yield from scores["per_task"].items()
