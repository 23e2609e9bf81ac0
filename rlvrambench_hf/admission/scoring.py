"""Scoring final decisions against the evaluation truth: per-case metrics, missing-outcome sensitivity, summaries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import product
from typing import Any

from ..data.schema.pins import OUTCOME_LABELS, UNRESOLVED
from ..scoring.labels import ABOVE_MARGIN, MEMORY_FAILURE, WITHIN_MARGIN, Approvals
from .policy import ABSTAIN, APPROVE, REJECT
from .truth import Truth

UNSUITABLE = (ABOVE_MARGIN, MEMORY_FAILURE)
SUMMED_METRICS = (
    "approved",
    "approved_within_margin",
    "within_margin_targets",
    "approved_memory_failure",
    "approved_above_margin",
    "approved_unresolved",
    "unresolved_targets",
    "abstentions",
    "approved_known_memory_failure",
    "approved_known_above_margin",
)
COSTS = ("spent_target_attempts", "donor_attempts", "cold_start_attributed_attempts")
SUMMARY_HEAD = ("cases", "cases_with_defined_recall", "macro_case_within_margin_recall")


def case_metrics(
    candidate_ids: Sequence[str], decisions: Mapping[str, str], truth: Mapping[str, Truth]
) -> dict[str, Any]:
    """The metrics of one case's final decisions (keys in the published order)."""
    states = [truth[c].state for c in candidate_ids]
    chosen = [decisions[c] for c in candidate_ids]
    counts = Approvals.from_decisions(states, [d == APPROVE for d in chosen])
    approved = [c for c, d in zip(candidate_ids, chosen) if d == APPROVE]

    def decided(decision: str, label: str) -> int:
        return sum(d == decision and s == label for d, s in zip(chosen, states))

    metrics: dict[str, Any] = {
        "target_configurations": len(candidate_ids),
        "within_margin_targets": counts.target(WITHIN_MARGIN),
        "approved": counts.total,
        "approved_within_margin": counts.of(WITHIN_MARGIN),
        "within_margin_recall": counts.within_margin_recall,
        "within_margin_approval_precision": counts.within_margin_approval_precision,
        "rejected_within_margin": decided(REJECT, WITHIN_MARGIN),
        "abstained_within_margin": decided(ABSTAIN, WITHIN_MARGIN),
        "abstentions": chosen.count(ABSTAIN),
        "unresolved_targets": counts.target(UNRESOLVED),
        "approved_unresolved": counts.of(UNRESOLVED),
        "approved_known_memory_failure": sum(truth[c].known_memory_failure for c in approved),
        "approved_known_above_margin": sum(truth[c].known_above_margin for c in approved),
    }
    for label in UNSUITABLE:
        metrics[f"{label}_targets"] = counts.target(label)
        metrics[f"approved_{label}"] = counts.of(label)
        metrics[f"{label}_among_approved"] = counts.among_approved(label)
        metrics[f"approval_rate_on_{label}_targets"] = counts.approval_rate(label)
    metrics["missing_outcome_sensitivity"] = missing_outcome_sensitivity(candidate_ids, decisions, truth)
    return metrics


def admissible_states(truth: Truth) -> tuple[str, ...]:
    """The labels an unresolved candidate could take given its evidence flags (a resolved one keeps its own)."""
    if truth.state != UNRESOLVED:
        return (truth.state,)
    if truth.known_memory_failure:
        return ("memory_failure",)
    if truth.known_above_margin:
        return ("above_margin", "memory_failure")
    return OUTCOME_LABELS


def missing_outcome_sensitivity(
    candidate_ids: Sequence[str], decisions: Mapping[str, str], truth: Mapping[str, Truth]
) -> dict[str, Any]:
    """Recall and unsuitable approvals over every admissible assignment of the unresolved candidates."""
    approved = [decisions[c] == APPROVE for c in candidate_ids]
    recalls: list[float] = []
    unsuitable: list[int] = []
    undefined = 0
    for assignment in product(*(admissible_states(truth[c]) for c in candidate_ids)):
        counts = Approvals.from_decisions(assignment, approved)
        recall = counts.within_margin_recall
        if recall is None:
            undefined += 1
        else:
            recalls.append(recall)
        unsuitable.append(sum(counts.of(label) for label in UNSUITABLE))
    return {
        "within_margin_recall_min": min(recalls, default=None),
        "within_margin_recall_max": max(recalls, default=None),
        "assignments_with_undefined_recall": undefined,
        "unsuitable_approvals_min": min(unsuitable),
        "unsuitable_approvals_max": max(unsuitable),
    }


def summarize(items: Sequence[Mapping[str, Any]], *, with_costs: bool = True) -> dict[str, Any]:
    """Cases, defined-recall cases, macro (case-averaged) recall and the sums over per-case ``items``.

    Each item has ``metrics`` and, when ``with_costs``, the three cost fields.
    """
    recalls = [i["metrics"]["within_margin_recall"] for i in items if i["metrics"]["within_margin_recall"] is not None]
    out: dict[str, Any] = {
        "cases": len(items),
        "cases_with_defined_recall": len(recalls),
        "macro_case_within_margin_recall": sum(recalls) / len(recalls) if recalls else None,
    }
    for key in SUMMED_METRICS:
        out[key] = sum(i["metrics"][key] for i in items)
    if with_costs:
        for key in COSTS:
            out[key] = sum(i[key] for i in items)
    return out


def reference_decisions(candidate_ids: Sequence[str]) -> dict[str, dict[str, str]]:
    """The zero-cost references: approve every candidate, abstain on every candidate."""
    return {"approve_all": {c: APPROVE for c in candidate_ids}, "abstain_all": {c: ABSTAIN for c in candidate_ids}}
