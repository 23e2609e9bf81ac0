"""The admission panel on the mini release's two cases: protocol and attempt validation, the evaluation truth, the
replay of every published rule at every budget (decisions and charges counted by hand from :mod:`miniworld`),
scoring, and users' policies."""

from __future__ import annotations

import copy
import json

import pytest

from rlvrambench_hf.admission import (
    ABSTAIN,
    APPROVE,
    REJECT,
    STOP,
    AdmissionPolicy,
    build_report,
    load_attempts,
    load_policy,
    load_protocol,
    policy_inputs,
    read_attempts_file,
    replay_report,
    score_decisions,
    summary_csv,
)
from rlvrambench_hf.admission.attempts import attempts_from_records, validate_attempts
from rlvrambench_hf.admission.policy import builtin_rule
from rlvrambench_hf.admission.protocol import PROTOCOL_PATH, parse_protocol
from rlvrambench_hf.admission.report import check_budgets
from rlvrambench_hf.admission.scoring import missing_outcome_sensitivity
from rlvrambench_hf.admission.truth import Truth, candidate_truth
from rlvrambench_hf.errors import InputError

import miniworld as world

pytestmark = pytest.mark.unit

A1, A2, B1, B2 = "case-a-c1", "case-a-c2", "case-b-c1", "case-b-c2"
#: (rule, budget) → final decisions of A1, A2, B1, B2 (see the module docstring of miniworld for the slots)
DECISIONS = {
    ("source_copy", 0): (APPROVE, APPROVE, APPROVE, REJECT),
    ("source_copy", 1): (APPROVE, ABSTAIN, APPROVE, REJECT),  # A2's first screen attempt is unresolved
    ("source_copy", 2): (APPROVE, REJECT, APPROVE, ABSTAIN),  # its replacement is above; B2's screen never started
    ("source_copy", 3): (APPROVE, REJECT, APPROVE, ABSTAIN),
    ("headroom_guard", 0): (APPROVE, REJECT, APPROVE, REJECT),  # A2's donor peak is within the guard of the limit
    ("headroom_guard", 1): (APPROVE, ABSTAIN, APPROVE, REJECT),
    ("headroom_guard", 2): (APPROVE, REJECT, APPROVE, ABSTAIN),
    ("headroom_guard", 3): (APPROVE, REJECT, APPROVE, ABSTAIN),
    ("direct_screen", 0): (ABSTAIN, ABSTAIN, ABSTAIN, ABSTAIN),
    ("direct_screen", 1): (ABSTAIN, ABSTAIN, APPROVE, ABSTAIN),
    ("direct_screen", 2): (ABSTAIN, REJECT, APPROVE, ABSTAIN),
    ("direct_screen", 3): (APPROVE, REJECT, APPROVE, ABSTAIN),
}
SPENT = {0: (0, 0), 1: (1, 1), 2: (2, 1), 3: (3, 1)}  # budget → target attempts spent in case-a, case-b
DONOR_ATTEMPTS = 7  # distinct recorded attempts of cfg-a and cfg-b (case-a), of cfg-a and cfg-d (case-b)


@pytest.fixture(scope="module")
def report(shared_mini):
    return replay_report(shared_mini.root)


@pytest.fixture(scope="module")
def protocol(shared_mini):
    return load_protocol(shared_mini.root)


@pytest.fixture(scope="module")
def attempts(shared_mini):
    return load_attempts(shared_mini.root)


def test_the_protocol_of_the_mini_release(protocol):
    assert [c.case_id for c in protocol.cases] == ["case-a", "case-b"]
    assert protocol.case_of == {A1: "case-a", A2: "case-a", B1: "case-b", B2: "case-b"}
    assert protocol.budgets == (0, 1, 2, 3) and protocol.max_replacements == 8
    assert protocol.slot_roles["slot-case-a-c1-s141"] == ("screen", A1)
    assert protocol.cases[0].donors[A2].max_completed_run_peak_mib == 37500.0
    assert protocol.cases[1].donors[B2].max_completed_run_peak_mib is None


def test_the_evaluation_truth_comes_from_the_evaluation_slots_only(protocol, attempts):
    truth = candidate_truth(protocol, attempts)
    assert {c: t.state for c, t in truth.items()} == world.TRUTH
    assert truth[A2].known_above_margin and truth[B2].known_memory_failure and not truth[A1].known_memory_failure
    assert len(truth[B1].evaluation_attempt_ids) == 4  # a replaced slot: both attempts are evidence


@pytest.mark.parametrize(("rule", "budget"), list(DECISIONS))
def test_every_rule_at_every_budget(report, rule, budget):
    items = {i["case_id"]: i for i in report["per_case"] if (i["rule"], i["budget_target_attempts"]) == (rule, budget)}
    decisions = {**items["case-a"]["decisions"], **items["case-b"]["decisions"]}
    assert tuple(decisions[c] for c in (A1, A2, B1, B2)) == DECISIONS[(rule, budget)]
    assert (items["case-a"]["spent_target_attempts"], items["case-b"]["spent_target_attempts"]) == SPENT[budget]
    donors = 0 if rule == "direct_screen" else DONOR_ATTEMPTS
    assert items["case-a"]["donor_attempts"] == items["case-b"]["donor_attempts"] == donors
    assert items["case-a"]["cold_start_attributed_attempts"] == SPENT[budget][0] + donors


def test_the_transcript_charges_before_revealing_and_stops_at_a_slot_that_never_started(report):
    items = {
        i["case_id"]: i for i in report["per_case"] if (i["rule"], i["budget_target_attempts"]) == ("source_copy", 2)
    }
    a = items["case-a"]["transcript"]
    assert [(s["candidate_id"], s["observed_state"], s["decision"]) for s in a] == [
        (A2, "unresolved", ABSTAIN),
        (A2, "above_margin", REJECT),
    ]
    assert [s["cumulative_attempts"] for s in a] == [1, 2] and a[1]["peak_mib"] == 39500.0
    b = items["case-b"]["transcript"]
    assert [(s["candidate_id"], s["charged_attempts"], s.get("observed_state", s.get("status"))) for s in b] == [
        (B1, 1, "within_margin"),
        (B2, 0, "not_started"),
    ]


def test_case_metrics_and_the_summary(report):
    row = next(r for r in report["summary"] if (r["rule"], r["budget_target_attempts_per_case"]) == ("source_copy", 0))
    assert (row["cases"], row["macro_case_within_margin_recall"]) == (2, 1.0)
    assert (row["approved"], row["approved_within_margin"], row["approved_above_margin"]) == (3, 2, 1)
    assert row["spent_target_attempts"] == 0 and row["donor_attempts"] == 2 * DONOR_ATTEMPTS
    direct = next(
        r for r in report["summary"] if (r["rule"], r["budget_target_attempts_per_case"]) == ("direct_screen", 0)
    )
    assert direct["cases_with_defined_recall"] == 2 and direct["macro_case_within_margin_recall"] == 0.0
    assert direct["abstentions"] == 4
    references = {(r["case_id"], r["rule"]): r["metrics"] for r in report["zero_cost_references"]}
    assert references[("case-b", "approve_all")]["approved_memory_failure"] == 1
    assert report["physical_collection"] == {"recorded_screen_attempts": 4, "recorded_evaluation_attempts": 13}
    lines = summary_csv(report["summary"]).splitlines()
    assert len(lines) == 1 + 3 * 4 and lines[0].startswith("rule,budget_target_attempts_per_case,cases")


def test_score_decisions_against_the_hidden_truth(shared_mini):
    result = score_decisions([A1, A2, B1, B2], [APPROVE, APPROVE, REJECT, ABSTAIN], source=shared_mini.root)
    assert [c["case_id"] for c in result["per_case"]] == ["case-a", "case-b"]
    assert result["approved"] == 2 and result["approved_above_margin"] == 1
    assert result["macro_case_within_margin_recall"] == 0.5  # case-a 1.0, case-b 0.0
    only_b = score_decisions([B2, B1], [REJECT, APPROVE], source=shared_mini.root)
    assert only_b["cases"] == 1 and only_b["per_case"][0]["metrics"]["within_margin_recall"] == 1.0
    with pytest.raises(InputError, match="case case-a is incomplete: no decision for case-a-c2"):
        score_decisions([A1], [APPROVE], source=shared_mini.root)
    with pytest.raises(InputError, match="unknown candidate id 'x'"):
        score_decisions(["x"], [APPROVE], source=shared_mini.root)
    with pytest.raises(InputError, match="decision 'yes' for 'case-a-c1' is not one of approve, reject, abstain"):
        score_decisions([A1], ["yes"], source=shared_mini.root)


def test_attempts_from_the_table_and_from_json_records_are_identical(shared_mini, attempts, tmp_path):
    rows = json.loads(json.dumps(shared_mini.rows["admission_attempts"]))
    assert attempts_from_records(rows, "attempts.json") == attempts
    assert attempts_from_records({"attempts": rows}, "attempts.json") == attempts
    (tmp_path / "attempts.json").write_text(json.dumps(rows))
    assert read_attempts_file(tmp_path / "attempts.json") == attempts
    (tmp_path / "attempts.csv").write_bytes(shared_mini.path("admission_attempts").read_bytes())
    assert read_attempts_file(tmp_path / "attempts.csv") == attempts
    assert load_attempts(path=tmp_path / "attempts.csv") == attempts


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r[0].update(attempt_index="1"), "attempt_index must be an integer"),
        (lambda r: r[0].update(known_memory_failure=None), "known_memory_failure must be true or false"),
        (lambda r: r[0].update(slot_id=""), "slot_id must be a non-empty string"),
        (lambda r: r.append(7), r"record #18 is not an object"),
    ],
)
def test_malformed_records_name_the_record(shared_mini, edit, message):
    rows = copy.deepcopy(shared_mini.rows["admission_attempts"])
    edit(rows)
    with pytest.raises(InputError, match=message):
        attempts_from_records(rows, "mine.json")


def _edited(shared_mini, change) -> list:
    rows = copy.deepcopy(shared_mini.rows["admission_attempts"])
    change({r["attempt_id"]: r for r in rows}, rows)
    return list(attempts_from_records(rows, "edited"))


A1_SCREEN, A2_FIRST, A2_SECOND = "att-case-a-c1-s141-1", "att-case-a-c2-s141-1", "att-case-a-c2-s141-2"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda by, rows: rows.append(dict(rows[0])), "duplicate attempt id"),
        (lambda by, rows: by[A1_SCREEN].update(slot_id="slot-nowhere"), "unknown slot slot-nowhere"),
        (lambda by, rows: by[A1_SCREEN].update(role="evaluation"), "role 'evaluation' but slot .* is a screen slot"),
        (
            lambda by, rows: by[A1_SCREEN].update(candidate_id=B1),
            "candidate case-b-c1 but slot .* belongs to case-a-c1",
        ),
        (lambda by, rows: by[A1_SCREEN].update(case_id="case-b"), "case case-b but slot .* belongs to case-a"),
        (lambda by, rows: by[A1_SCREEN].update(peak_mib=39000.0), "state within_margin but peak 39000 MiB is above"),
        (lambda by, rows: by[A1_SCREEN].update(peak_mib=None), "completed state within_margin needs a finite positive"),
        (lambda by, rows: by[A1_SCREEN].update(state="timeout"), "state 'timeout' is not one of"),
        (
            lambda by, rows: by[A1_SCREEN].update(completed_final_operations=False),
            "without completed final operations",
        ),
        (lambda by, rows: by[A2_FIRST].update(repair_reason="flaky"), "repair_reason 'flaky' is not one of"),
        (lambda by, rows: by[A2_FIRST].update(known_memory_failure=True), "which has a known memory failure"),
        (
            lambda by, rows: by[A2_SECOND].update(attempt_index=3),
            r"attempt indices of slot .* are 1, 3, expected 1, 2, \.\.\.",
        ),
    ],
)
def test_attempts_that_break_the_protocol_are_refused(shared_mini, protocol, change, message):
    with pytest.raises(InputError, match=message):
        validate_attempts(protocol, _edited(shared_mini, change))


def test_replacements_beyond_the_protocol_total_are_refused(shared_mini):
    document = copy.deepcopy(shared_mini.documents[PROTOCOL_PATH])
    document["resource_cap"]["max_repair_allocations"] = 1
    with pytest.raises(InputError, match="more than 1 replacements in all"):
        validate_attempts(parse_protocol(document), load_attempts(shared_mini.root))


def _protocol_edit(path: str, value: object):
    def edit(document: dict) -> None:
        *parents, last = path.split(".")
        target = document
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[last] = value

    return edit


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("protocol_version", "decision-2.0", "protocol_version is 'decision-2.0', expected 'decision-1.0'"),
        ("evaluation_seeds", [142, 142, 143], "exactly 3 distinct seeds"),
        ("screen_seed", 142, "the screen seed 142 is also an evaluation seed"),
        ("budgets_per_case", [0, -1], "budgets_per_case must be non-negative integers"),
        ("memory_limit_mib", 0, "memory_limit_mib must be positive"),
        ("cases", [], "the protocol has no cases"),
        ("cases.0.query_order", [A1], "query_order must list each of its candidates exactly once"),
        ("cases.0.donors", {}, "donors must cover exactly its candidates"),
        ("cases.0.candidates.0.slot_ids.evaluation", ["s1", "s2"], "exactly 3 evaluation slots are required"),
        ("cases.0.candidates.0.reservation", "0.6", "actor_micro_batch and reservation must be numbers"),
        ("cases.0.donors.case-a-c1.max_completed_run_peak_mib", "lots", "'lots' is not a number"),
        ("cases.1.candidates.0.slot_ids.screen", ["slot-case-a-c1-s142"], "appears in two roles"),
    ],
)
def test_a_protocol_the_replay_cannot_rely_on_is_one_line(shared_mini, path, value, message):
    document = copy.deepcopy(shared_mini.documents[PROTOCOL_PATH])
    _protocol_edit(path, value)(document)
    with pytest.raises(InputError, match=message):
        parse_protocol(document)


def test_policy_inputs_never_show_evaluation_records(shared_mini):
    inputs = policy_inputs(shared_mini.root, "source_copy")
    assert inputs["uses_donors"] and inputs["cases"][0]["donors"][A1]["configuration_id"] == "cfg-a"
    assert "evaluation" not in json.dumps(inputs["cases"])
    assert "donors" not in policy_inputs(shared_mini.root, "direct_screen")["cases"][0]


class ScreenEverything(AdmissionPolicy):
    name = "screen_everything"
    uses_donors = False

    def initial_decisions(self, task):
        return {c: REJECT for c in task.candidate_ids}

    def next_action(self, task, revealed):
        seen = {s.candidate_id for s in revealed}
        return next((c for c in sorted(task.candidate_ids) if c not in seen), STOP)


def test_a_user_policy_is_replayed_under_the_same_charging_rules(shared_mini, protocol, attempts):
    result = build_report(protocol, attempts, [builtin_rule("source_copy"), ScreenEverything()], [3])
    mine = {i["case_id"]: i for i in result["per_case"] if i["rule"] == "screen_everything"}
    assert mine["case-a"]["decisions"] == {A1: APPROVE, A2: REJECT}  # A1 first (sorted), then both of A2's attempts
    assert mine["case-a"]["spent_target_attempts"] == 3 and mine["case-a"]["donor_attempts"] == 0
    assert mine["case-b"]["decisions"] == {B1: APPROVE, B2: ABSTAIN}


class Broken(AdmissionPolicy):
    name = "broken"

    def __init__(self, initial=None, action=None):
        self.initial, self.action = initial, action

    def initial_decisions(self, task):
        if self.initial == "raise":
            raise RuntimeError("boom")
        return self.initial if self.initial is not None else {c: ABSTAIN for c in task.candidate_ids}

    def next_action(self, task, revealed):
        if self.action == "again":
            return task.query_order[0]
        return self.action


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (Broken(initial="raise"), "policy broken, case case-a, budget 1: initial_decisions raised RuntimeError: boom"),
        (Broken(initial=[]), "initial_decisions returned \\[\\], not a mapping"),
        (Broken(initial={A1: APPROVE}), "initial_decisions has no decision for case-a-c2"),
        (Broken(initial={A1: APPROVE, A2: "maybe"}), "initial_decisions gives 'maybe' for case-a-c2"),
        (Broken(action="nobody"), "next_action returned 'nobody', neither 'stop' nor a candidate"),
        (Broken(action="again"), "case case-b, budget 2: next_action requested case-b-c1 again"),
    ],
)
def test_a_misbehaving_policy_is_one_line_naming_it(protocol, attempts, policy, message):
    with pytest.raises(InputError, match=message):
        build_report(protocol, attempts, [policy], [1, 2])


def test_a_policy_from_a_file(tmp_path, protocol, attempts):
    (tmp_path / "mine.py").write_text(
        "from rlvrambench_hf.admission import AdmissionPolicy, STOP\n"
        "class Mine(AdmissionPolicy):\n"
        "    name = 'mine'\n"
        "    def initial_decisions(self, task):\n"
        "        return {c: 'approve' for c in task.candidate_ids}\n"
        "    def next_action(self, task, revealed):\n"
        "        return STOP\n"
    )
    policy = load_policy(f"{tmp_path / 'mine.py'}:Mine")
    summary = build_report(protocol, attempts, [policy], [0])["summary"]
    assert summary[0]["rule"] == "mine" and summary[0]["approved"] == 4
    with pytest.raises(InputError, match="has no attribute 'Other'"):
        load_policy(f"{tmp_path / 'mine.py'}:Other")


@pytest.mark.parametrize(
    ("budgets", "message"),
    [([], "no budget given"), ([1, 1], "repeat a value"), ([True], "is not a non-negative integer"), ([-2], "-2")],
)
def test_budgets_are_distinct_non_negative_integers(budgets, message):
    with pytest.raises(InputError, match=message):
        check_budgets(budgets)


def test_missing_outcome_sensitivity_spans_every_admissible_assignment():
    truth = {
        "x": Truth("within_margin", False, False, ()),
        "y": Truth("unresolved", False, True, ()),  # known above margin: above or failure
        "z": Truth("unresolved", False, False, ()),  # anything
    }
    result = missing_outcome_sensitivity(["x", "y", "z"], {"x": APPROVE, "y": APPROVE, "z": REJECT}, truth)
    assert result["within_margin_recall_min"] == 0.5 and result["within_margin_recall_max"] == 1.0
    assert (result["unsuitable_approvals_min"], result["unsuitable_approvals_max"]) == (1, 1)
    assert result["assignments_with_undefined_recall"] == 0
