"""Intervals on admission scores: the case is the unit, and four cases are too few for a bootstrap interval.

The panel's four model-workload cases were selected, not sampled, and a case's three candidates share its model,
workload and screening history: the card says they "are not 48 independent cases". So the unit is the case, and
with four of them every summary row gives the exact range over the cases instead of an interval (each case
scored alone: its recall, its approvals), and every per-case row states that one case is one unit. The code
would bootstrap cases if a protocol had :data:`~rlvrambench_hf.scoring.intervals.MIN_UNITS` or more. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..scoring.intervals import IntervalOptions, numeric_names, range_block, settings, unit_block
from .scoring import summarize

UNIT = "case"
WHY_CASES = (
    "the four cases were selected, not sampled, and each case's candidates share one model, workload and "
    "screening history (not 48 independent cases): the case is the unit"
)
#: Summary fields that describe the row rather than score it.
_ROW_FIELDS = ("budget_target_attempts_per_case", "cases", "cases_with_defined_recall")


def repeated(items: Sequence[Any], weights: np.ndarray) -> list[Any]:
    """``items`` with each one repeated as often as its weight says (a resample of units)."""
    return [item for item, w in zip(items, weights.tolist()) for _ in range(w)]


def summary_block(
    items: Sequence[Mapping[str, Any]], point: Mapping[str, Any], options: IntervalOptions, *, with_costs: bool
) -> dict[str, Any]:
    """The block of a summary over per-case ``items`` (cases are the units)."""
    names = [n for n in numeric_names(point) if n not in _ROW_FIELDS]
    return unit_block(
        lambda w: summarize(repeated(items, w), with_costs=with_costs),
        point,
        names,
        unit=UNIT,
        units=len(items),
        options=options,
    )


def case_block(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """One case's metrics: a single unit, so the block is its own value with the note saying why."""
    return range_block([metrics], numeric_names(metrics), unit=UNIT)


def add_replay_intervals(report: Mapping[str, Any], options: IntervalOptions) -> dict[str, Any]:
    """The replay score file with ``interval_settings`` and an ``intervals`` block in every summary row,
    per-case row and zero-cost reference."""
    summary = []
    for row in report["summary"]:
        items = [
            i
            for i in report["per_case"]
            if i["rule"] == row["rule"] and i["budget_target_attempts"] == row["budget_target_attempts_per_case"]
        ]
        summary.append({**row, "intervals": summary_block(items, row, options, with_costs=True)})
    out: dict[str, Any] = {}
    for name, value in report.items():
        if name == "per_case" or name == "zero_cost_references":
            out[name] = [{**i, "intervals": case_block(i["metrics"])} for i in value]
        elif name == "summary":
            out["interval_settings"] = settings(options, UNIT, WHY_CASES)
            out[name] = summary
        else:
            out[name] = value
    return out


def add_decision_intervals(scores: Mapping[str, Any], options: IntervalOptions) -> dict[str, Any]:
    """The score of final decisions (:func:`~rlvrambench_hf.admission.api.score_decisions`) with its blocks."""
    per_case = [{**i, "intervals": case_block(i["metrics"])} for i in scores["per_case"]]
    head = {k: v for k, v in scores.items() if k != "per_case"}
    block = summary_block(scores["per_case"], head, options, with_costs=False)
    return {**head, "intervals": block, "interval_settings": settings(options, UNIT, WHY_CASES), "per_case": per_case}
