"""Scoring final decisions against the evaluation truth: per-case metrics, missing-outcome sensitivity, summaries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import product

from ..data.registry import OUTCOME_LABELS, UNRESOLVED
from .policy import ABSTAIN, APPROVE, REJECT
from .truth import Truth

UNSUITABLE = ("above_margin", "memory_failure")
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


def ratio(numerator: int, denominator: int) -> float | None:
    """``numerator / denominator``, or ``None`` when the denominator is zero."""
    return numerator / denominator if denominator else None


def case_metrics(candidate_ids: Sequence[str], decisions: Mapping[str, str], truth: Mapping[str, Truth]) -> dict:
    """The metrics of one case's final decisions (keys in the published order)."""
    state = {c: truth[c].state for c in candidate_ids}
    approved = [c for c in candidate_ids if decisions[c] == APPROVE]

    def count(ids: Sequence[str], label: str) -> int:
        return sum(state[c] == label for c in ids)

    def decided(decision: str, label: str) -> int:
        return sum(decisions[c] == decision and state[c] == label for c in candidate_ids)

    within = count(candidate_ids, "within_margin")
    approved_within = count(approved, "within_margin")
    metrics: dict = {
        "target_configurations": len(candidate_ids),
        "within_margin_targets": within,
        "approved": len(approved),
        "approved_within_margin": approved_within,
        "within_margin_recall": ratio(approved_within, within),
        "within_margin_approval_precision": ratio(approved_within, len(approved)),
        "rejected_within_margin": decided(REJECT, "within_margin"),
        "abstained_within_margin": decided(ABSTAIN, "within_margin"),
        "abstentions": sum(decisions[c] == ABSTAIN for c in candidate_ids),
        "unresolved_targets": count(candidate_ids, UNRESOLVED),
        "approved_unresolved": count(approved, UNRESOLVED),
        "approved_known_memory_failure": sum(truth[c].known_memory_failure for c in approved),
        "approved_known_above_margin": sum(truth[c].known_above_margin for c in approved),
    }
    for label in UNSUITABLE:
        targets, hits = count(candidate_ids, label), count(approved, label)
        metrics[f"{label}_targets"] = targets
        metrics[f"approved_{label}"] = hits
        metrics[f"{label}_among_approved"] = ratio(hits, len(approved))
        metrics[f"approval_rate_on_{label}_targets"] = ratio(hits, targets)
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
) -> dict:
    """Recall and unsuitable approvals over every admissible assignment of the unresolved candidates."""
    approved = [decisions[c] == APPROVE for c in candidate_ids]
    recalls: list[float] = []
    unsuitable: list[int] = []
    undefined = 0
    for assignment in product(*(admissible_states(truth[c]) for c in candidate_ids)):
        within = sum(s == "within_margin" for s in assignment)
        hits = sum(a and s == "within_margin" for a, s in zip(approved, assignment))
        if within:
            recalls.append(hits / within)
        else:
            undefined += 1
        unsuitable.append(sum(a and s in UNSUITABLE for a, s in zip(approved, assignment)))
    return {
        "within_margin_recall_min": min(recalls, default=None),
        "within_margin_recall_max": max(recalls, default=None),
        "assignments_with_undefined_recall": undefined,
        "unsuitable_approvals_min": min(unsuitable),
        "unsuitable_approvals_max": max(unsuitable),
    }


def summarize(items: Sequence[Mapping], *, with_costs: bool = True) -> dict:
    """Cases, defined-recall cases, macro (case-averaged) recall and the sums over per-case ``items``.

    Each item has ``metrics`` and, when ``with_costs``, the three cost fields.
    """
    recalls = [i["metrics"]["within_margin_recall"] for i in items if i["metrics"]["within_margin_recall"] is not None]
    out: dict = {
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
