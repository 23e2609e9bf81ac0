"""What the figures show, as pure functions over typed tables and score files (no matplotlib).

:func:`feasibility_matrix` (the boundary grid), :func:`stage_table` (per-stage peaks of the eligible processes) and
:func:`admission_curve` (recall against the screening budget, and against the total attempts spent);
:mod:`.plots` and :mod:`.curves` draw them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..arrow import arrow_ints, string_array
from ..errors import InputError, quote

MIB_PER_GIB = 1024
BOUNDARY_STUDY = "boundary"
BOUNDARY_GPU_COUNT = 2
BOUNDARY_LEVELS: tuple[str, ...] = ("c0", "c1", "c2", "c3", "c4", "c5")
STAGES: tuple[str, ...] = (
    "initializing",
    "rollout",
    "reference_logprob",
    "actor_update",
    "weight_sync",
    "validation",
    "checkpoint",
    "idle",
)


@dataclass(frozen=True)
class FeasibilityMatrix:
    """The boundary grid: one row per (model, workload), one column per level; None where no configuration."""

    rows: tuple[tuple[str, str], ...]
    levels: tuple[str, ...]
    states: tuple[tuple[str | None, ...], ...]
    peaks_mib: tuple[tuple[float | None, ...], ...]
    configuration_ids: tuple[tuple[str | None, ...], ...]

    def cell(self, model: str, workload: str, level: str) -> tuple[str | None, float | None]:
        """(repeated label, maximum completed peak in MiB) of one cell."""
        i, j = self.rows.index((model, workload)), self.levels.index(level)
        return self.states[i][j], self.peaks_mib[i][j]


@dataclass(frozen=True)
class CurvePoint:
    """One point of an admission curve: a rule's case-averaged recall at a per-case budget, with the attempts it
    cost (target attempts spent within the budget, donor attempts charged to the rule)."""

    rule: str
    budget: int
    macro_recall: float | None
    approved_memory_failure: int
    approved_above_margin: int
    target_attempts: int = 0
    donor_attempts: int = 0

    @property
    def total_attempts(self) -> int:
        """Target plus donor attempts: what the recall really cost."""
        return self.target_attempts + self.donor_attempts


def feasibility_matrix(configurations: pa.Table) -> FeasibilityMatrix:
    """The boundary study's 2-GPU c0–c5 grid from ``all_configurations`` (labels decoded)."""
    rows = [
        r
        for r in configurations.select(
            [
                "configuration_id",
                "study",
                "gpu_count",
                "configuration_level",
                "model_name",
                "workload_name",
                "observed_state",
                "max_completed_run_peak_mib",
            ]
        ).to_pylist()
        if r["study"] == BOUNDARY_STUDY
        and r["gpu_count"] == BOUNDARY_GPU_COUNT
        and r["configuration_level"] in BOUNDARY_LEVELS
    ]
    if not rows:
        raise InputError("no boundary-study configurations (2 GPUs, levels c0-c5) in this table")
    keys = tuple(sorted({(r["model_name"], r["workload_name"]) for r in rows}))
    cells: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in rows:
        key = (r["model_name"], r["workload_name"], r["configuration_level"])
        if key in cells:
            raise InputError(f"boundary grid cell {'/'.join(key)} has two configurations")
        cells[key] = r

    def grid(column: str) -> tuple[tuple[Any, ...], ...]:
        return tuple(tuple(cells.get((m, w, lv), {}).get(column) for lv in BOUNDARY_LEVELS) for m, w in keys)

    return FeasibilityMatrix(
        keys, BOUNDARY_LEVELS, grid("observed_state"), grid("max_completed_run_peak_mib"), grid("configuration_id")
    )


def stage_table(
    stages: pa.Table,
    configurations: pa.Table,
    *,
    configuration_id: str | None = None,
    study: str | None = None,
) -> pa.Table:
    """Stage records (``stage_measurements``) joined to their study, filtered and ordered by stage.

    Columns: configuration_id, study, run_id, stage, observed_peak_mib, coverage. Without a filter every record
    is kept. Stages follow :data:`STAGES`; ``unknown`` and any other stage come after them.
    """
    if configuration_id is not None and study is not None:
        raise InputError("give either a configuration id or a study, not both")
    studies = dict(
        zip(configurations.column("configuration_id").to_pylist(), configurations.column("study").to_pylist())
    )
    table = stages.select(["configuration_id", "run_id", "stage", "observed_peak_mib", "coverage"])
    # Arrow's own join and scalars built from buffers: pyarrow's Python converters would import pandas
    where = pc.index_in(table.column("configuration_id"), value_set=configurations.column("configuration_id"))
    study_column = pc.take(configurations.column("study"), where)
    table = table.add_column(1, "study", study_column)
    if configuration_id is not None:
        if configuration_id not in studies:
            raise InputError(f"unknown configuration id {quote(configuration_id)}")
        table = table.filter(pc.equal(table.column("configuration_id"), string_array([configuration_id])[0]))
        if table.num_rows == 0:
            raise InputError(f"configuration {configuration_id} has no stage measurements")
    if study is not None:
        known = sorted({s for s in studies.values() if s})
        if study not in known:
            raise InputError(f"unknown study {quote(study)}; studies: {', '.join(known)}")
        table = table.filter(pc.equal(table.column("study"), string_array([study])[0]))
    order = {stage: i for i, stage in enumerate(STAGES)}
    rank = arrow_ints(np.array([order.get(s, len(STAGES)) for s in table.column("stage").to_pylist()], np.int64))
    table = table.append_column("_rank", rank)
    table = table.sort_by(
        [("_rank", "ascending"), ("stage", "ascending"), ("configuration_id", "ascending"), ("run_id", "ascending")]
    )
    return table.drop_columns(["_rank"])


def admission_curve(report: Mapping[str, Any]) -> list[CurvePoint]:
    """Curve points from a replay report's ``summary`` (one per rule × budget), ordered by rule then budget."""
    try:
        points = [
            CurvePoint(
                rule=str(item["rule"]),
                budget=int(item["budget_target_attempts_per_case"]),
                macro_recall=item["macro_case_within_margin_recall"],
                approved_memory_failure=int(item["approved_memory_failure"]),
                approved_above_margin=int(item["approved_above_margin"]),
                target_attempts=int(item["spent_target_attempts"]),
                donor_attempts=int(item["donor_attempts"]),
            )
            for item in report["summary"]
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"replay report summary is malformed: missing or invalid {exc}") from None
    rules = list(dict.fromkeys(p.rule for p in points))
    return sorted(points, key=lambda p: (rules.index(p.rule), p.budget))


@dataclass(frozen=True)
class FoldApprovals:
    """One method on one held-out family: approvals by observed label, usable settings rejected, correct labels."""

    fold: str
    method: str
    approved_within_margin: int
    approved_above_margin: int
    approved_memory_failure: int
    rejected_within_margin: int
    correct: int
    queries: int


def fold_approvals(report: Mapping[str, Any]) -> list[FoldApprovals]:
    """The per-fold comparison of an estimator-comparison report (``rlvrambench estimate retrospective``), in fold
    then method order."""
    try:
        return [
            FoldApprovals(
                fold=str(fold),
                method=str(method),
                approved_within_margin=int(s["approved_within_margin"]),
                approved_above_margin=int(s["approved_above_margin"]),
                approved_memory_failure=int(s["approved_memory_failure"]),
                rejected_within_margin=int(s["rejected_within_margin"]),
                correct=int(s["correct_three_state"]),
                queries=int(s["queries"]),
            )
            for fold, content in report["folds"].items()
            for method, s in content["scores"].items()
        ]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"estimator comparison report is malformed: missing or invalid {exc}") from None
