"""Admission panel: validation, truth, the three published rules, user policies, scoring and the replay command.

The figures are the published ones (dataset card, "Observed admission results"). The user policies below are
replayed through ``--policy tests/test_admission.py:NAME``, so this file must stay importable on its own
(``conftest`` is imported lazily).
"""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path

import pytest

from rlvrambench_hf.admission import (
    RULES,
    SUMMARY_COLUMNS,
    build_report,
    load_policy,
    next_in_query_order,
    policy_inputs,
    replay_report,
    score_decisions,
)
from rlvrambench_hf.admission.attempts import attempts_from_records, slot_history, validate_attempts
from rlvrambench_hf.admission.policy import builtin_rule
from rlvrambench_hf.admission.protocol import parse_protocol
from rlvrambench_hf.errors import InputError

RESULTS = "benchmark/decision/results"
PROTOCOL = "benchmark/decision/protocol.json"
BUILTIN = ("source_copy", "headroom_guard", "direct_screen")
QG, QM, PG, PM = (
    "qwen25_3b-gsm8k-shape1024-n4-steps5",
    "qwen25_3b-math-shape1024-n4-steps5",
    "phi4_mini-gsm8k-shape1024-n4-steps5",
    "phi4_mini-math-shape1024-n4-steps5",
)


# ---- user policies (replayed via --policy from this file) -------------------------------------------------


class ReverseScreens:
    """A user policy, not derived from the package's base class: no donors, screens in reverse query order."""

    name = "reverse_screens"
    uses_donors = False

    def initial_decisions(self, task):
        return {c: "abstain" for c in task.candidate_ids}

    def next_action(self, task, revealed):
        done = {s.candidate_id for s in revealed}
        return next((c for c in reversed(task.query_order) if c not in done), "stop")


class MirrorDirect:
    """The direct-screen rule written from scratch by a user: must score exactly like the built-in rule."""

    name = "mirror_direct"
    uses_donors = False

    def initial_decisions(self, task):
        return dict.fromkeys(task.candidate_ids, "abstain")

    def next_action(self, task, revealed):
        return next_in_query_order(task, revealed)


class OneScreenThenStop:
    """Donor copy that screens one candidate at most and then stops, whatever the budget."""

    name = "one_screen"

    def initial_decisions(self, task):
        return {
            c: "approve" if task.donors[c].observed_state == "within_margin" else "reject" for c in task.candidate_ids
        }

    def next_action(self, task, revealed):
        return "stop" if revealed else task.query_order[0]


class Raising:
    name = "raising"

    def initial_decisions(self, task):
        return dict.fromkeys(task.candidate_ids, "abstain")

    def next_action(self, task, revealed):
        raise RuntimeError("my model is not loaded")


class InvalidAction:
    name = "invalid_action"

    def initial_decisions(self, task):
        return dict.fromkeys(task.candidate_ids, "abstain")

    def next_action(self, task, revealed):
        return "screen everything"


class RepeatsScreen:
    name = "repeats"

    def initial_decisions(self, task):
        return dict.fromkeys(task.candidate_ids, "abstain")

    def next_action(self, task, revealed):
        return task.query_order[0]


class BadDecision:
    name = "bad_decision"

    def initial_decisions(self, task):
        return dict.fromkeys(task.candidate_ids, "maybe")

    def next_action(self, task, revealed):
        return "stop"


class MissingDecision:
    name = "missing_decision"

    def initial_decisions(self, task):
        return {task.candidate_ids[0]: "approve"}

    def next_action(self, task, revealed):
        return "stop"


NOT_A_POLICY = object()


# ---- fixtures and helpers -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report(snapshot: Path) -> dict:
    return replay_report(snapshot)


@pytest.fixture(scope="module")
def protocol_data(snapshot: Path) -> dict:
    return json.loads((snapshot / PROTOCOL).read_text())


@pytest.fixture(scope="module")
def records(snapshot: Path) -> list[dict]:
    return json.loads((snapshot / RESULTS / "attempts.json").read_text())


def summary_of(report: dict, rule: str, budget: int) -> dict:
    return next(s for s in report["summary"] if s["rule"] == rule and s["budget_target_attempts_per_case"] == budget)


def item_of(report: dict, case: str, rule: str, budget: int) -> dict:
    return next(
        i
        for i in report["per_case"]
        if i["case_id"] == case and i["rule"] == rule and i["budget_target_attempts"] == budget
    )


def replay(protocol_data: dict, records: list[dict], policies=None, budgets=(0, 1, 2, 3)) -> dict:
    policies = policies or [builtin_rule(r) for r in BUILTIN]
    return build_report(parse_protocol(protocol_data), attempts_from_records(records, "test"), policies, budgets)


def record(records: list[dict], slot_suffix: str, case: str = QG) -> dict:
    """The record of slot ``decision-<case>-<slot_suffix>`` (e.g. ``c3-s141``)."""
    slot = f"decision-{case}-{slot_suffix}"
    return next(r for r in records if r["slot_id"] == slot)


def cli(*args: str, **kwargs):
    from conftest import invoke

    return invoke(*args, **kwargs)


# ---- the published figures ----------------------------------------------------------------------------------


def test_all_48_planned_processes_validate(protocol_data: dict, records: list[dict], snapshot: Path) -> None:
    protocol = parse_protocol(protocol_data)
    attempts = attempts_from_records(records, "attempts.json")
    validate_attempts(protocol, attempts)
    assert len(attempts) == 48
    planned = set(protocol.slot_roles)
    assert len(planned) == 48 and {a.slot_id for a in attempts} == planned
    assert all(len(slot) == 1 for slot in slot_history(attempts).values())  # no replacement


def test_truth_of_the_twelve_candidates(report: dict) -> None:
    truth = report["candidate_evaluation"]
    assert len(truth) == 12
    states = [t["state"] for t in truth.values()]
    assert (states.count("within_margin"), states.count("above_margin"), states.count("memory_failure")) == (6, 2, 4)
    assert states.count("unresolved") == 0
    assert all(len(t["evaluation_attempt_ids"]) == 3 for t in truth.values())
    assert sum(t["known_memory_failure"] for t in truth.values()) == 4
    assert sum(t["known_above_margin"] for t in truth.values()) == 2
    assert truth[f"{PG}-c3"]["state"] == "above_margin" and truth[f"{QM}-c4"]["state"] == "memory_failure"
    assert report["physical_collection"] == {"recorded_screen_attempts": 12, "recorded_evaluation_attempts": 36}


def test_macro_recall_before_any_test(report: dict) -> None:
    assert [summary_of(report, r, 0)["macro_case_within_margin_recall"] for r in BUILTIN] == [1.0, 0.75, 0.0]


def test_first_budget_with_full_recall(report: dict) -> None:
    first = {
        r: min(b for b in range(4) if summary_of(report, r, b)["macro_case_within_margin_recall"] == 1.0)
        for r in BUILTIN
    }
    assert first == {"source_copy": 0, "headroom_guard": 1, "direct_screen": 3}


def test_direct_screen_recall_by_budget(report: dict) -> None:
    assert [summary_of(report, "direct_screen", b)["macro_case_within_margin_recall"] for b in (1, 2, 3)] == [
        0.25,
        0.75,
        1.0,
    ]


def test_donor_and_cold_start_attempts(report: dict) -> None:
    for budget in range(4):
        assert [summary_of(report, r, budget)["donor_attempts"] for r in BUILTIN] == [36, 36, 0]
    cold = [summary_of(report, r, b)["cold_start_attributed_attempts"] for r, b in zip(BUILTIN, (0, 1, 3))]
    assert cold == [36, 40, 12]
    assert item_of(report, QG, "source_copy", 2)["donor_attempts"] == 9


def test_no_rule_approves_a_memory_failure_or_above_margin_target(report: dict) -> None:
    for s in report["summary"]:
        assert (s["approved_memory_failure"], s["approved_above_margin"]) == (0, 0)
        assert (s["approved_known_memory_failure"], s["approved_known_above_margin"]) == (0, 0)
    for item in report["per_case"]:
        assert item["metrics"]["missing_outcome_sensitivity"]["unsuitable_approvals_max"] == 0
        assert item["metrics"]["within_margin_approval_precision"] in (1.0, None)


def test_guard_rejects_the_two_usable_qwen_candidates_first(report: dict) -> None:
    for case in (QG, QM):
        assert item_of(report, case, "headroom_guard", 0)["decisions"][f"{case}-c3"] == "reject"
        assert item_of(report, case, "source_copy", 0)["decisions"][f"{case}-c3"] == "approve"
    for budget in (1, 2, 3):  # identical by construction once the first queried candidate is screened
        for case in (QG, QM, PG, PM):
            assert (
                item_of(report, case, "headroom_guard", budget)["decisions"]
                == item_of(report, case, "source_copy", budget)["decisions"]
            )


def test_transcript_charges_before_revelation(report: dict) -> None:
    item = item_of(report, PM, "direct_screen", 2)
    assert item["spent_target_attempts"] == 2
    assert [
        (s["candidate_id"], s["charged_attempts"], s["cumulative_attempts"], s["observed_state"], s["decision"])
        for s in item["transcript"]
    ] == [(f"{PM}-c3", 1, 1, "above_margin", "reject"), (f"{PM}-c2", 1, 2, "within_margin", "approve")]
    assert item["transcript"][1]["peak_mib"] == 37252.0
    assert item["decisions"] == {f"{PM}-c2": "approve", f"{PM}-c3": "reject", f"{PM}-c4": "abstain"}
    assert item_of(report, PM, "direct_screen", 0)["transcript"] == []


# ---- output format ------------------------------------------------------------------------------------------

METRIC_KEYS = [
    "target_configurations",
    "within_margin_targets",
    "approved",
    "approved_within_margin",
    "within_margin_recall",
    "within_margin_approval_precision",
    "rejected_within_margin",
    "abstained_within_margin",
    "abstentions",
    "unresolved_targets",
    "approved_unresolved",
    "approved_known_memory_failure",
    "approved_known_above_margin",
    "above_margin_targets",
    "approved_above_margin",
    "above_margin_among_approved",
    "approval_rate_on_above_margin_targets",
    "memory_failure_targets",
    "approved_memory_failure",
    "memory_failure_among_approved",
    "approval_rate_on_memory_failure_targets",
    "missing_outcome_sensitivity",
]


def test_output_format(report: dict) -> None:
    assert list(report) == [
        "protocol_version",
        "scope",
        "cost_warning",
        "evidence_flags_warning",
        "physical_collection",
        "candidate_evaluation",
        "per_case",
        "summary",
        "zero_cost_references",
        "ledgers",
        "cold_start_totals",
        "screen_agreement",
    ]
    assert report["protocol_version"] == "decision-1.0"
    assert len(report["per_case"]) == 4 * 3 * 4 and len(report["summary"]) == 12
    item = report["per_case"][0]
    assert list(item) == [
        "case_id",
        "rule",
        "budget_target_attempts",
        "spent_target_attempts",
        "donor_attempts",
        "cold_start_attributed_attempts",
        "decisions",
        "transcript",
        "metrics",
    ]
    assert list(item["metrics"]) == METRIC_KEYS
    assert list(item["metrics"]["missing_outcome_sensitivity"]) == [
        "within_margin_recall_min",
        "within_margin_recall_max",
        "assignments_with_undefined_recall",
        "unsuitable_approvals_min",
        "unsuitable_approvals_max",
    ]
    assert tuple(report["summary"][0]) == SUMMARY_COLUMNS
    assert list(next(iter(report["candidate_evaluation"].values()))) == [
        "state",
        "known_memory_failure",
        "known_above_margin",
        "evaluation_attempt_ids",
    ]
    json.dumps(report, allow_nan=False)


def test_zero_cost_references(report: dict) -> None:
    refs = report["zero_cost_references"]
    assert len(refs) == 8 and {r["rule"] for r in refs} == {"approve_all", "abstain_all"}
    approve_all = next(r for r in refs if r["case_id"] == QG and r["rule"] == "approve_all")["metrics"]
    assert approve_all["approved"] == 3 and approve_all["within_margin_recall"] == 1.0
    assert approve_all["approved_memory_failure"] == 1 and approve_all["memory_failure_among_approved"] == 1 / 3
    assert approve_all["approval_rate_on_above_margin_targets"] is None
    abstain_all = next(r for r in refs if r["case_id"] == PG and r["rule"] == "abstain_all")["metrics"]
    assert abstain_all["abstentions"] == 3 and abstain_all["within_margin_recall"] == 0.0
    assert abstain_all["within_margin_approval_precision"] is None and abstain_all["above_margin_targets"] == 1


def test_csv_json_and_typed_attempts_give_identical_scores(snapshot: Path, report: dict) -> None:
    from_json = replay_report(snapshot, attempts_path=snapshot / RESULTS / "attempts.json")
    from_csv = replay_report(snapshot, attempts_path=snapshot / RESULTS / "attempts.csv")
    assert from_json == report and from_csv == report


# ---- protocol validation, one violation at a time ---------------------------------------------------------


def _case(p: dict, i: int = 0) -> dict:
    return p["cases"][i]


PROTOCOL_VIOLATIONS = {
    "version": (lambda p: p.update(protocol_version="decision-2.0"), "protocol_version"),
    "screen seed is an evaluation seed": (lambda p: p.update(screen_seed=142), "screen seed 142"),
    "two evaluation seeds": (lambda p: p.update(evaluation_seeds=[142, 143]), "exactly 3 distinct"),
    "repeated evaluation seed": (lambda p: p.update(evaluation_seeds=[142, 142, 143]), "exactly 3 distinct"),
    "duplicate case id": (lambda p: p["cases"][1].update(case_id=p["cases"][0]["case_id"]), "duplicate case id"),
    "duplicate candidate id": (
        lambda p: _case(p)["candidates"].append(copy.deepcopy(_case(p)["candidates"][0])),
        "query_order",
    ),
    "slot in two roles": (
        lambda p: _case(p)["candidates"][0]["slot_ids"].update(
            screen=[_case(p)["candidates"][0]["slot_ids"]["evaluation"][0]]
        ),
        "two roles",
    ),
    "slot of two candidates": (
        lambda p: _case(p)["candidates"][1]["slot_ids"].update(
            screen=list(_case(p)["candidates"][0]["slot_ids"]["screen"])
        ),
        "two places",
    ),
    "query order misses a candidate": (lambda p: _case(p)["query_order"].pop(), "query_order"),
    "query order repeats a candidate": (
        lambda p: _case(p).update(query_order=_case(p)["query_order"][:2] + _case(p)["query_order"][:1]),
        "query_order",
    ),
    "donors miss a candidate": (lambda p: _case(p)["donors"].popitem(), "donors must cover"),
    "two screen slots": (
        lambda p: _case(p)["candidates"][0]["slot_ids"]["screen"].append("extra-slot"),
        "exactly one screen slot",
    ),
    "two evaluation slots": (
        lambda p: _case(p)["candidates"][0]["slot_ids"]["evaluation"].pop(),
        "exactly 3 evaluation slots",
    ),
    "negative budget": (lambda p: p.update(budgets_per_case=[0, -1]), "budgets_per_case"),
    "fractional budget": (lambda p: p.update(budgets_per_case=[0, 1.5]), "budgets_per_case"),
}


@pytest.mark.parametrize("name", PROTOCOL_VIOLATIONS)
def test_protocol_violation(name: str, protocol_data: dict) -> None:
    mutate, message = PROTOCOL_VIOLATIONS[name]
    data = copy.deepcopy(protocol_data)
    mutate(data)
    with pytest.raises(InputError, match=message) as info:
        parse_protocol(data)
    assert "\n" not in str(info.value) and str(info.value).startswith("protocol: ")


def test_duplicate_candidate_id_across_cases(protocol_data: dict) -> None:
    data = copy.deepcopy(protocol_data)
    other = data["cases"][1]
    old, new = other["candidates"][0]["candidate_id"], data["cases"][0]["candidates"][0]["candidate_id"]
    other["candidates"][0]["candidate_id"] = new
    other["query_order"] = [new if c == old else c for c in other["query_order"]]
    other["donors"][new] = other["donors"].pop(old)
    with pytest.raises(InputError, match="duplicate candidate id"):
        parse_protocol(data)


# ---- attempt validation, one violation at a time ----------------------------------------------------------


def _replacement_pair(records: list[dict], *, first: dict | None = None, second: dict | None = None) -> None:
    """Turn the screen of QG-c3 into an unresolved setup failure followed by a within-margin replacement."""
    original = record(records, "c3-s141")
    replacement = {**original, "attempt_id": original["attempt_id"] + "-r", "attempt_index": 2, **(second or {})}
    original.update(
        {
            "state": "unresolved",
            "peak_mib": None,
            "completed_final_operations": False,
            "repair_reason": "port_binding_collision",
            **(first or {}),
        }
    )
    records.append(replacement)


def _three_attempts(records: list[dict]) -> None:
    _replacement_pair(
        records,
        second={
            "state": "unresolved",
            "peak_mib": None,
            "completed_final_operations": False,
            "repair_reason": "port_binding_collision",
        },
    )
    last = records[-1]
    records.append({**last, "attempt_id": last["attempt_id"] + "3", "attempt_index": 3})


def _nine_replacements(records: list[dict]) -> None:
    for r in [r for r in records if r["role"] == "evaluation"][:9]:
        records.append({**r, "attempt_id": r["attempt_id"] + "-r", "attempt_index": 2})
        r.update(
            state="unresolved",
            peak_mib=None,
            completed_final_operations=False,
            known_memory_failure=False,
            repair_reason="incorrect_gpu_visibility",
        )


ATTEMPT_VIOLATIONS = {
    "duplicate attempt id": (lambda rs: rs.append(dict(rs[0])), "duplicate attempt id"),
    "unknown slot": (lambda rs: rs[0].update(slot_id="decision-nowhere-s141"), "unknown slot"),
    "role differs from slot": (lambda rs: record(rs, "c3-s141").update(role="evaluation"), "is a screen slot"),
    "candidate differs from slot": (lambda rs: record(rs, "c3-s141").update(candidate_id=f"{QG}-c2"), "belongs to"),
    "unknown state": (lambda rs: rs[0].update(state="crashed"), "is not one of"),
    "completed without peak": (lambda rs: record(rs, "c3-s141").update(peak_mib=None), "positive peak_mib"),
    "non-positive peak": (lambda rs: record(rs, "c3-s141").update(peak_mib=-5.0), "positive peak_mib"),
    "infinite peak": (lambda rs: record(rs, "c3-s141").update(peak_mib=float("inf")), "not finite"),
    "within above the limit": (lambda rs: record(rs, "c3-s141").update(peak_mib=38913.0), "above the 38912"),
    "above at the limit": (lambda rs: record(rs, "c3-s142", PG).update(peak_mib=38912.0), "at or below"),
    "completed without final operations": (
        lambda rs: record(rs, "c3-s141").update(completed_final_operations=False),
        "completed final operations",
    ),
    "replacement after a resolved attempt": (
        lambda rs: _replacement_pair(rs, first={"state": "memory_failure", "known_memory_failure": True}),
        "not unresolved",
    ),
    "replacement after a known memory failure": (
        lambda rs: _replacement_pair(rs, first={"known_memory_failure": True}),
        "known memory failure",
    ),
    "replacement without a predefined reason": (
        lambda rs: _replacement_pair(rs, first={"repair_reason": "flaky node"}),
        "repair_reason 'flaky node'",
    ),
    "attempt indices skip": (lambda rs: record(rs, "c3-s141").update(attempt_index=2), "expected 1, 2"),
    "three attempts in a slot": (_three_attempts, "at most 2"),
    "more than eight replacements": (_nine_replacements, "more than 8 replacements"),
    "index is not an integer": (lambda rs: rs[0].update(attempt_index="1"), "attempt_index must be an integer"),
    "flag is not a boolean": (lambda rs: rs[0].update(known_memory_failure="yes"), "known_memory_failure"),
}


@pytest.mark.parametrize("name", ATTEMPT_VIOLATIONS)
def test_attempt_violation(name: str, protocol_data: dict, records: list[dict]) -> None:
    mutate, message = ATTEMPT_VIOLATIONS[name]
    data = copy.deepcopy(records)
    mutate(data)
    with pytest.raises(InputError, match=message) as info:
        replay(protocol_data, data)
    text = str(info.value)
    assert "\n" not in text and ("attempt " in text or "record #" in text)  # names the record


def test_violation_names_the_record(protocol_data: dict, records: list[dict]) -> None:
    data = copy.deepcopy(records)
    bad = record(data, "c2-s143", PM)
    bad["peak_mib"] = 40000.0
    with pytest.raises(InputError, match=f"attempt {bad['attempt_id']}: state within_margin but peak 40000"):
        replay(protocol_data, data)


# ---- engine: replacements, unavailable screens, unresolved truth -----------------------------------------


def test_replacement_is_read_only_if_budget_remains(protocol_data: dict, records: list[dict]) -> None:
    data = copy.deepcopy(records)
    _replacement_pair(data)
    out = replay(protocol_data, data, [builtin_rule("direct_screen")], (1, 2, 3))
    one, two, three = (item_of(out, QG, "direct_screen", b) for b in (1, 2, 3))
    assert one["spent_target_attempts"] == 1 and one["decisions"][f"{QG}-c3"] == "abstain"
    assert [s["observed_state"] for s in one["transcript"]] == ["unresolved"]
    assert two["spent_target_attempts"] == 2 and two["decisions"][f"{QG}-c3"] == "approve"
    steps = [(s["attempt_id"].endswith("-r"), s["cumulative_attempts"]) for s in two["transcript"]]
    assert steps == [(False, 1), (True, 2)]
    assert three["transcript"][-1]["candidate_id"] == f"{QG}-c2" and three["spent_target_attempts"] == 3
    assert summary_of(out, "direct_screen", 2)["macro_case_within_margin_recall"] == (0.5 + 1 + 0 + 1) / 4


def test_unstarted_screen_is_unavailable_free_and_ends_acquisition(protocol_data: dict, records: list[dict]) -> None:
    data = [r for r in records if r["slot_id"] != f"decision-{QG}-c3-s141"]
    out = replay(protocol_data, data, [builtin_rule("source_copy")], (3,))
    item = item_of(out, QG, "source_copy", 3)
    assert item["transcript"] == [{"candidate_id": f"{QG}-c3", "status": "not_started", "charged_attempts": 0}]
    assert item["spent_target_attempts"] == 0 and item["decisions"][f"{QG}-c3"] == "abstain"
    assert item["decisions"][f"{QG}-c2"] == "approve"  # never screened: the donor decision stands
    assert out["physical_collection"]["recorded_screen_attempts"] == 11


def _unresolve(records: list[dict], slot_suffix: str, case: str, **extra) -> None:
    record(records, slot_suffix, case).update(
        {
            "state": "unresolved",
            "peak_mib": None,
            "completed_final_operations": False,
            "known_memory_failure": False,
            **extra,
        }
    )


def test_unresolved_truth_and_missing_outcome_sensitivity(protocol_data: dict, records: list[dict]) -> None:
    data = copy.deepcopy(records)
    _unresolve(data, "c3-s142", QG)  # a within-margin candidate loses one evaluation slot: any label possible
    _unresolve(data, "c2-s144", PG)  # the only within-margin candidate of its case
    out = replay(protocol_data, data, [builtin_rule("source_copy"), builtin_rule("direct_screen")], (0,))
    truth = out["candidate_evaluation"]
    assert truth[f"{QG}-c3"] == {
        **truth[f"{QG}-c3"],
        "state": "unresolved",
        "known_memory_failure": False,
        "known_above_margin": False,
    }
    qg = item_of(out, QG, "source_copy", 0)["metrics"]
    assert (qg["within_margin_targets"], qg["unresolved_targets"], qg["approved_unresolved"]) == (1, 1, 1)
    assert qg["within_margin_recall"] == 1.0
    assert qg["missing_outcome_sensitivity"] == {
        "within_margin_recall_min": 1.0,
        "within_margin_recall_max": 1.0,
        "assignments_with_undefined_recall": 0,
        "unsuitable_approvals_min": 0,
        "unsuitable_approvals_max": 1,
    }
    pg = item_of(out, PG, "source_copy", 0)["metrics"]
    assert pg["within_margin_recall"] is None and pg["within_margin_approval_precision"] == 0.0
    assert pg["missing_outcome_sensitivity"] == {
        "within_margin_recall_min": 1.0,
        "within_margin_recall_max": 1.0,
        "assignments_with_undefined_recall": 2,
        "unsuitable_approvals_min": 0,
        "unsuitable_approvals_max": 1,
    }
    direct = item_of(out, PG, "direct_screen", 0)["metrics"]["missing_outcome_sensitivity"]
    assert (direct["within_margin_recall_min"], direct["within_margin_recall_max"]) == (0.0, 0.0)
    summary = summary_of(out, "source_copy", 0)
    assert summary["cases_with_defined_recall"] == 3 and summary["unresolved_targets"] == 2
    assert summary["approved_unresolved"] == 2 and summary["macro_case_within_margin_recall"] == 1.0


def test_known_evidence_restricts_admissible_labels(protocol_data: dict, records: list[dict]) -> None:
    data = copy.deepcopy(records)
    _unresolve(data, "c2-s142", QG, known_memory_failure=True)  # known failure: memory_failure only
    _unresolve(data, "c3-s142", PG)  # another slot is above margin: above or memory failure
    out = replay(protocol_data, data, [builtin_rule("source_copy")], (0,))
    truth = out["candidate_evaluation"]
    assert truth[f"{QG}-c2"]["state"] == "unresolved" and truth[f"{QG}-c2"]["known_memory_failure"]
    assert truth[f"{PG}-c3"]["state"] == "unresolved" and truth[f"{PG}-c3"]["known_above_margin"]
    qg = item_of(out, QG, "source_copy", 0)["metrics"]
    assert qg["approved_known_memory_failure"] == 1
    assert qg["missing_outcome_sensitivity"]["unsuitable_approvals_min"] == 1
    assert qg["missing_outcome_sensitivity"]["unsuitable_approvals_max"] == 1
    pg = item_of(out, PG, "source_copy", 0)["metrics"]
    assert pg["approved_known_above_margin"] == 0 and pg["missing_outcome_sensitivity"]["unsuitable_approvals_max"] == 0
    assert pg["missing_outcome_sensitivity"]["assignments_with_undefined_recall"] == 0


# ---- policies -------------------------------------------------------------------------------------------------


def test_builtin_rules_run_on_the_policy_api() -> None:
    assert set(RULES) == set(BUILTIN)
    for name in BUILTIN:
        policy = builtin_rule(name)
        assert policy.name == name and callable(policy.initial_decisions) and callable(policy.next_action)


def test_user_policy_scores_exactly_like_the_builtin_rule(snapshot: Path, report: dict) -> None:
    mirrored = replay_report(snapshot, rules=(), policy=MirrorDirect())
    for item in mirrored["per_case"]:
        builtin = item_of(report, item["case_id"], "direct_screen", item["budget_target_attempts"])
        assert {**item, "rule": "direct_screen"} == builtin


def test_user_policy_budget_and_stop(snapshot: Path) -> None:
    out = replay_report(snapshot, rules=(), policy=OneScreenThenStop(), budgets=(0, 3))
    assert [s["spent_target_attempts"] for s in out["summary"]] == [0, 4]
    assert [s["donor_attempts"] for s in out["summary"]] == [36, 36]  # uses_donors defaults to True
    assert summary_of(out, "one_screen", 3)["macro_case_within_margin_recall"] == 1.0


def test_policy_that_raises(snapshot: Path) -> None:
    with pytest.raises(
        InputError,
        match=r"policy raising, case .*, budget 1: next_action raised RuntimeError: "
        r"my model is not loaded",
    ):
        replay_report(snapshot, rules=(), policy=Raising(), budgets=(0, 1))


@pytest.mark.parametrize(
    "policy, message",
    [
        (InvalidAction(), "next_action returned 'screen everything', neither 'stop' nor a candidate"),
        (RepeatsScreen(), "requested .* again"),
        (BadDecision(), "initial_decisions gives 'maybe'"),
        (MissingDecision(), "initial_decisions has no decision for"),
    ],
)
def test_policy_with_invalid_output(snapshot: Path, policy, message: str) -> None:
    with pytest.raises(InputError, match=message):
        replay_report(snapshot, rules=(), policy=policy, budgets=(2,))


def test_policy_names_must_be_distinct(snapshot: Path) -> None:
    class Impostor(MirrorDirect):
        name = "direct_screen"

    with pytest.raises(InputError, match="distinct"):
        replay_report(snapshot, policy=Impostor())


@pytest.mark.parametrize(
    "spec, message",
    [
        ("no_colon_here", "module:attribute"),
        ("rlvrambench_nonexistent_module:Policy", "cannot import module"),
        ("rlvrambench_hf.admission:NoSuchPolicy", "has no attribute 'NoSuchPolicy'"),
        ("tests/test_admission.py:NOT_A_POLICY", "has no method initial_decisions or next_action"),
        ("tests/missing_file.py:Policy", "does not exist"),
    ],
)
def test_load_policy_errors(spec: str, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    with pytest.raises(InputError, match=message):
        load_policy(spec)


def test_load_policy_from_module_and_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    assert load_policy("rlvrambench_hf.admission.policy:HeadroomGuard").name == "headroom_guard"
    assert load_policy("tests/test_admission.py:ReverseScreens").name == "reverse_screens"


# ---- policy inputs ---------------------------------------------------------------------------------------------


def test_policy_inputs_never_show_evaluation_records(snapshot: Path, protocol_data: dict) -> None:
    direct = policy_inputs(snapshot, "direct_screen")
    copy_inputs = policy_inputs(snapshot, "source_copy")
    assert "donors" not in direct["cases"][0] and not direct["uses_donors"]
    assert copy_inputs["cases"][2]["donors"][f"{PG}-c3"]["max_completed_run_peak_mib"] == 39570.0
    assert [c["query_order"] for c in copy_inputs["cases"]] == [c["query_order"] for c in protocol_data["cases"]]
    text = json.dumps(copy_inputs)
    evaluation_slots = [s for c in protocol_data["cases"] for k in c["candidates"] for s in k["slot_ids"]["evaluation"]]
    assert not any(slot in text for slot in evaluation_slots)
    assert "evaluation_state" not in text and "s142" not in text
    with pytest.raises(InputError, match="unknown rule 'oracle'"):
        policy_inputs(snapshot, "oracle")


# ---- score_decisions (the metric's core) -------------------------------------------------------------------


def test_score_decisions_matches_the_replay(snapshot: Path, report: dict) -> None:
    items = [i for i in report["per_case"] if i["rule"] == "direct_screen" and i["budget_target_attempts"] == 2]
    ids = [c for i in items for c in i["decisions"]]
    decisions = [d for i in items for d in i["decisions"].values()]
    scores = score_decisions(ids, decisions, source=snapshot)
    assert scores["macro_case_within_margin_recall"] == 0.75 and scores["cases"] == 4
    assert [p["metrics"] for p in scores["per_case"]] == [i["metrics"] for i in items]
    expected = {
        k: v
        for k, v in summary_of(report, "direct_screen", 2).items()
        if k
        not in (
            "rule",
            "budget_target_attempts_per_case",
            "spent_target_attempts",
            "donor_attempts",
            "cold_start_attributed_attempts",
        )
    }
    assert {k: scores[k] for k in expected} == expected


def test_score_decisions_of_one_case(snapshot: Path) -> None:
    ids = [f"{PG}-c2", f"{PG}-c3", f"{PG}-c4"]
    scores = score_decisions(ids, ["approve", "approve", "reject"], source=snapshot)
    metrics = scores["per_case"][0]["metrics"]
    assert (
        scores["cases"] == 1 and metrics["approved_above_margin"] == 1 and metrics["above_margin_among_approved"] == 0.5
    )
    assert scores["approved_above_margin"] == 1 and scores["macro_case_within_margin_recall"] == 1.0


@pytest.mark.parametrize(
    "ids, decisions, message",
    [
        ([f"{PG}-c2"], ["approve", "reject"], "1 candidate ids but 2 decisions"),
        ([], [], "no decisions"),
        (["nobody-c9"], ["approve"], "unknown candidate id 'nobody-c9'"),
        ([f"{PG}-c2", f"{PG}-c2"], ["approve", "approve"], "duplicate candidate id"),
        ([f"{PG}-c2"], ["yes"], "decision 'yes'"),
        ([f"{PG}-c2", f"{PG}-c3"], ["approve", "reject"], f"case {PG} is incomplete: no decision for {PG}-c4"),
        ("abc", ["approve"], "candidate_ids must be a list"),
    ],
)
def test_score_decisions_validation(snapshot: Path, ids, decisions, message: str) -> None:
    with pytest.raises(InputError, match=message):
        score_decisions(ids, decisions, source=snapshot)


# ---- the replay command ---------------------------------------------------------------------------------------


def test_replay_command_writes_scores_and_summary(snapshot: Path, tmp_path: Path, report: dict) -> None:
    out, summary = tmp_path / "scores.json", tmp_path / "summary.csv"
    result = cli("--source", str(snapshot), "replay", "--output", str(out), "--summary", str(summary))
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text()) == report
    rows = list(csv.reader(summary.open()))
    assert tuple(rows[0]) == SUMMARY_COLUMNS and len(rows) == 13
    assert rows[5][:5] == ["headroom_guard", "0", "4", "4", "0.75"]
    assert "direct_screen   1" in result.stdout and "0.25" in result.stdout


def test_replay_command_attempt_forms_give_identical_files(snapshot: Path, tmp_path: Path) -> None:
    outputs = []
    for name in ("attempts.json", "attempts.csv"):
        out = tmp_path / f"{name}.scores.json"
        result = cli(
            "--source",
            str(snapshot),
            "replay",
            "--attempts",
            str(snapshot / RESULTS / name),
            "--rule",
            "direct_screen",
            "--budgets",
            "1,2",
            "--output",
            str(out),
        )
        assert result.returncode == 0, result.stderr
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    scores = json.loads(outputs[0])
    assert [s["macro_case_within_margin_recall"] for s in scores["summary"]] == [0.25, 0.75]


def test_user_policy_from_this_file_through_the_command(snapshot: Path, tmp_path: Path) -> None:
    out = tmp_path / "scores.json"
    root = Path(__file__).resolve().parents[1]
    result = cli(
        "--source",
        str(snapshot),
        "replay",
        "--policy",
        "tests/test_admission.py:ReverseScreens",
        "--output",
        str(out),
        cwd=root,
    )
    assert result.returncode == 0, result.stderr
    scores = json.loads(out.read_text())
    assert [s["rule"] for s in scores["summary"]] == ["reverse_screens"] * 4
    assert [s["macro_case_within_margin_recall"] for s in scores["summary"]] == [0.0, 0.25, 0.75, 1.0]
    assert [s["spent_target_attempts"] for s in scores["summary"]] == [0, 4, 8, 12]
    assert [s["donor_attempts"] for s in scores["summary"]] == [0, 0, 0, 0]
    first = item_of(scores, QG, "reverse_screens", 1)
    assert first["transcript"][0]["candidate_id"] == f"{QG}-c4" and first["decisions"][f"{QG}-c4"] == "reject"
    assert scores == replay_report(snapshot, rules=(), policy=ReverseScreens())


@pytest.mark.parametrize(
    "args, message",
    [
        (("--policy", "tests/test_admission.py:Raising"), "next_action raised RuntimeError: my model is not loaded"),
        (("--policy", "tests/test_admission.py:InvalidAction"), "neither 'stop' nor a candidate"),
        (("--policy", "tests/test_admission.py:Missing"), "has no attribute 'Missing'"),
        (("--budgets", "0,-1"), "--budgets '0,-1' must be comma-separated non-negative integers"),
        (("--budgets", "1,1"), "repeat a value"),
        (("--attempts", "nowhere.json"), "attempts file nowhere.json does not exist"),
        (("--attempts", "pyproject.toml"), "must end in .json or .csv"),
    ],
)
def test_replay_command_errors(snapshot: Path, tmp_path: Path, args: tuple, message: str) -> None:
    out, summary = tmp_path / "scores.json", tmp_path / "summary.csv"
    result = cli(
        "--source",
        str(snapshot),
        "replay",
        *args,
        "--output",
        str(out),
        "--summary",
        str(summary),
        cwd=Path(__file__).resolve().parents[1],
    )
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not out.exists() and not summary.exists() and list(tmp_path.iterdir()) == []


def test_replay_command_invalid_attempts_file(snapshot: Path, tmp_path: Path, records: list[dict]) -> None:
    data = copy.deepcopy(records)
    data[3]["state"] = "within_margin" if data[3]["state"] != "within_margin" else "above_margin"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    out = tmp_path / "scores.json"
    result = cli("--source", str(snapshot), "replay", "--attempts", str(bad), "--output", str(out))
    assert result.returncode == 2 and f"attempt {data[3]['attempt_id']}" in result.stderr
    assert not out.exists()


def test_rule_and_policy_are_exclusive(snapshot: Path, tmp_path: Path) -> None:
    result = cli(
        "--source",
        str(snapshot),
        "replay",
        "--rule",
        "source_copy",
        "--policy",
        "x:y",
        "--output",
        str(tmp_path / "s.json"),
    )
    assert result.returncode == 2 and "not allowed with" in result.stderr


def test_replay_from_the_hub(hub, tmp_path: Path, report: dict) -> None:
    out = tmp_path / "scores.json"
    result = cli("--source", "kobzaond/RLVRAMBench", "--revision", "main", "replay", "--output", str(out))
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text()) == report
    scores = score_decisions(
        [f"{QM}-c2", f"{QM}-c3", f"{QM}-c4"],
        ["approve", "reject", "reject"],
        source="kobzaond/RLVRAMBench",
        revision="main",
    )
    assert scores["macro_case_within_margin_recall"] == 0.5


# ---- the card's command lines ------------------------------------------------------------------------------------

UPSTREAM_TRANSCRIPT_KEYS = [  # decision_benchmark.py's acquire(): a charged screen
    "candidate_id",
    "attempt_id",
    "charged_attempts",
    "cumulative_attempts",
    "observed_state",
    "decision",
    "peak_mib",
]


def test_the_cards_replay_command_runs_as_written(snapshot: Path, tmp_path: Path) -> None:
    from conftest import cli_env, run_cli

    # the card: decision_benchmark.py replay --protocol benchmark/decision/protocol.json
    #   --attempts benchmark/decision/results/attempts.json --output admission-scores.json  (from the release folder)
    output = tmp_path / "admission-scores.json"
    args = ["--protocol", "benchmark/decision/protocol.json", "--attempts", "benchmark/decision/results/attempts.json"]
    done = run_cli("--source", ".", "replay", *args, "--output", str(output), cwd=snapshot, env=cli_env())
    assert done.returncode == 0, done.stderr
    scores = json.loads(output.read_text())
    assert [s["budget_target_attempts_per_case"] for s in scores["summary"]][:4] == [0, 1, 2, 3]  # the protocol's
    steps = [s for item in scores["per_case"] for s in item["transcript"]]
    assert steps and all(list(s) == UPSTREAM_TRANSCRIPT_KEYS for s in steps)
    first = next(i for i in scores["per_case"] if i["rule"] == "source_copy" and i["budget_target_attempts"] == 1)
    assert first["transcript"][0]["peak_mib"] == 37300.0 and first["transcript"][0]["cumulative_attempts"] == 1
    # the card: "Screens and separate evaluation repetitions agree in this panel."
    assert scores["screen_agreement"] == {
        "candidates": 12,
        "compared": 12,
        "agree": 12,
        "disagreeing_candidates": [],
        "evaluation_labels": {"within_margin": 6, "above_margin": 2, "memory_failure": 4},
    }
    assert "Screens and separate evaluation repetitions agree in this panel" in done.stdout
    # upstream's --data folder as the source is the release it belongs to
    again = tmp_path / "again.json"
    done = run_cli("--source", str(snapshot / "benchmark"), "replay", *args[:0], "--output", str(again))
    assert done.returncode == 0, done.stderr
    assert json.loads(again.read_text())["summary"] == scores["summary"]


def test_a_protocol_file_that_is_not_a_protocol_is_one_line(tmp_path: Path) -> None:
    from rlvrambench_hf.admission.api import read_protocol_file

    bad = tmp_path / "protocol.json"
    bad.write_text(json.dumps({"protocol_version": "decision-9"}))
    with pytest.raises(InputError, match=r"protocol file .*protocol\.json: protocol: protocol_version is 'decision-9'"):
        read_protocol_file(bad)


def test_a_screen_that_disagrees_with_its_evaluations_is_named(protocol_data: dict, records: list[dict]) -> None:
    from rlvrambench_hf.admission.truth import agreement_text

    data = copy.deepcopy(records)
    screen = record(data, "c4-s141")  # the memory-failing c4 of the first case screens above the margin instead
    screen.update({"state": "above_margin", "peak_mib": 40000.0, "completed_final_operations": True})
    out = replay(protocol_data, data, [builtin_rule("direct_screen")], (0,))
    agreement = out["screen_agreement"]
    assert (agreement["agree"], agreement["disagreeing_candidates"]) == (11, [f"{QG}-c4"])
    assert f"they disagree for: {QG}-c4" in agreement_text(agreement)


def test_replay_takes_the_budgets_of_the_protocol_file_it_is_given(snapshot: Path, tmp_path: Path, capsys) -> None:
    from rlvrambench_hf.cli import main

    protocol = json.loads((snapshot / "benchmark/decision/protocol.json").read_text())
    protocol["budgets_per_case"] = [0, 2]
    path = tmp_path / "protocol.json"
    path.write_text(json.dumps(protocol))
    out = tmp_path / "scores.json"
    assert main(["--source", str(snapshot), "replay", "--protocol", str(path), "--output", str(out)]) == 0
    budgets = [(s["rule"], s["budget_target_attempts_per_case"]) for s in json.loads(out.read_text())["summary"]]
    assert budgets == [(r, b) for r in ("source_copy", "headroom_guard", "direct_screen") for b in (0, 2)]
    assert (
        main(["--source", str(snapshot), "replay", "--protocol", str(path), "--budgets", "1", "--output", str(out)])
        == 0
    )
    assert [s["budget_target_attempts_per_case"] for s in json.loads(out.read_text())["summary"]] == [1, 1, 1]
    capsys.readouterr()
