"""The three cost ledgers of the admission replay, kept apart as the dataset card asks, and the cold-start totals.

1. **Donor evidence**: the recorded donor attempts already available to transfer-informed rules.
2. **Requested target attempts**: the screens each rule requested at each budget.
3. **Physical runs**: every invocation collected to evaluate the rules, hidden evaluation seeds included, with its
   recorded GPU-seconds (elapsed time times the allocated GPUs; no queue time or allocation overhead).

The **cold-start totals** charge the donor investment as well: donor plus target attempts at the first budget where
a rule reaches full recall. Attempts are invocations, not equal units of work. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..data.schema.pins import UNRESOLVED
from .attempts import Attempt
from .protocol import EVALUATION, SCREEN, Protocol
from .replay import donor_attempts

GPU_SECONDS_SCOPE = "each invocation's elapsed time times its allocated GPUs; no queue time or allocation overhead"
FULL_RECALL = 1.0


def donor_ledger(protocol: Protocol) -> dict[str, Any]:
    """Ledger 1: per case, the donor configurations and their distinct recorded attempts."""
    cases = [
        {
            "case_id": case.case_id,
            "donor_configurations": len({d.configuration_id for d in case.donors.values()}),
            "donor_attempts": donor_attempts(case),
        }
        for case in protocol.cases
    ]
    return {
        "donor_configurations": sum(c["donor_configurations"] for c in cases),
        "donor_attempts": sum(c["donor_attempts"] for c in cases),
        "cases": cases,
    }


def requested_ledger(summary: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Ledger 2: the target attempts each rule requested at each budget (summed over the cases)."""
    return [
        {
            "rule": s["rule"],
            "budget_target_attempts_per_case": s["budget_target_attempts_per_case"],
            "requested_target_attempts": s["spent_target_attempts"],
        }
        for s in summary
    ]


def physical_ledger(attempts: Sequence[Attempt], gpus: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Ledger 3: every recorded invocation, screens and hidden evaluations, the validated outcomes among them and
    the recorded GPU-seconds (``gpus``: allocated GPUs per attempt id; without it the seconds are null). An attempt
    without an elapsed time or GPU count is counted apart, never as zero seconds."""
    timed: dict[str, float] = {}
    for a in attempts:
        if a.elapsed_seconds is not None and gpus is not None and a.attempt_id in gpus:
            timed[a.attempt_id] = a.elapsed_seconds * gpus[a.attempt_id]
    known = gpus is not None

    def seconds(role: str | None) -> float | None:
        picked = [timed[a.attempt_id] for a in attempts if a.attempt_id in timed and role in (None, a.role)]
        return math.fsum(picked) if known else None

    return {
        "recorded_attempts": len(attempts),
        "recorded_screen_attempts": sum(a.role == SCREEN for a in attempts),
        "recorded_evaluation_attempts": sum(a.role == EVALUATION for a in attempts),
        "validated_outcomes": sum(a.state != UNRESOLVED for a in attempts),
        "recorded_gpu_seconds": seconds(None),
        "recorded_screen_gpu_seconds": seconds(SCREEN),
        "recorded_evaluation_gpu_seconds": seconds(EVALUATION),
        "attempts_without_gpu_seconds": len(attempts) - len(timed),
        "gpu_seconds_scope": GPU_SECONDS_SCOPE,
    }


def cold_start_totals(summary: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per rule: the first budget with full case-averaged recall and the donor plus target attempts it took there
    (null when no replayed budget reaches full recall)."""
    out = []
    for rule in dict.fromkeys(s["rule"] for s in summary):
        rows = sorted((s for s in summary if s["rule"] == rule), key=lambda s: s["budget_target_attempts_per_case"])
        full = next((s for s in rows if s["macro_case_within_margin_recall"] == FULL_RECALL), None)
        out.append(
            {
                "rule": rule,
                "first_full_recall_budget": None if full is None else full["budget_target_attempts_per_case"],
                "donor_attempts": None if full is None else full["donor_attempts"],
                "target_attempts": None if full is None else full["spent_target_attempts"],
                "cold_start_attributed_attempts": None if full is None else full["cold_start_attributed_attempts"],
            }
        )
    return out


def ledgers(
    protocol: Protocol,
    attempts: Sequence[Attempt],
    summary: Sequence[Mapping[str, Any]],
    gpu_counts: Mapping[str, int] | None,
) -> dict[str, Any]:
    """The three ledgers of a replay; ``gpu_counts`` gives each candidate's allocated GPUs (an attempt's candidate is
    the one its slot belongs to in the protocol)."""
    roles = protocol.slot_roles
    gpus = None
    if gpu_counts is not None:
        candidate = {a.attempt_id: roles[a.slot_id][1] for a in attempts if a.slot_id in roles}
        gpus = {a: gpu_counts[c] for a, c in candidate.items() if c in gpu_counts}
    return {
        "donor_evidence": donor_ledger(protocol),
        "requested_target_attempts": requested_ledger(summary),
        "physical_runs": physical_ledger(attempts, gpus),
    }
