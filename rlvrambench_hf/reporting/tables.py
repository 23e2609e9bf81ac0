"""The score tables of every face, as plain data: headers and rows of raw values (None for a null rate).

One renderer per table, shared by the command line (plain text) and the HTML report: :func:`followup_table`,
:func:`followup_summary` and :func:`followup_facts` (a follow-up study's scores, slots and costs),
:func:`transfer_table` (transfer scores per scope and
method, overall first, then the tracks in the documented order), :func:`confusion_matrices` (predicted against
observed labels, per scope), :func:`admission_table` (the replay summary with the total attempts) and
:func:`ledger_tables` (the replay's three cost ledgers and its cold-start totals). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ..data.schema.pins import OUTCOME_LABELS

#: The scope of a transfer score file that pools every track.
OVERALL = "overall"
TRANSFER_COLUMNS: tuple[str, ...] = (
    "queries",
    "correct_three_state",
    "three_state_accuracy",
    "approved",
    "approved_within_margin",
    "approved_memory_failure",
    "approved_above_margin",
    "rejected_within_margin",
    "within_margin_recall",
    "within_margin_approval_precision",
)
ADMISSION_COLUMNS: tuple[str, ...] = (
    "rule",
    "budget_target_attempts_per_case",
    "cases",
    "cases_with_defined_recall",
    "macro_case_within_margin_recall",
    "approved",
    "approved_within_margin",
    "approved_memory_failure",
    "approved_above_margin",
    "spent_target_attempts",
    "donor_attempts",
    "total_attempts",
    "cold_start_attributed_attempts",
)
FOLLOWUP_COLUMNS: tuple[str, ...] = (
    "method",
    "approved",
    "scored",
    "unscored",
    "unscored_known_failure",
    "unscored_known_above",
    "resolved_correct",
    "approved_memory_failure",
    "approved_above_margin",
    "recall",
    "precision",
    "peak_coverage",
    "peak_mae_mib",
)


@dataclass(frozen=True)
class Table:
    """Column names and rows of raw cell values (None: null)."""

    headers: tuple[str, ...]
    rows: list[list[object]]


def followup_summary(scores: Mapping[str, Any]) -> str:
    """``6 of 12 configurations resolved (full-panel coverage 0.5); unresolved: a, b``."""
    coverage = scores["full_panel_coverage"]
    shown = "null" if coverage is None else f"{coverage:.4f}".rstrip("0").rstrip(".")
    return (
        f"{scores['resolved_configurations']} of {scores['planned_configurations']} configurations resolved "
        f"(full-panel coverage {shown}); unresolved: {', '.join(scores['unresolved_ids']) or 'none'}"
    )


def followup_table(scores: Mapping[str, Any]) -> Table:
    """One row per method: full-panel approvals (scored, unscored and the evidence against the unscored ones)
    beside the resolved-subset label and peak metrics."""
    rows = []
    for method, a in scores["approvals"].items():
        m = scores["resolved_subset_metrics"][method]
        rows.append(
            [
                method,
                a["full_panel_approved_configurations"],
                a["scored_approved_configurations"],
                a["unscored_approved_configurations"],
                a["unscored_approvals_with_known_failure"],
                a["unscored_approvals_with_known_margin_exceedance"],
                m.get("correct_three_state"),
                m.get("approved_memory_failure"),
                m.get("approved_above_margin"),
                m.get("within_margin_recall"),
                m.get("within_margin_approval_precision"),
                m.get("completed_peak_prediction_coverage"),
                m.get("completed_peak_mae_mib"),
            ]
        )
    return Table(FOLLOWUP_COLUMNS, rows)


def followup_facts(scores: Mapping[str, Any]) -> list[str]:
    """The panel's slot facts and costs in two sentences (and any disagreement with its own summary and totals)."""
    lines = []
    slots, costs = scores.get("slots"), scores.get("costs")
    if slots:
        kinds, stages = _tally(slots["eligible_memory_failure_kinds"]), _tally(slots["eligible_memory_failure_stages"])
        failures = (
            f"{slots['eligible_memory_failures']} eligible memory failures (failure kind {kinds}; stage {stages})"
        )
        unresolved = f"{slots['unresolved_processes']} unresolved slots (failure kind "
        lines.append(
            f"slots: {slots['launched_processes']} of {slots['planned_processes']} planned processes launched, "
            f"{slots['eligible_processes']} eligible, {slots['completed_processes']} completed; {failures}; "
            f"{unresolved}{_tally(slots['unresolved_failure_kinds'])}); "
            f"{slots['resolved_configurations']} of {slots['planned_configurations']} configurations resolved"
        )
        lines += slots["summary_disagreements"]
    if costs:
        unknown = costs["unknown_allocation_records"] + costs["unknown_task_records"]
        lines.append(
            f"costs: {costs['allocation_gpu_hours']:.2f} allocation GPU-hours ({costs['allocations']} scheduler "
            f"allocations, {costs['allocation_gpu_seconds']:,.0f} GPU-seconds) and {costs['task_gpu_hours']:.2f} task "
            f"GPU-hours ({costs['task_gpu_seconds']:,.0f} task-provisioned GPU-seconds): separate scopes, never added"
            + (f"; {unknown} record(s) with unknown time, not counted as zero" if unknown else "")
        )
        lines += costs["totals_disagreements"]
    return lines


def _tally(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{value}: {count}" for value, count in counts.items()) or "none"


def followup_notes(scores: Mapping[str, Any]) -> list[str]:
    """The unscored approvals of each method, by id, and what the metrics cover."""
    notes = [
        f"{method} unscored approvals: {', '.join(a['unscored_approved_ids'])}"
        for method, a in scores["approvals"].items()
        if a["unscored_approved_ids"]
    ]
    return [*notes, scores["metric_scope"]]


def transfer_scopes(scores: Mapping[str, Any]) -> list[str]:
    """``overall``, then the tracks of a score file in the documented order (:data:`transfer.TRACKS`)."""
    from ..transfer import TRACKS

    present = scores["per_track"]
    return [OVERALL, *(t for t in TRACKS if t in present), *(t for t in present if t not in TRACKS)]


def _scope(scores: Mapping[str, Any], scope: str) -> Mapping[str, Any]:
    return cast("Mapping[str, Any]", scores[OVERALL] if scope == OVERALL else scores["per_track"][scope])


def transfer_table(methods: Mapping[str, Mapping[str, Any]]) -> Table:
    """One row per scope × method (scopes as :func:`transfer_scopes`, methods in the given order)."""
    scopes = list(dict.fromkeys(s for scores in methods.values() for s in transfer_scopes(scores)))
    rows = [
        [scope, method, *(_scope(scores, scope).get(c) for c in TRANSFER_COLUMNS)]
        for scope in scopes
        for method, scores in methods.items()
        if scope == OVERALL or scope in scores["per_track"]
    ]
    return Table(("scope", "method", *TRANSFER_COLUMNS), rows)


def confusion_matrices(scores: Mapping[str, Any]) -> tuple[list[str], list[list[list[int]]]]:
    """The scopes of a transfer score file and, per scope, its 3×3 confusion matrix (rows: predicted label,
    columns: observed label, both in :data:`OUTCOME_LABELS` order)."""
    scopes = transfer_scopes(scores)
    matrices = []
    for scope in scopes:
        cells = _scope(scores, scope)["confusion_matrix_predicted_rows_observed_columns"]
        matrices.append([[int(cells[p][o]) for o in OUTCOME_LABELS] for p in OUTCOME_LABELS])
    return scopes, matrices


def admission_table(summary: Sequence[Mapping[str, Any]]) -> Table:
    """One row per rule × budget of a replay summary, with the total attempts (target + donor)."""
    rows = []
    for item in summary:
        total = {"total_attempts": item["spent_target_attempts"] + item["donor_attempts"]}
        rows.append([total[c] if c in total else item.get(c) for c in ADMISSION_COLUMNS])
    return Table(ADMISSION_COLUMNS, rows)


def ledger_tables(report: Mapping[str, Any]) -> list[tuple[str, Table]]:
    """The three cost ledgers of a replay report and its cold-start totals, each a titled table (recorded
    GPU-seconds as whole seconds with thousands separators)."""
    ledgers = report["ledgers"]
    donor = ledgers["donor_evidence"]
    donors = Table(
        ("case", "donor_configurations", "donor_attempts"),
        [[c["case_id"], c["donor_configurations"], c["donor_attempts"]] for c in donor["cases"]]
        + [["all cases", donor["donor_configurations"], donor["donor_attempts"]]],
    )
    requested = ledgers["requested_target_attempts"]
    budgets = list(dict.fromkeys(r["budget_target_attempts_per_case"] for r in requested))
    per_rule: dict[str, dict[str, Any]] = {}
    for r in requested:
        per_rule.setdefault(r["rule"], {})[r["budget_target_attempts_per_case"]] = r["requested_target_attempts"]
    targets = Table(
        ("rule", *(f"budget {b}" for b in budgets)),
        [[rule, *(row.get(b) for b in budgets)] for rule, row in per_rule.items()],
    )
    runs = ledgers["physical_runs"]
    physical = Table(
        ("recorded_attempts", "screens", "hidden_evaluations", "validated_outcomes", "recorded_gpu_seconds"),
        [
            [
                runs["recorded_attempts"],
                runs["recorded_screen_attempts"],
                runs["recorded_evaluation_attempts"],
                runs["validated_outcomes"],
                None if runs["recorded_gpu_seconds"] is None else f"{runs['recorded_gpu_seconds']:,.0f}",
            ]
        ],
    )
    cold = Table(
        ("rule", "first_full_recall_budget", "donor_attempts", "target_attempts", "cold_start_attempts"),
        [
            [
                c["rule"],
                c["first_full_recall_budget"],
                c["donor_attempts"],
                c["target_attempts"],
                c["cold_start_attributed_attempts"],
            ]
            for c in report["cold_start_totals"]
        ],
    )
    return [
        ("ledger 1: donor evidence already available to transfer-informed rules", donors),
        ("ledger 2: target attempts requested at each budget (all cases)", targets),
        (
            "ledger 3: physical runs collected to evaluate the rules, hidden evaluations included "
            f"(GPU-seconds: {runs['gpu_seconds_scope']})",
            physical,
        ),
        ("cold start: donor plus target attempts at the first budget with full recall", cold),
    ]
