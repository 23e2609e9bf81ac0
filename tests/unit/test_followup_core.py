"""The follow-up panels of the mini release: approvals over the full panel, label and peak metrics over the
resolved subset, the frozen regression's startup-guard changes, users' predictions, the always-failure reference,
and the panels' slot facts and costs beside their own summary and totals (figures by hand from :mod:`miniworld`)."""

from __future__ import annotations

import pytest

from rlvrambench_hf.errors import InputError
from rlvrambench_hf.followup import ALWAYS_FAILURE
from rlvrambench_hf.followup.api import read_predictions, score_study, study_rows
from rlvrambench_hf.followup.core import (
    MethodPredictions,
    frozen_predictions,
    peak_metrics,
    score_panel,
    study_config,
    validate_predictions,
)
from rlvrambench_hf.reporting.sections import followup_block
from rlvrambench_hf.reporting.tables import followup_facts

import miniworld as world
from minirelease import rewrite_table

pytestmark = pytest.mark.unit

W, A, F, U = world.W, world.A, world.F, world.U
T1, T2, T3, T4 = world.LARGER_MODEL


@pytest.fixture(scope="module")
def larger(shared_mini):
    return score_study("larger_model", shared_mini.root)


def test_the_panel_counts(larger):
    assert (larger["planned_configurations"], larger["resolved_configurations"]) == (4, 3)
    assert larger["unresolved_ids"] == [T4] and larger["full_panel_coverage"] == 0.75
    assert larger["resolved_ids"] == sorted([T1, T2, T3])


@pytest.mark.parametrize(
    ("method", "approved", "unscored", "with_exceedance"),
    [("donor_copy", 3, 0, 0), ("component_regression", 2, 1, 1), ("logistic", 3, 1, 1)],
)
def test_approvals_over_the_full_panel(larger, method, approved, unscored, with_exceedance):
    approvals = larger["approvals"][method]
    assert approvals["full_panel_approved_configurations"] == approved
    assert approvals["unscored_approved_configurations"] == unscored
    assert approvals["scored_approved_configurations"] == approved - unscored
    assert approvals["unscored_approvals_with_known_margin_exceedance"] == with_exceedance
    assert approvals["unscored_approvals_with_known_failure"] == 0


def test_resolved_subset_metrics_and_peak_errors(larger):
    donor = larger["resolved_subset_metrics"]["donor_copy"]
    assert (donor["queries"], donor["correct_three_state"], donor["approved_memory_failure"]) == (3, 1, 1)
    assert donor["within_margin_approval_precision"] == 1 / 3
    assert (donor["completed_peak_prediction_coverage"], donor["completed_peak_mae_mib"]) == (2, 4150.0)
    assert donor["completed_peak_worst_underestimate_mib"] == 7200.0
    regression = larger["resolved_subset_metrics"]["component_regression"]
    assert regression["correct_three_state"] == 3 and regression["completed_peak_mean_signed_error_mib"] == -550.0
    assert regression["startup_guard_changed_states"] == 1  # T3: memory failure although its peak implies above
    logistic = larger["resolved_subset_metrics"]["logistic"]
    assert logistic["correct_three_state"] == 2 and logistic["completed_peak_prediction_coverage"] == 0
    assert logistic["completed_peak_mae_mib"] is None


def test_the_guard_change_is_read_from_the_regression_peak(shared_mini):
    methods = frozen_predictions(study_rows("larger_model", shared_mini.root))
    assert methods["component_regression"].guard_changed == {T1: False, T2: False, T3: True, T4: False}
    assert methods["donor_copy"].guard_changed == {} and methods["donor_copy"].peaks_mib[T4] is None


def test_the_expanded_host_panel(shared_mini):
    scores = score_study("expanded_host", shared_mini.root)
    assert scores["unresolved_ids"] == ["host-3"]
    donor = scores["approvals"]["donor_copy"]
    assert donor["unscored_approved_ids"] == ["host-3"] and donor["unscored_approvals_with_known_failure"] == 1
    assert scores["resolved_subset_metrics"]["logistic"]["correct_three_state"] == 2
    assert scores["resolved_subset_metrics"]["component_regression"]["startup_guard_changed_states"] == 0


def test_a_user_file_is_scored_beside_the_frozen_methods(shared_mini, tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text(
        f"configuration_id,predicted_state,predicted_peak_mib\n{T1},within_margin,35100\n{T2},above_margin,\n"
        f"{T3},memory_failure,\n{T4},within_margin,38000\n"
    )
    scores = score_study("larger_model", shared_mini.root, predictions=path)
    mine = scores["resolved_subset_metrics"]["user"]
    assert mine["correct_three_state"] == 3 and mine["completed_peak_prediction_coverage"] == 1
    assert mine["completed_peak_mae_mib"] == 100.0
    assert scores["approvals"]["user"]["unscored_approved_ids"] == [T4]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"configuration_id": "", "predicted_state": W}], r"1 row\(s\) have an empty configuration_id"),
        ([{"configuration_id": "a", "predicted_state": W}] * 2, r"1 duplicate configuration id\(s\), e.g. 'a'"),
        (
            [{"configuration_id": "a", "predicted_state": W}],
            r"must cover exactly the study's 2 configurations: 1 missing",
        ),
        (
            [{"configuration_id": c, "predicted_state": W} for c in "abz"],
            r"1 unknown configuration id\(s\), e.g. 'z'",
        ),
        ([{"configuration_id": c, "predicted_state": "ok"} for c in "ab"], r"2 invalid predicted_state value\(s\)"),
        (
            [
                {"configuration_id": c, "predicted_state": W, "predicted_peak_mib": p}
                for c, p in zip("ab", ["-1", "inf"])
            ],
            r"2 invalid predicted_peak_mib value\(s\), e.g. 'a'='-1', 'b'='inf'",
        ),
    ],
)
def test_bad_user_predictions_are_one_line(rows, message):
    with pytest.raises(InputError, match=message):
        validate_predictions(rows, ["a", "b"], name="mine.csv")


def test_blank_peaks_are_no_prediction_and_files_read_through_the_common_reader(tmp_path):
    checked = validate_predictions(
        [{"configuration_id": "a", "predicted_state": W, "predicted_peak_mib": ""}], ["a"], name="x"
    )
    assert checked.peaks_mib == {"a": None}
    path = tmp_path / "p.jsonl"
    path.write_text('{"configuration_id": " a ", "predicted_state": "above_margin"}\n')
    assert read_predictions(path, ["a"]) == MethodPredictions(states={"a": A}, peaks_mib={})


def test_scores_refuse_duplicate_rows_and_methods_that_miss_a_row():
    rows = [{"configuration_id": "a", "observed_state": W, "known_memory_failure": False}] * 2
    with pytest.raises(InputError, match="duplicate configuration ids"):
        score_panel(rows, {})
    with pytest.raises(InputError, match="method m: must cover exactly"):
        score_panel(rows[:1], {"m": MethodPredictions(states={})})


def test_study_names_and_peak_metrics():
    assert study_config("larger_model") == "larger_model_configurations"
    assert study_config("expanded_host_configurations") == "expanded_host_configurations"
    with pytest.raises(InputError, match="unknown study 'bigger'"):
        study_config("bigger")
    resolved = [
        {"configuration_id": "a", "completed_peak_mib": 100.0},
        {"configuration_id": "b", "completed_peak_mib": None},
    ]
    assert peak_metrics(resolved, {"a": 90.0, "b": 5.0})["completed_peak_worst_underestimate_mib"] == 10.0


def test_the_slot_facts_of_the_larger_model_panel_agree_with_its_summary(larger):
    assert larger["slots"] == {
        "planned_processes": 12,
        "launched_processes": 11,  # the last slot of the unresolved target never launched
        "eligible_processes": 10,
        "completed_processes": 7,
        "eligible_memory_failures": 3,
        "eligible_memory_failure_kinds": {"rollout_init_memory": 2, "actor_update_memory": 1},
        "eligible_memory_failure_stages": {"training": 3},
        "unresolved_processes": 2,
        "unresolved_failure_kinds": {"none": 1, "vllm_executor_failure": 1},
        "host_memory_failures": 0,  # the mini world's executor failure is not a scheduler host-memory kill
        "host_memory_failures_logged_as": {},
        "planned_configurations": 4,
        "resolved_configurations": 3,
        "summary_disagreements": [],
    }


def test_the_costs_of_both_panels(larger, shared_mini):
    costs = larger["costs"]  # 11 allocations of 4 GPUs for 900 s, one without its scheduler record
    assert (costs["allocations"], costs["allocation_gpu_seconds"], costs["unknown_allocation_records"]) == (
        11,
        36000.0,
        1,
    )
    assert costs["allocation_gpu_hours"] == 10.0 and costs["totals_disagreements"] == []
    # task time: 3 x 600 s x 2 GPUs, 3 x 600 s x 4, 3 x 150 s x 2, and 600 + 60 (+ 0 never launched) x 2
    assert (costs["task_gpu_seconds"], costs["unknown_task_records"]) == (13020.0, 0)
    assert costs["task_gpu_hours"] == 13020.0 / 3600 and costs["scope"] == "Missing records are unknown, not zero cost."
    host = score_study("expanded_host", shared_mini.root)
    assert (host["costs"]["allocations"], host["costs"]["allocation_gpu_seconds"]) == (6, 28800.0)
    assert (host["costs"]["task_gpu_seconds"], host["costs"]["unknown_allocation_records"]) == (11340.0, 0)
    assert (host["slots"]["launched_processes"], host["slots"]["unresolved_failure_kinds"]) == (
        9,
        {"configuration": 1, "none": 1},
    )


def test_the_always_failure_reference_approves_nothing(larger, shared_mini):
    assert larger["approvals"][ALWAYS_FAILURE]["full_panel_approved_configurations"] == 0
    always = larger["resolved_subset_metrics"][ALWAYS_FAILURE]
    assert (always["correct_three_state"], always["within_margin_recall"], always["approved"]) == (1, 0.0, 0)  # T3
    assert always["completed_peak_prediction_coverage"] == 0
    host = score_study("expanded_host", shared_mini.root)["resolved_subset_metrics"][ALWAYS_FAILURE]
    assert host["correct_three_state"] == 0  # no resolved memory failure in the expanded-host panel


def test_a_summary_or_a_total_that_disagrees_with_the_records_is_reported(mini):
    mini.rows["larger_model_summary"][0]["eligible_processes"] = 9
    mini.rows["larger_model_cost_totals"][0]["whole_allocation_time.known_gpu_seconds"] = 1.0
    rewrite_table(mini, "larger_model_summary")
    rewrite_table(mini, "larger_model_cost_totals")
    scores = score_study("larger_model", mini.root)
    assert scores["slots"]["summary_disagreements"] == ["summary eligible_processes is 9, the records give 10"]
    assert scores["costs"]["totals_disagreements"] == [
        "cost totals whole_allocation_time is 1.0 GPU-seconds, the records give 36000.0"
    ]
    assert scores["slots"]["eligible_processes"] == 10  # the facts are counted from the records, never taken over


def test_a_study_without_its_records_is_scored_without_facts(mini):
    mini.path("expanded_host_processes").unlink()
    scores = score_study("expanded_host", mini.root)
    assert scores["slots"] is None and scores["costs"] is None and scores["planned_configurations"] == 3
    mini.path("larger_model_costs").unlink()  # the costs and their totals share the file
    larger = score_study("larger_model", mini.root)
    assert larger["costs"] is None and larger["slots"]["planned_processes"] == 12


def test_the_facts_are_told_in_the_command_s_and_the_report_s_words(larger):
    slots, costs, *more = followup_facts(larger)
    assert slots == (
        "slots: 11 of 12 planned processes launched, 10 eligible, 7 completed; 3 eligible memory failures (failure "
        "kind rollout_init_memory: 2, actor_update_memory: 1; stage training: 3); 2 unresolved slots (failure kind "
        "none: 1, vllm_executor_failure: 1); 3 of 4 configurations resolved"
    )
    assert costs == (
        "costs: 10.00 allocation GPU-hours (11 scheduler allocations, 36,000 GPU-seconds) and 3.62 task GPU-hours "
        "(13,020 task-provisioned GPU-seconds): separate scopes, never added; 1 record(s) with unknown time, not "
        "counted as zero"
    )
    assert more == []  # no disagreement with the panel's own summary and totals
    html = followup_block("larger_model", larger)
    assert "Costs: 10.00 allocation GPU-hours" in html and f"<td>{ALWAYS_FAILURE}</td>" in html
