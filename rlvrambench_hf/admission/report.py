"""The score file of a replay in the published format, the summary CSV, and the inputs a policy may see."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InputError, quote
from .attempts import Attempt, slot_history, validate_attempts
from .ledgers import cold_start_totals, ledgers
from .policy import builtin_rule, policy_name, policy_uses_donors
from .protocol import SCREEN, Case, Protocol
from .replay import CaseReplay, replay_case
from .scoring import COSTS, SUMMARY_HEAD, SUMMED_METRICS, case_metrics, reference_decisions, summarize
from .truth import Truth, candidate_truth, physical_collection, screen_agreement

SCOPE = (
    "Offline replay of a frozen admission protocol: four selected model-workload cases with three "
    "candidates each, not an online deployment trial or a population estimate."
)
COST_WARNING = (
    "Attempts are invocations, not equal units of GPU time: a donor attempt and a five-step target "
    "screen differ in work, and hidden evaluation runs are research cost that no policy sees."
)
EVIDENCE_FLAGS_WARNING = (
    "Known memory-failure and known above-margin flags are evidence kept beside the label; "
    "they overlap with the outcome categories and with each other, so do not add them up."
)
SUMMARY_COLUMNS = ("rule", "budget_target_attempts_per_case") + SUMMARY_HEAD + SUMMED_METRICS + COSTS


def check_budgets(budgets: Sequence[Any]) -> tuple[int, ...]:
    """``budgets`` as distinct non-negative integers, in the given order."""
    out = tuple(budgets)
    if not out:
        raise InputError("no budget given")
    for b in out:
        if not isinstance(b, int) or isinstance(b, bool) or b < 0:
            raise InputError(f"budget {quote(b)} is not a non-negative integer")
    if len(set(out)) != len(out):
        raise InputError(f"budgets {list(out)} repeat a value")
    return out


def build_report(
    protocol: Protocol,
    attempts: Sequence[Attempt],
    policies: Sequence[Any],
    budgets: Sequence[int],
    gpu_counts: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Validate ``attempts``, replay every policy at every budget on every case and score it; the three cost ledgers
    and the cold-start totals follow (``gpu_counts``: allocated GPUs per candidate, for the recorded GPU-seconds)."""
    budgets = check_budgets(budgets)
    if not policies:
        raise InputError("no rule or policy to replay")
    names = [policy_name(p) for p in policies]
    if len(set(names)) != len(names):
        raise InputError(f"policy names must be distinct, got {', '.join(names)}")
    validate_attempts(protocol, attempts)
    truth = candidate_truth(protocol, attempts)
    screen_history = slot_history(a for a in attempts if a.role == SCREEN)
    per_case = []
    for case in protocol.cases:
        screens = {c.candidate_id: screen_history.get(c.screen_slot_id, []) for c in case.candidates}
        for policy in policies:
            for budget in budgets:
                per_case.append(case_item(replay_case(policy, protocol, case, budget, screens), case, truth))
    summary = []
    for name in names:
        for budget in budgets:
            items = [i for i in per_case if i["rule"] == name and i["budget_target_attempts"] == budget]
            summary.append({"rule": name, "budget_target_attempts_per_case": budget, **summarize(items)})
    return {
        "protocol_version": protocol.version,
        "scope": SCOPE,
        "cost_warning": COST_WARNING,
        "evidence_flags_warning": EVIDENCE_FLAGS_WARNING,
        "physical_collection": physical_collection(attempts),
        "candidate_evaluation": {cid: t.as_dict() for cid, t in truth.items()},
        "per_case": per_case,
        "summary": summary,
        "zero_cost_references": zero_cost_references(protocol, truth),
        "ledgers": ledgers(protocol, attempts, summary, gpu_counts),
        "cold_start_totals": cold_start_totals(summary),
        "screen_agreement": screen_agreement(protocol, attempts, truth),
    }


def case_item(replay: CaseReplay, case: Case, truth: dict[str, Truth]) -> dict[str, Any]:
    return {
        "case_id": replay.case_id,
        "rule": replay.rule,
        "budget_target_attempts": replay.budget,
        "spent_target_attempts": replay.spent_target_attempts,
        "donor_attempts": replay.donor_attempts,
        "cold_start_attributed_attempts": replay.cold_start_attributed_attempts,
        "decisions": dict(replay.decisions),
        "transcript": [s.as_dict() for s in replay.transcript],
        "metrics": case_metrics(case.candidate_ids, replay.decisions, truth),
    }


def zero_cost_references(protocol: Protocol, truth: dict[str, Truth]) -> list[dict[str, Any]]:
    """Approve-all and abstain-all per case."""
    return [
        {"case_id": case.case_id, "rule": rule, "metrics": case_metrics(case.candidate_ids, decisions, truth)}
        for case in protocol.cases
        for rule, decisions in reference_decisions(case.candidate_ids).items()
    ]


def summary_csv(summary: Sequence[dict[str, Any]]) -> str:
    """The summary rows as CSV, one row per rule × budget, columns :data:`SUMMARY_COLUMNS` (null → blank)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(SUMMARY_COLUMNS)
    for row in summary:
        writer.writerow(["" if row[k] is None else row[k] for k in SUMMARY_COLUMNS])
    return buffer.getvalue()


def upstream_inputs_for_rule(protocol_json: Any, rule: str) -> list[dict[str, Any]]:
    """``decision_benchmark.py inputs``' list (kobzaond/RLVRAMBench-reproduce) from the protocol's JSON content: per
    case ``case_id``, ``model_family``, ``dataset``, ``query_order``, the candidates as the protocol writes them
    without their ``slot_ids``, the donors (``{}`` for ``direct_screen``), ``memory_limit_mib`` and
    ``additional_donor_guard_mib``. The protocol is validated first; only the three published rules have this view."""
    from .protocol import parse_protocol

    parse_protocol(protocol_json)
    builtin_rule(rule)  # one of the three published rules, or a one-line error
    return [
        {
            "case_id": case["case_id"],
            "model_family": case["model_family"],
            "dataset": case["dataset"],
            "query_order": case["query_order"],
            "candidates": [{k: v for k, v in c.items() if k != "slot_ids"} for c in case["candidates"]],
            "donors": case["donors"] if rule != "direct_screen" else {},
            "memory_limit_mib": protocol_json["memory_limit_mib"],
            "additional_donor_guard_mib": protocol_json["additional_donor_guard_mib"],
        }
        for case in protocol_json["cases"]
    ]


def inputs_for_rule(protocol: Protocol, rule: str) -> dict[str, Any]:
    """Everything a published rule may see: protocol cases, candidates, query order and, if it uses them, donors."""
    policy = builtin_rule(rule)
    uses_donors = policy_uses_donors(policy)
    cases = []
    for case in protocol.cases:
        item: dict[str, Any] = {
            "case_id": case.case_id,
            "model_family": case.model_family,
            "dataset": case.dataset,
            "candidates": [
                {
                    "candidate_id": c.candidate_id,
                    "configuration_level": c.configuration_level,
                    "actor_micro_batch": c.actor_micro_batch,
                    "reservation": c.reservation,
                    "screen_slot_id": c.screen_slot_id,
                }
                for c in case.candidates
            ],
            "query_order": list(case.query_order),
        }
        if uses_donors:
            item["donors"] = {
                cid: {
                    "configuration_id": d.configuration_id,
                    "observed_state": d.observed_state,
                    "max_completed_run_peak_mib": d.max_completed_run_peak_mib,
                    "recorded_attempt_ids": list(d.recorded_attempt_ids),
                }
                for cid, d in case.donors.items()
            }
        cases.append(item)
    return {
        "protocol_version": protocol.version,
        "rule": policy_name(policy),
        "uses_donors": uses_donors,
        "memory_limit_mib": protocol.memory_limit_mib,
        "additional_donor_guard_mib": protocol.donor_guard_mib,
        "budgets_per_case": list(protocol.budgets),
        "charging": protocol.texts.get("cost_scope", ""),
        "decision_rule": protocol.texts.get("decision_rule", ""),
        "cases": cases,
    }
