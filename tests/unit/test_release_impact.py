"""``release diff`` on the mini release: every table compared, led by what the changes touch — labels and peaks at
their origin, the transfer queries and tasks, the admission candidates, the estimation folds and the follow-up
studies (found through the registry's relations) — and exit status 1 when the releases differ."""

from __future__ import annotations

import json

import pytest

from rlvrambench_hf.cli import main
from rlvrambench_hf.data.schema.registry import REGISTRY
from rlvrambench_hf.data.sources.resolve import open_source
from rlvrambench_hf.release.diff import diff_releases

import miniworld as world
from minirelease import rewrite_table

pytestmark = pytest.mark.unit

POOL = world.pool_id(tuple(world.MODELS)[0], "gsm8k", "c0", 2)  # a granite33 pool configuration


def impact_of(shared_mini, mini, config: str, key: str, column: str, new: object):
    """Set ``column`` of the row ``key`` of ``config`` in ``mini`` and diff it against the untouched release."""
    spec = REGISTRY[config]
    (row,) = [r for r in mini.rows[config] if "+".join(str(r[k]) for k in spec.keys) == key]
    row[column] = new
    rewrite_table(mini, config)
    return diff_releases(open_source(shared_mini.root), open_source(mini.root))


def test_a_label_changed_at_its_origin_touches_the_queries_that_target_it_and_its_candidate(shared_mini, mini):
    result = impact_of(shared_mini, mini, "outcomes", "cfg-b", "observed_state", world.F)
    impact = result.impact
    assert impact.configurations == [
        {
            "configuration_id": "cfg-b",
            "kind": "label",
            "origin": "outcomes.observed_state",
            "old": world.W,
            "new": world.F,
            "tables": ["outcomes"],
        }
    ]
    assert impact.transfer == {  # cfg-b is the target of query-1 and query-4 and the source of none
        "label_queries": ["query-1", "query-4"],
        "label_tasks": ["task-1", "task-4"],
        "input_queries": [],
        "input_tasks": [],
    }
    assert impact.admission == {"candidates": ["case-a-c2"], "records_changed": [], "donor_changed": ["case-a-c2"]}
    assert impact.estimation == {"pool_configurations": [], "held_out_in": [], "folds": []}
    assert impact.headline() == (
        "1 configuration changed label, 0 configurations changed peak; transfer labels change for 2 queries in 2 "
        "tasks, inputs for 0 queries in 0 tasks; admission: 1 candidate touched; estimation folds unaffected; "
        "follow-up unaffected"
    )
    assert [c.config for c in result.configs if c.status == "changed"] == ["outcomes"]
    touched = {(t["table"], t["column"]): t["keys"] for t in impact.touched}
    assert touched[("eligible_runs", "configuration_id")] == ["run-cfg-b", "run-cfg-b-2", "run-cfg-b-3"]


def test_a_source_peak_changes_the_inputs_of_the_queries_it_answers(shared_mini, mini):
    impact = impact_of(shared_mini, mini, "outcomes", "cfg-c", "max_completed_run_peak_mib", 39600.0).impact
    (entry,) = impact.configurations
    assert (entry["kind"], entry["origin"], entry["old"], entry["new"]) == (
        "peak",
        "outcomes.max_completed_run_peak_mib",
        39500.0,
        39600.0,
    )
    assert (
        impact.transfer["input_queries"] == ["query-2", "query-4", "query-5"] and impact.transfer["label_queries"] == []
    )
    assert impact.transfer["input_tasks"] == ["task-1", "task-2", "task-4"]


def test_a_pool_configuration_changed_touches_every_fold(shared_mini, mini):
    impact = impact_of(shared_mini, mini, "outcomes", POOL, "max_completed_run_peak_mib", 29200.0).impact
    assert impact.estimation == {
        "pool_configurations": [POOL],
        "held_out_in": ["granite33"],  # scored in its own fold, fitted in the other two
        "folds": ["granite33", "phi4", "qwen25"],
    }
    assert "estimation folds touched: granite33, phi4, qwen25 (pool configurations held out in granite33)" in (
        impact.headline()
    )


def test_a_changed_panel_record_names_its_study_or_candidate(shared_mini, mini):
    key = next(iter(world.LARGER_MODEL)) + "-s151"
    impact = impact_of(shared_mini, mini, "larger_model_processes", key, "observed_task_peak_mib", 35100.0).impact
    assert impact.followup == {"larger_model": {"changed_rows": 1}, "expanded_host": {"changed_rows": 0}}
    assert impact.headline().endswith("follow-up changed: larger_model")
    attempt = "att-case-a-c1-s141-1"
    impact = impact_of(shared_mini, mini, "admission_realized_work", attempt, "logged_steps", 4).impact
    assert impact.admission == {"candidates": ["case-a-c1"], "records_changed": ["case-a-c1"], "donor_changed": []}


def test_release_diff_exits_1_when_the_releases_differ_and_0_when_identical(shared_mini, mini, capsys):
    assert main(["release", "diff", str(shared_mini.root), str(shared_mini.root)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("no differences")
    impact_of(shared_mini, mini, "outcomes", "cfg-b", "observed_state", world.F)
    assert main(["release", "diff", str(shared_mini.root), str(mini.root)]) == 1
    out = capsys.readouterr().out
    assert "what moves the metrics: 1 configuration changed label" in out
    assert main(["release", "diff", str(shared_mini.root), str(mini.root), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["changed"] is True and report["impact"]["transfer"]["label_tasks"] == ["task-1", "task-4"]
    assert {c["config"] for c in report["configs"]} == set(REGISTRY)  # every table, the supporting ones too
