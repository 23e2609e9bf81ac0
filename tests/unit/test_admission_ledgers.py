"""The replay's three cost ledgers and cold-start totals on the mini release's admission panel, and the budget the
admission metric takes (figures by hand from :mod:`miniworld`: 17 attempts, two of them unresolved, one of those
never ran; every candidate on two GPUs)."""

from __future__ import annotations

import pytest

from rlvrambench_hf import load_table
from rlvrambench_hf.adapters.metric import metric_config
from rlvrambench_hf.admission import APPROVE, REJECT, load_attempts, load_protocol, replay_report, score_decisions
from rlvrambench_hf.admission.api import candidate_gpu_counts
from rlvrambench_hf.admission.ledgers import GPU_SECONDS_SCOPE, cold_start_totals, ledgers, physical_ledger
from rlvrambench_hf.errors import InputError

pytestmark = pytest.mark.unit

A1, A2, B1, B2 = "case-a-c1", "case-a-c2", "case-b-c1", "case-b-c2"
#: 10 within-margin attempts of 500 s, 2 above of 520 s, 3 failures of 125 s, an unresolved one of 40 s (x 2 GPUs)
GPU_SECONDS = 2 * (10 * 500.0 + 2 * 520.0 + 3 * 125.0 + 40.0)
SCREEN_GPU_SECONDS = 2 * (500.0 + 520.0 + 500.0)  # case-a-c1, case-a-c2's replacement, case-b-c1


@pytest.fixture(scope="module")
def report(shared_mini):
    return replay_report(shared_mini.root)


def test_the_donor_evidence_ledger(report):
    donors = report["ledgers"]["donor_evidence"]
    assert (donors["donor_configurations"], donors["donor_attempts"]) == (4, 14)
    assert donors["cases"] == [
        {"case_id": "case-a", "donor_configurations": 2, "donor_attempts": 7},  # cfg-a (one excluded) and cfg-b
        {"case_id": "case-b", "donor_configurations": 2, "donor_attempts": 7},  # cfg-a and cfg-d
    ]


def test_the_requested_target_attempts_ledger_is_the_replay_s_charges(report):
    requested = report["ledgers"]["requested_target_attempts"]
    assert [(r["rule"], r["budget_target_attempts_per_case"]) for r in requested] == [
        (rule, b) for rule in ("source_copy", "headroom_guard", "direct_screen") for b in (0, 1, 2, 3)
    ]
    spent = {(s["rule"], s["budget_target_attempts_per_case"]): s["spent_target_attempts"] for s in report["summary"]}
    assert {
        (r["rule"], r["budget_target_attempts_per_case"]): r["requested_target_attempts"] for r in requested
    } == spent
    assert [r["requested_target_attempts"] for r in requested if r["rule"] == "direct_screen"] == [0, 2, 3, 4]


def test_the_physical_runs_ledger_agrees_with_the_collection_summary(report, shared_mini):
    runs = report["ledgers"]["physical_runs"]
    assert runs == {
        "recorded_attempts": 17,
        "recorded_screen_attempts": 4,
        "recorded_evaluation_attempts": 13,
        "validated_outcomes": 15,
        "recorded_gpu_seconds": GPU_SECONDS,
        "recorded_screen_gpu_seconds": SCREEN_GPU_SECONDS,
        "recorded_evaluation_gpu_seconds": GPU_SECONDS - SCREEN_GPU_SECONDS,
        "attempts_without_gpu_seconds": 1,  # the port collision never ran: counted apart, not as zero
        "gpu_seconds_scope": GPU_SECONDS_SCOPE,
    }
    (collection,) = load_table("admission_collection_summary", shared_mini.root).to_pylist()
    assert collection["physical_recorded_gpu_seconds"] == runs["recorded_gpu_seconds"] == 12910.0
    assert (collection["recorded_attempts"], collection["validated_memory_outcomes"]) == (17, 15)


def test_the_cold_start_totals(report):
    assert report["cold_start_totals"] == [
        {
            "rule": "source_copy",
            "first_full_recall_budget": 0,
            "donor_attempts": 14,
            "target_attempts": 0,
            "cold_start_attributed_attempts": 14,
        },
        {
            "rule": "headroom_guard",
            "first_full_recall_budget": 0,
            "donor_attempts": 14,
            "target_attempts": 0,
            "cold_start_attributed_attempts": 14,
        },
        {
            "rule": "direct_screen",  # approves case-a-c1 only at budget 3, after three screens of case-a and one of b
            "first_full_recall_budget": 3,
            "donor_attempts": 0,
            "target_attempts": 4,
            "cold_start_attributed_attempts": 4,
        },
    ]
    never = cold_start_totals(
        [{"rule": "r", "budget_target_attempts_per_case": 0, "macro_case_within_margin_recall": 0.5}]
    )
    assert never == [
        {
            "rule": "r",
            "first_full_recall_budget": None,
            "donor_attempts": None,
            "target_attempts": None,
            "cold_start_attributed_attempts": None,
        }
    ]


def test_without_gpu_counts_the_seconds_are_unknown_not_zero(shared_mini):
    attempts = load_attempts(shared_mini.root)
    runs = physical_ledger(attempts)
    assert runs["recorded_gpu_seconds"] is None and runs["attempts_without_gpu_seconds"] == 17
    assert candidate_gpu_counts(shared_mini.root) == dict.fromkeys((A1, A2, B1, B2), 2)
    counted = ledgers(load_protocol(shared_mini.root), attempts, [], candidate_gpu_counts(shared_mini.root))
    assert counted["physical_runs"]["recorded_gpu_seconds"] == GPU_SECONDS


def test_decisions_scored_with_the_budget_they_were_made_at(shared_mini):
    ids, decisions = [A1, A2, B1, B2], [APPROVE, REJECT, APPROVE, REJECT]
    scores = score_decisions(ids, decisions, budget=2, source=shared_mini.root)
    assert (scores["budget_target_attempts_per_case"], scores["requested_target_attempts"]) == (2, 3)  # 2 + 1
    assert scores["macro_case_within_margin_recall"] == 1.0
    unstated = score_decisions(ids, decisions, source=shared_mini.root)
    assert (unstated["budget_target_attempts_per_case"], unstated["requested_target_attempts"]) == (None, None)
    only_b = score_decisions([B1, B2], [APPROVE, REJECT], budget=5, source=shared_mini.root)
    assert only_b["requested_target_attempts"] == 1  # case-b-c2's screen slot never started: nothing to charge
    with pytest.raises(InputError, match=r"^budget -1 is not a non-negative integer$"):
        score_decisions(ids, decisions, budget=-1, source=shared_mini.root)


def test_the_admission_metric_takes_the_budget(shared_mini):
    config = metric_config("admission")
    assert config.options["budget"] is None
    inputs = {"candidate_ids": [A1, A2, B1, B2], "decisions": [APPROVE, REJECT, APPROVE, REJECT]}
    scores = config.compute({**inputs, "budget": 3, "source": str(shared_mini.root)})
    assert (scores["budget_target_attempts_per_case"], scores["requested_target_attempts"]) == (3, 4)
    flat = config.compute({**inputs, "budget": 3, "flat": True, "source": str(shared_mini.root)})
    assert flat["requested_target_attempts"] == 4
