"""The relations the registry declares, checked by ``verify`` on a generated mini release: each kind of relation
broken once, each failure one line naming the table, the column, the row's key and both values."""

from __future__ import annotations

import pytest

from rlvrambench_hf.data.relations import relation_findings
from rlvrambench_hf.data.schema.registry import REGISTRY
from rlvrambench_hf.data.sources.resolve import open_source
from rlvrambench_hf.data.verify import FAILED, PASSED, verify_source

from minirelease import MiniRelease, rewrite_table, write_mini_release

pytestmark = pytest.mark.unit


@pytest.fixture
def mini(tmp_path) -> MiniRelease:
    return write_mini_release(tmp_path / "mini")


def failures(release: MiniRelease) -> dict[str, str]:
    return {c.subject: c.detail for c in verify_source(open_source(release.root)) if c.status == FAILED}


def test_every_declared_relation_is_checked_and_holds_on_the_mini_release(mini):
    checks = [c for c in verify_source(open_source(mini.root)) if c.kind == "relation"]
    declared = sum(
        len(s.references) + len(s.copies) for s in REGISTRY.values() if s.name != "configuration_feasibility"
    )
    assert len(checks) == declared + 1  # and the queries-cross-cases rule
    assert {c.status for c in checks} == {PASSED}


def test_a_label_edited_in_outcomes_and_not_in_its_copies(mini):
    row = next(r for r in mini.rows["outcomes"] if r["configuration_id"] == "cfg-b")
    row["observed_state"] = "memory_failure"  # within_margin in the tables that repeat it
    rewrite_table(mini, "outcomes")
    found = failures(mini)
    assert set(found) == {
        "all_configurations copies 13 columns from outcomes (by configuration_id)",
        "transfer_configurations copies 13 columns from outcomes (by configuration_id)",
    }
    assert found["all_configurations copies 13 columns from outcomes (by configuration_id)"] == (
        "all_configurations (benchmark/configuration_results.csv), row configuration_id='cfg-b': has observed_state "
        "'within_margin', but outcomes (benchmark/outcomes.csv) has observed_state 'memory_failure'"
    )


def test_a_foreign_key_that_points_nowhere(mini):
    mini.rows["stage_measurements"][0]["run_id"] = "run-nobody"
    rewrite_table(mini, "stage_measurements")
    found = failures(mini)
    assert found["stage_measurements.run_id → eligible_runs.run_id"] == (
        "stage_measurements (benchmark/stage_measurements.csv), row run_id='run-nobody', stage='rollout': points at "
        "run_id='run-nobody', but eligible_runs (benchmark/runs.csv) has no row with it"
    )
    assert (
        "does not have"
        in found["stage_measurements copies configuration_id, phase_memory_csv from eligible_runs (by run_id)"]
    )


def test_a_conditional_foreign_key_both_ways(mini):
    attempts = mini.rows["recorded_attempts"]
    excluded = next(r for r in attempts if not r["eligible"])
    excluded["run_id"] = "run-cfg-a"  # an excluded attempt must not name a run
    rewrite_table(mini, "recorded_attempts")
    detail = failures(mini)["recorded_attempts.run_id → eligible_runs.run_id"]
    assert detail.endswith("row attempt_id='att-excluded': has run_id='run-cfg-a' although eligible is not true")
    excluded["run_id"], attempts[0]["run_id"] = None, None  # and an eligible one must
    rewrite_table(mini, "recorded_attempts")
    detail = failures(mini)["recorded_attempts.run_id → eligible_runs.run_id"]
    assert detail.endswith("row attempt_id='att-cfg-a': has no run_id although eligible is true")


def test_exactly_one_row_on_the_other_side(mini):
    attempts = mini.rows["recorded_attempts"]
    attempts[1]["run_id"] = attempts[0]["run_id"]  # run-cfg-a now has two eligible attempts, run-cfg-b none
    attempts[1]["configuration_id"] = attempts[0]["configuration_id"]
    rewrite_table(mini, "recorded_attempts")
    detail = failures(mini)["eligible_runs.run_id → recorded_attempts.run_id"]
    assert detail == (
        "eligible_runs (benchmark/runs.csv), row run_id='run-cfg-a': points at run_id='run-cfg-a', but "
        "recorded_attempts (benchmark/attempts.csv) has 2 rows with it (and 1 more row(s))"
    )


def test_a_renamed_copy_names_both_columns(mini):
    mini.rows["larger_model_configurations"][1]["model"] = "someone/else"
    rewrite_table(mini, "larger_model_configurations")
    (detail,) = failures(mini).values()
    assert "has model 'someone/else', but estimation_targets (benchmark/estimation/targets.csv) has model_id" in detail


def test_relations_only_of_tables_at_hand():
    assert relation_findings({}) == []


def test_a_cost_record_in_a_json_list_that_points_nowhere(mini):
    mini.rows["larger_model_costs"][0]["pair_id"] = "nowhere"
    rewrite_table(mini, "larger_model_costs")
    assert failures(mini) == {
        "larger_model_costs.pair_id → larger_model_pairs.pair_id": (
            "larger_model_costs (benchmark/estimation/results/costs.json), row job_id='5200': points at "
            "pair_id='nowhere', but larger_model_pairs (benchmark/estimation/results/pairs.csv) has no row with it"
        )
    }


def test_a_process_whose_allocation_is_not_recorded(mini):
    costs = mini.rows["expanded_host_costs"]
    job = costs.pop(0)["job_id"]  # the allocation of host-1's and host-2's first pair
    rewrite_table(mini, "expanded_host_costs")
    detail = failures(mini)["expanded_host_processes.job_id → expanded_host_costs.job_id"]
    assert detail == (
        "expanded_host_processes (benchmark/host_capacity/results/processes.csv), row experiment_id='host-1-s161': "
        f"points at job_id={job!r}, but expanded_host_costs (benchmark/host_capacity/results/costs.json) has no row "
        "with it (and 1 more row(s))"
    )


def test_an_allocation_must_name_exactly_one_attempt_of_its_slot(mini):
    attempts = {a["attempt_id"]: a for a in mini.rows["admission_attempts"]}
    first, replacement = attempts["att-case-a-c2-s141-1"], attempts["att-case-a-c2-s141-2"]
    first["job_id"] = replacement["job_id"]  # both attempts of the replaced slot now claim one job
    rewrite_table(mini, "admission_attempts")
    found = failures(mini)
    assert set(found) == {
        "admission_allocations.slot_id+job_id → admission_attempts.slot_id+job_id",
        "admission_validated_runs.experiment_id+job_id → admission_attempts.slot_id+job_id",
    }
    assert found["admission_allocations.slot_id+job_id → admission_attempts.slot_id+job_id"].endswith(
        f"points at slot_id='slot-case-a-c2-s141', job_id={replacement['job_id']!r}, but admission_attempts "
        "(benchmark/decision/results/attempts.csv) has 2 rows with it"
    )


def test_every_attempt_and_allocation_names_a_slot_of_the_inventory(mini):
    inventory = mini.rows["admission_slot_inventory"]
    inventory[:] = [s for s in inventory if s["slot_id"] != "slot-case-a-c1-s141"]
    rewrite_table(mini, "admission_slot_inventory")
    assert set(failures(mini)) == {
        "admission_attempts.slot_id → admission_slot_inventory.slot_id",
        "admission_allocations.slot_id → admission_slot_inventory.slot_id",
        "admission_validated_runs.experiment_id → admission_slot_inventory.slot_id",
    }
