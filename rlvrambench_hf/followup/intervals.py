"""Intervals on a follow-up study's scores: the planned configuration is the unit, and the panels are too small.

Each study plans a handful of configurations of one model (12 for the larger-model study, 6 resolved; 6 for the
expanded-host one, 3 resolved), each measured on its own: the configuration is the unit. Both panels are below
:data:`~rlvrambench_hf.scoring.intervals.MIN_UNITS`, so approvals get the exact range over the planned
configurations and the resolved-subset metrics the range over the resolved ones, each scored alone, with the note
saying so; a larger panel would be bootstrapped. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..data.schema.pins import UNRESOLVED
from ..scoring.intervals import IntervalOptions, numeric_names, settings, unit_block
from .core import MethodPredictions, panel_approvals, resolved_metrics

UNIT = "planned_configuration"
RESOLVED_UNIT = "resolved_configuration"
WHY_CONFIGURATIONS = (
    "each planned configuration of the study was measured on its own (one model, one panel): the configuration "
    "is the unit; approvals range over the planned ones, label and peak metrics over the resolved ones"
)
_SCOPE_FIELDS = ("queries", "distinct_target_configurations")


def _resampled(rows: Sequence[Mapping[str, Any]], weights: np.ndarray) -> list[Mapping[str, Any]]:
    return [row for row, n in zip(rows, weights.tolist()) for _ in range(n)]


def _approvals_of(
    rows: Sequence[Mapping[str, Any]], prediction: MethodPredictions
) -> Callable[[np.ndarray], dict[str, Any]]:
    return lambda weights: panel_approvals(_resampled(rows, weights), prediction)


def _metrics_of(
    resolved: Sequence[Mapping[str, Any]], prediction: MethodPredictions
) -> Callable[[np.ndarray], dict[str, Any]]:
    return lambda weights: resolved_metrics(_resampled(resolved, weights), prediction)


def add_followup_intervals(
    scores: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    methods: Mapping[str, MethodPredictions],
    options: IntervalOptions,
) -> dict[str, Any]:
    """``scores`` (:func:`~rlvrambench_hf.followup.core.score_panel` of ``rows`` and ``methods``) with an
    ``intervals`` block in every method's approvals and resolved-subset metrics, and ``interval_settings``."""
    resolved = [r for r in rows if r["observed_state"] != UNRESOLVED]
    approvals, metrics = {}, {}
    for name, prediction in methods.items():
        point = scores["approvals"][name]
        approvals[name] = {
            **point,
            "intervals": unit_block(
                _approvals_of(rows, prediction),
                point,
                numeric_names(point),
                unit=UNIT,
                units=len(rows),
                options=options,
            ),
        }
        point = scores["resolved_subset_metrics"][name]
        metrics[name] = {
            **point,
            "intervals": unit_block(
                _metrics_of(resolved, prediction),
                point,
                [n for n in numeric_names(point) if n not in _SCOPE_FIELDS],
                unit=RESOLVED_UNIT,
                units=len(resolved),
                options=options,
                stream=1,
            ),
        }
    out: dict[str, Any] = {}
    for key, value in scores.items():
        if key == "approvals":
            out["interval_settings"] = settings(options, UNIT, WHY_CONFIGURATIONS)
            out[key] = approvals
        elif key == "resolved_subset_metrics":
            out[key] = metrics
        else:
            out[key] = value
    return out
