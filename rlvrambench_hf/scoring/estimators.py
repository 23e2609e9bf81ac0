"""Scores of a memory estimator over a set of targets: the label metrics, peak errors and startup-guard changes.

One function per figure, shared by the estimator comparison's fold scores and the follow-up studies'
resolved-subset scores, so both publish the same fields: :func:`estimator_scores` adds to the label metrics of
:func:`~.labels.metrics_from_confusion` the query counts, :func:`peak_error_statistics` and the number of labels
the startup guard changed. :func:`state_from_peak` is the peak-only label of a predicted peak.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..errors import InputError
from .labels import ABOVE_MARGIN, MEMORY_FAILURE, WITHIN_MARGIN, label_metrics


def state_from_peak(peak_mib: float, device_capacity_mib: float, margin_limit_mib: float) -> str:
    """The label a peak implies (strict inequalities): above the capacity a memory failure, else above the
    margin limit above-margin, else within the margin."""
    if peak_mib > device_capacity_mib:
        return MEMORY_FAILURE
    if peak_mib > margin_limit_mib:
        return ABOVE_MARGIN
    return WITHIN_MARGIN


def peak_error_statistics(
    predicted_mib: Sequence[float | None], observed_mib: Sequence[float | None]
) -> dict[str, Any]:
    """Errors of predicted peaks (e = predicted − observed) over the targets where both peaks exist.

    ``completed_peak_prediction_coverage`` is the number of such targets (0 when none); the mean absolute error,
    mean signed error and worst underestimate (max(0, max(−e))) are null when it is 0.
    """
    if len(predicted_mib) != len(observed_mib):
        raise InputError(f"{len(predicted_mib)} predicted peaks but {len(observed_mib)} observed peaks")
    errors = [p - o for p, o in zip(predicted_mib, observed_mib) if p is not None and o is not None]
    return {
        "completed_peak_prediction_coverage": len(errors),
        "completed_peak_mae_mib": math.fsum(abs(e) for e in errors) / len(errors) if errors else None,
        "completed_peak_mean_signed_error_mib": math.fsum(errors) / len(errors) if errors else None,
        "completed_peak_worst_underestimate_mib": max(0.0, -min(errors)) if errors else None,
    }


def estimator_scores(
    configuration_ids: Sequence[str],
    predicted_states: Sequence[str],
    observed_states: Sequence[str],
    *,
    predicted_peaks_mib: Sequence[float | None] | None = None,
    observed_peaks_mib: Sequence[float | None] | None = None,
    guard_changed: Sequence[bool | None] | None = None,
) -> dict[str, Any]:
    """One method's scores over aligned targets: label metrics (predicted rows, observed columns), ``queries``,
    ``distinct_target_configurations``, the peak statistics and ``startup_guard_changed_states``."""
    n = len(configuration_ids)
    peaks = list(predicted_peaks_mib) if predicted_peaks_mib is not None else [None] * n
    observed = list(observed_peaks_mib) if observed_peaks_mib is not None else [None] * n
    changed = list(guard_changed) if guard_changed is not None else []
    return {
        **label_metrics(list(predicted_states), list(observed_states)),
        "queries": n,
        "distinct_target_configurations": len(set(configuration_ids)),
        **peak_error_statistics(peaks, observed),
        "startup_guard_changed_states": sum(1 for c in changed if c),
    }
