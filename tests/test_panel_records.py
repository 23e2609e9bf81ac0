"""The panels' result records on the real release: typed and covered by configs/show/export, the published slot
facts and costs printed by `followup score`, the always-failure reference, the replay's three cost ledgers in the
table, the JSON and the report, and the admission metric's budget."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import evaluate
import pytest

import rlvrambench_hf
from rlvrambench_hf import load_table
from rlvrambench_hf.admission import replay_report, score_decisions
from rlvrambench_hf.errors import InputError
from rlvrambench_hf.followup import ALWAYS_FAILURE, score_study
from rlvrambench_hf.reporting.sections import admission_ledgers, followup_block

from conftest import invoke
from test_registry import ROWS

NEW_RECORDS = [name for name in ROWS if name.startswith(("larger_model_", "expanded_host_", "admission_"))]
NEW_RECORDS = [n for n in NEW_RECORDS if not n.endswith(("_configurations", "_candidates", "_attempts", "_targets"))]


def test_configs_all_lists_every_record_with_its_rows(snapshot):
    r = invoke("--source", str(snapshot), "configs", "--all")
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line.split() for line in r.stdout.splitlines()[3:]}
    assert len(NEW_RECORDS) == 16
    for name in NEW_RECORDS:
        assert rows[name][2] == str(ROWS[name]) and rows[name][4] == "yes", name


def test_show_and_export_a_nested_json_record(snapshot, tmp_path):
    r = invoke("--source", str(snapshot), "show", "expanded_host_costs", "--limit", "1")
    assert r.returncode == 0, r.stderr
    assert "expanded_host_costs (allocations, 9 rows)" in r.stdout
    assert any(
        line.split()[:2] == ["raw_record_provenance.batch.line_number", "int64"] for line in r.stdout.splitlines()
    )
    out = tmp_path / "costs.csv"
    r = invoke("--source", str(snapshot), "export", "expanded_host_costs", "--format", "csv", "--output", str(out))
    assert r.returncode == 0, r.stderr
    with open(out, newline="", encoding="utf-8") as handle:
        exported = list(csv.DictReader(handle))
    assert sum(float(row["whole_allocation_gpu_seconds"]) for row in exported) == 20828.0
    assert exported[0]["raw_record_provenance.format_fields"].startswith("JobID;JobIDRaw;")
    steps = load_table("admission_validated_runs", snapshot).column("phase_steps_rollout").to_pylist()
    assert [1, 2, 3, 4, 5] in steps and None in steps


def score_text(snapshot: Path, study: str) -> list[str]:
    r = invoke("--source", str(snapshot), "followup", "score", "--study", study)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_followup_score_prints_the_published_larger_model_slot_facts(snapshot):
    lines = score_text(snapshot, "larger_model")
    (slots,) = [line for line in lines if line.startswith("slots: ")]
    assert "34 of 36 planned processes launched" in slots
    assert "23 eligible memory failures (failure kind rollout_init_memory: 23; stage training: 23)" in slots
    assert "13 unresolved slots" in slots and "6 of 12 configurations resolved" in slots
    (always,) = [line.split() for line in lines if line.startswith(ALWAYS_FAILURE)]
    assert always[1:4] == ["0", "0", "0"] and always[6] == "6"  # approves nothing, right on the 6 resolved failures


def test_followup_score_prints_the_published_expanded_host_costs(snapshot):
    (costs,) = [line for line in score_text(snapshot, "expanded_host") if line.startswith("costs: ")]
    assert costs.startswith("costs: 5.79 allocation GPU-hours (9 scheduler allocations, 20,828 GPU-seconds)")
    assert "and 4.89 task GPU-hours" in costs


def test_followup_facts_agree_with_the_panels_own_summary_and_totals(snapshot, tmp_path):
    larger = score_study("larger_model", snapshot)
    assert larger["slots"]["eligible_processes"] == 23 and larger["slots"]["unresolved_processes"] == 13
    assert larger["slots"]["summary_disagreements"] == [] and larger["costs"]["totals_disagreements"] == []
    assert round(larger["costs"]["allocation_gpu_hours"], 2) == 6.47 and larger["costs"]["allocations"] == 18
    assert larger["resolved_subset_metrics"][ALWAYS_FAILURE]["correct_three_state"] == 6
    host = score_study("expanded_host", snapshot)
    assert (round(host["costs"]["allocation_gpu_hours"], 2), round(host["costs"]["task_gpu_hours"], 2)) == (5.79, 4.89)
    out = tmp_path / "scores.json"
    r = invoke("--source", str(snapshot), "followup", "score", "--study", "expanded_host", "--output", str(out))
    assert r.returncode == 0
    written = json.loads(out.read_text())
    assert written["slots"]["launched_processes"] == 18 and written["costs"]["allocations"] == 9
    html = followup_block("expanded_host", host)
    assert "5.79 allocation GPU-hours" in html and "4.89 task GPU-hours" in html


def test_replay_prints_the_three_ledgers_and_the_cold_start_totals(snapshot, tmp_path):
    out = tmp_path / "scores.json"
    r = invoke("--source", str(snapshot), "replay", "--output", str(out))
    assert r.returncode == 0, r.stderr
    text = r.stdout
    for title in ("ledger 1: donor evidence", "ledger 2: target attempts requested", "ledger 3: physical runs"):
        assert title in text
    lines = text.splitlines()
    physical = lines[lines.index(next(line for line in lines if line.startswith("ledger 3"))) + 3].split()
    assert physical == ["48", "12", "36", "48", "34,344"]
    cold = {
        line.split()[0]: line.split()[1:]
        for line in lines[lines.index(next(x for x in lines if x.startswith("cold start"))) + 3 :]
    }
    assert cold == {
        "source_copy": ["0", "36", "0", "36"],
        "headroom_guard": ["1", "36", "4", "40"],
        "direct_screen": ["3", "0", "12", "12"],
    }
    report = json.loads(out.read_text())
    runs = report["ledgers"]["physical_runs"]
    assert runs["validated_outcomes"] == 48 and round(runs["recorded_gpu_seconds"]) == 34344
    assert report["ledgers"]["donor_evidence"]["donor_attempts"] == 36
    summary = load_table("admission_collection_summary", snapshot).to_pylist()[0]
    assert runs["recorded_gpu_seconds"] == pytest.approx(summary["physical_recorded_gpu_seconds"], abs=1e-6)
    assert "34,344" in admission_ledgers(report) and "Ledger 3: physical runs" in admission_ledgers(report)


def test_the_admission_metric_takes_the_budget_and_reports_the_attempts_requested(snapshot):
    candidates = load_table("admission_candidates", snapshot, decode=True).to_pylist()
    ids = [c["candidate_id"] for c in candidates]
    decisions = ["approve" if c["source_state"] == "within_margin" else "reject" for c in candidates]
    metric = evaluate.load(rlvrambench_hf.metric_path(), "admission")
    scores = metric.compute(candidate_ids=ids, decisions=decisions, budget=2, source=str(snapshot))
    assert (scores["budget_target_attempts_per_case"], scores["requested_target_attempts"]) == (2, 8)
    replayed = next(
        s
        for s in replay_report(snapshot)["summary"]
        if (s["rule"], s["budget_target_attempts_per_case"]) == ("source_copy", 2)
    )
    assert scores["requested_target_attempts"] == replayed["spent_target_attempts"]
    assert scores["macro_case_within_margin_recall"] == 1.0
    unstated = score_decisions(ids, decisions, source=snapshot)
    assert (unstated["budget_target_attempts_per_case"], unstated["requested_target_attempts"]) == (None, None)
    one_case = score_decisions(ids[:3], decisions[:3], budget=5, source=snapshot)
    assert one_case["requested_target_attempts"] == 3  # a case has three designated screens
    with pytest.raises(InputError, match=r"^budget -1 is not a non-negative integer$"):
        metric.compute(candidate_ids=ids, decisions=decisions, budget=-1, source=str(snapshot))
