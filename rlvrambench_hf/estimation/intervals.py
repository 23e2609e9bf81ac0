"""Intervals on the estimator comparison: configurations resampled within each held-out fold.

Each fold holds out one model family and scores its 30 configurations; the three folds are reported apart, so
each fold is its own stratum and its configurations are resampled with replacement (every method on the same
resampled configurations, so comparisons are paired). A configuration is one measured setting with its own label
and peak. With ``estimate compare``, each of your estimators is also compared with each reference, per fold
(:mod:`rlvrambench_hf.scoring.compare`). Pure: the report, the pool's truth rows and the options in.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..scoring.compare import Design, Side, compare_scope
from ..scoring.estimators import peak_error_statistics
from ..scoring.intervals import (
    BOOTSTRAP,
    MIN_UNITS,
    RANGE,
    IntervalOptions,
    bootstrap_block,
    confusion_draws,
    numeric_names,
    range_block,
    resample_weights,
    settings,
)
from ..scoring.labels import encode_labels

UNIT = "held_out_configuration"
WHY_CONFIGURATIONS = (
    "each fold holds out one model family and is reported on its own; within a fold each configuration is one "
    "measured setting with its own label and peak, so configurations are resampled within each fold"
)
#: Score fields that count the scope rather than score the method.
_SCOPE_FIELDS = ("queries", "distinct_target_configurations")


def stream_of(family: str) -> int:
    """The random stream of a fold: the same fold draws the same configurations whichever folds are scored."""
    return zlib.crc32(family.encode("utf-8"))


def fold_draws(
    rows: Sequence[Mapping[str, Any]],
    truth: Mapping[str, Mapping[str, Any]],
    ids: Sequence[str],
    weights: np.ndarray,
    method: str,
) -> list[dict[str, Any]]:
    """The fold scores of ``method``'s rows (one per id of ``ids``) under each row of unit ``weights``: the fields
    of :func:`~rlvrambench_hf.scoring.estimators.estimator_scores`, a configuration drawn twice counting twice (the
    label metrics from the weighted confusion matrix, the peak errors over the repeated rows)."""
    by_id = {r["configuration_id"]: r for r in rows if r["method"] == method}
    ordered = [by_id[i] for i in ids]
    predicted = encode_labels([r["predicted_state"] for r in ordered], "predicted labels")
    observed = encode_labels([truth[i]["observed_state"] for i in ids], "observed labels")
    cells = np.zeros((len(ids), 9), dtype=np.int64)
    cells[np.arange(len(ids)), predicted.astype(np.intp) * 3 + observed] = 1
    predicted_peaks = [r["predicted_peak_mib"] for r in ordered]
    observed_peaks = [truth[i]["max_completed_run_peak_mib"] for i in ids]
    guarded = any("startup_guard_changed_state" in r for r in ordered)  # the references' rows only
    changed = np.array([bool(r.get("startup_guard_changed_state")) for r in ordered], dtype=np.int64)
    draws = []
    for w, labels in zip(weights, confusion_draws(weights @ cells)):
        drawn = np.repeat(np.arange(len(ids)), w).tolist()
        peaks = peak_error_statistics([predicted_peaks[i] for i in drawn], [observed_peaks[i] for i in drawn])
        labels.update(queries=int(w.sum()), distinct_target_configurations=int((w > 0).sum()), **peaks)
        if guarded:
            labels["startup_guard_changed_states"] = int(w @ changed)
        draws.append(labels)
    return draws


def fold_blocks(
    rows: Sequence[Mapping[str, Any]],
    truth: Mapping[str, Mapping[str, Any]],
    scores: Mapping[str, Mapping[str, Any]],
    options: IntervalOptions,
    stream: int,
) -> tuple[dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]], str]:
    """(interval block per method, the draws per method, the method used) of one fold."""
    ids = sorted({r["configuration_id"] for r in rows})
    enough = len(ids) >= MIN_UNITS
    weights = resample_weights(len(ids), options, stream) if enough else np.eye(len(ids), dtype=np.int64)
    blocks, draws = {}, {}
    for method, point in scores.items():
        draws[method] = fold_draws(rows, truth, ids, weights, method)
        names = [n for n in numeric_names(point) if n not in _SCOPE_FIELDS]
        blocks[method] = (
            bootstrap_block(point, draws[method], names, unit=UNIT, units=len(ids), level=options.level)
            if enough
            else range_block(draws[method], names, unit=UNIT)
        )
    return blocks, draws, BOOTSTRAP if enough else RANGE


def add_retrospective_intervals(
    report: Mapping[str, Any],
    truth: Mapping[str, Mapping[str, Any]],
    options: IntervalOptions,
    references: Sequence[str],
) -> dict[str, Any]:
    """The retrospective (or ``estimate compare``) report with an ``intervals`` block in every method's fold
    scores and, when users' estimators are present, ``comparisons``: each of them against each reference."""
    folds = {}
    for family, fold in report["folds"].items():
        rows = [*fold["predictions"], *fold.get("user_predictions", [])]
        blocks, draws, method = fold_blocks(rows, truth, fold["scores"], options, stream_of(family))
        scores = {m: {**s, "intervals": blocks[m]} for m, s in fold["scores"].items()}
        folds[family] = {**fold, "scores": scores}
        users = [m for m in fold["scores"] if m not in references]
        if users:
            units = len({r["configuration_id"] for r in rows})
            folds[family]["comparisons"] = {
                user: {
                    reference: compare_scope(
                        Side(user, fold["scores"][user], draws[user]),
                        Side(reference, fold["scores"][reference], draws[reference]),
                        Design(UNIT, units, method, options.level),
                    )
                    for reference in references
                }
                for user in users
            }
    head = {k: v for k, v in report.items() if k != "folds"}
    return {"interval_settings": settings(options, UNIT, WHY_CONFIGURATIONS), "folds": folds, **head}


def add_fold_score_intervals(
    scores: Mapping[str, Any],
    rows_by_fold: Mapping[str, Sequence[Mapping[str, Any]]],
    truth: Mapping[str, Any],
    options: IntervalOptions,
) -> dict[str, Any]:
    """:func:`~rlvrambench_hf.estimation.api.score_fold_predictions`'s result with a block per fold."""
    folds = {}
    for family, point in scores["folds"].items():
        blocks, _, _ = fold_blocks(rows_by_fold[family], truth, {"predictions": point}, options, stream_of(family))
        folds[family] = {**point, "intervals": blocks["predictions"]}
    return {"interval_settings": settings(options, UNIT, WHY_CONFIGURATIONS), "folds": folds}


def comparison_readings(report: Mapping[str, Any]) -> list[str]:
    """``fold: reading`` lines of every comparison of a report (none without users' estimators)."""
    return [
        f"{family}: {entry['reading']}"
        for family, fold in report["folds"].items()
        for per_reference in fold.get("comparisons", {}).values()
        for block in per_reference.values()
        for entry in block["metrics"].values()
    ]
