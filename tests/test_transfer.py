"""Transfer tasks on the real release: inputs, reference rules, scoring figures and prediction validation."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from rlvrambench_hf import transfer
from rlvrambench_hf.data.schema.pins import OUTCOME_LABELS
from rlvrambench_hf.errors import InputError, UnknownConfigError

from conftest import REPO_ID, cli_env, invoke
from hubserver import REPO_ROOT


@pytest.fixture(scope="module")
def tables(snapshot):
    return transfer.load_transfer_tables(snapshot, settings=True)


@pytest.fixture(scope="module")
def scores(snapshot):
    return {rule: transfer.reference_scores(rule, snapshot) for rule in transfer.RULES}


def _baseline_csv(tables, rule: str, path: Path, track: str | None = None) -> Path:
    path.write_text(
        transfer.predictions_csv(transfer.reference_predictions(tables["queries"], tables["outcomes"], rule, track))
    )
    return path


# ----------------------------------------------------------------------------- figures of the published benchmark


def test_queries_tasks_and_targets(scores):
    overall = scores["source_label"]["overall"]
    assert overall["queries"] == 400
    assert len(scores["source_label"]["per_task"]) == 52
    assert overall["distinct_target_configurations"] == 94
    tracks = scores["source_label"]["per_track"]
    assert {t: (s["queries"], s["tasks"]) for t, s in tracks.items()} == {
        "model_transfer": (144, 24),
        "workload_transfer": (216, 12),
        "gpu_count_transfer": (36, 12),
        "horizon_transfer": (4, 4),
    }


def test_source_label_solves_workload_transfer(scores):
    workload = scores["source_label"]["per_track"]["workload_transfer"]
    assert workload["correct_three_state"] == 216 and workload["three_state_accuracy"] == 1.0
    assert workload["distinct_target_configurations"] == 72


@pytest.mark.parametrize(
    "rule, correct, approved_within, approved_failure, approved_above, rejected_within",
    [
        ("source_label", 20, 20, 2, 4, 6),
        ("always_approve", 26, 26, 4, 6, 0),
        ("always_reject", 4, 0, 0, 0, 26),
    ],
)
def test_gpu_count_track(scores, rule, correct, approved_within, approved_failure, approved_above, rejected_within):
    gpu = scores[rule]["per_track"]["gpu_count_transfer"]
    assert gpu["queries"] == 36
    assert gpu["correct_three_state"] == correct
    assert gpu["approved_within_margin"] == approved_within
    assert gpu["approved_memory_failure"] == approved_failure
    assert gpu["approved_above_margin"] == approved_above
    assert gpu["rejected_within_margin"] == rejected_within
    if rule == "always_reject":
        assert gpu["approved"] == 0
        # no approvals: every among-approved rate has a zero denominator and is null, not 0
        assert gpu["within_margin_approval_precision"] is None
        assert gpu["memory_failure_among_approved"] is None and gpu["above_margin_among_approved"] is None
        assert gpu["within_margin_recall"] == 0.0


def test_horizon_track(scores):
    horizon = scores["source_label"]["per_track"]["horizon_transfer"]
    assert (horizon["correct_three_state"], horizon["queries"], horizon["approved"]) == (4, 4, 3)


def test_source_costs(scores):
    for rule in transfer.RULES:  # costs describe the supplied evidence, whatever the rule predicts
        s = scores[rule]
        assert s["overall"]["eligible_source_processes"] == 282
        assert s["per_track"]["workload_transfer"]["eligible_source_processes"] == 216
        workload_tasks = [t for t in s["per_task"].values() if t["track"] == "workload_transfer"]
        assert len(workload_tasks) == 12
        assert {t["eligible_source_processes"] for t in workload_tasks} == {18}


def test_score_file_structure(scores):
    s = scores["source_label"]
    assert list(s) == [
        "protocol_version",
        "selected_track",
        "rate_with_zero_denominator",
        "cost_scope",
        "cost_warning",
        "evaluation_warning",
        "overall",
        "per_track",
        "per_task",
    ]
    assert s["protocol_version"] == "1.1" and s["selected_track"] == "all"
    assert s["rate_with_zero_denominator"] is None
    assert list(s["per_task"]) == sorted(s["per_task"])
    matrix = s["overall"]["confusion_matrix_predicted_rows_observed_columns"]
    assert list(matrix) == list(OUTCOME_LABELS)
    assert all(list(row) == list(OUTCOME_LABELS) for row in matrix.values())
    assert sum(sum(row.values()) for row in matrix.values()) == 400
    assert matrix["within_margin"]["memory_failure"] == s["overall"]["approved_memory_failure"]


def test_macro_mean_is_exact(scores):
    for rule in transfer.RULES:
        s = scores[rule]
        for track, entry in s["per_track"].items():
            tasks = [t for t in s["per_task"].values() if t["track"] == track]
            exact = sum(Fraction(t["correct_three_state"], t["queries"]) for t in tasks) / len(tasks)
            assert entry["macro_task_three_state_accuracy"] == float(exact)
    assert scores["source_label"]["per_track"]["model_transfer"]["macro_task_three_state_accuracy"] == 7 / 9


def test_label_metrics_null_rates():
    m = transfer.label_metrics(["memory_failure", "above_margin"], ["memory_failure", "within_margin"])
    assert m["approved"] == 0 and m["within_margin_approval_precision"] is None
    assert m["approval_rate_on_above_margin_targets"] is None  # no above-margin target
    assert m["rejected_within_margin"] == 1 and m["rejection_rate_on_within_margin_targets"] == 1.0
    assert m["correct_three_state"] == 1 and m["three_state_accuracy"] == 0.5
    assert m["confusion_matrix_predicted_rows_observed_columns"]["above_margin"]["within_margin"] == 1
    with pytest.raises(InputError, match="outside"):
        transfer.label_metrics(["safe"], ["within_margin"])
    with pytest.raises(InputError, match="1 predicted labels but 2"):
        transfer.label_metrics(["within_margin"], ["within_margin", "within_margin"])


def test_unknown_track_and_rule(snapshot):
    with pytest.raises(UnknownConfigError, match="unknown track 'gpu'"):
        transfer.reference_scores("source_label", snapshot, track="gpu")
    with pytest.raises(UnknownConfigError, match="unknown rule 'oracle'"):
        transfer.reference_scores("oracle", snapshot)


# ----------------------------------------------------------------------------- task inputs


def test_inputs_are_leak_free(tables):
    data = transfer.task_inputs(tables["queries"], tables["outcomes"], tables["configurations"])
    assert len(data["tasks"]) == 52
    assert sum(len(t["queries"]) for t in data["tasks"]) == 400
    outcome_columns = set(tables["outcomes"].column_names) - {"configuration_id"}
    for task in data["tasks"]:
        source_cases = set(task["source_case_ids"])
        source_ids = {s["configuration_id"] for s in task["sources"]}
        for source in task["sources"]:
            assert source["outcome"]["observed_state"] in OUTCOME_LABELS
        for q in task["queries"]:
            target = q["target"]
            assert not (set(target) & outcome_columns), q["query_id"]
            assert not any("seed" in k or k in ("run_id", "attempt_id", "outcome") for k in target)
            assert target["case_id"] not in source_cases
            assert target["configuration_id"] not in source_ids
            assert q["source_configuration_id"] in source_ids
    text = json.dumps([q["target"] for t in data["tasks"] for q in t["queries"]])
    assert "observed_state" not in text and "peak_mib" not in text


def test_inputs_cli_track(snapshot, tmp_path):
    out = tmp_path / "inputs.json"
    r = invoke("--source", str(snapshot), "inputs", "--track", "gpu_count_transfer", "--output", str(out))
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert data["selected_track"] == "gpu_count_transfer"
    assert len(data["tasks"]) == 12 and {t["track"] for t in data["tasks"]} == {"gpu_count_transfer"}
    assert sum(len(t["queries"]) for t in data["tasks"]) == 36


def test_inputs_cli_admission(snapshot, tmp_path):
    from rlvrambench_hf.admission import policy_inputs

    out = tmp_path / "admission.json"
    r = invoke("--source", str(snapshot), "inputs", "--admission", "--rule", "source_copy", "--output", str(out))
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text()) == json.loads(json.dumps(policy_inputs(str(snapshot), "source_copy")))


def test_inputs_cli_option_errors(snapshot, tmp_path):
    out = tmp_path / "x.json"
    r = invoke("--source", str(snapshot), "inputs", "--rule", "source_copy", "--output", str(out))
    assert r.returncode == 2 and "--admission" in r.stderr and not out.exists()
    r = invoke("--source", str(snapshot), "inputs", "--admission", "--output", str(out))
    assert r.returncode == 2 and "--rule" in r.stderr and not out.exists()


# ----------------------------------------------------------------------------- inputs in upstream's schema

# SHA-256 of what the reproduction repository's own code writes for this release (benchmark.py inputs --data
# benchmark [--track gpu_count_transfer]; decision_benchmark.py inputs --protocol benchmark/decision/protocol.json
# --rule R), computed once with upstream's task_inputs() on the release copy: ours must be the same bytes.
UPSTREAM_DIGESTS = {
    ("transfer", "all"): "d27157c5a68a9a63f95b8e4cb245f78e5de5e93953404accc8d2ac04529dd641",
    ("transfer", "gpu_count_transfer"): "94d4550c4e0462ce41aba87c56f14f56aa07c45d195c60db874c564c3b24ccd2",
    ("admission", "source_copy"): "f02c8536868d205e7599c38c26cec741d4d79bfe3a1541f6d1fc07276f31d229",
    ("admission", "direct_screen"): "43527c92938e447e3440561a6aae60fdddba993746624668302b199f8e9346a2",
}


def upstream_style_source_copy(task_inputs: list[dict]) -> list[dict]:
    """A method written against upstream's benchmark.py inputs (its baseline(): copy the matched source label)."""
    predictions = []
    for task in task_inputs:
        allowed = {r["settings"]["configuration_id"]: r["measurements"]["observed_state"] for r in task["source"]}
        for target in task["targets"]:
            predictions.append(
                {"query_id": target["query_id"], "predicted_state": allowed[target["matched_source_configuration_id"]]}
            )
    return sorted(predictions, key=lambda r: r["query_id"])


def upstream_style_guard(cases: list[dict]) -> dict[str, str]:
    """A method written against upstream's decision_benchmark.py inputs (its headroom guard's initial decisions)."""
    decisions = {}
    for task in cases:
        for candidate in task["candidates"]:
            donor = task["donors"][candidate["candidate_id"]]
            approve = donor["observed_state"] == "within_margin" and float(donor["max_completed_run_peak_mib"]) <= (
                task["memory_limit_mib"] - task["additional_donor_guard_mib"]
            )
            decisions[candidate["candidate_id"]] = "approve" if approve else "reject"
    return decisions


@pytest.mark.parametrize(("kind", "which"), sorted(UPSTREAM_DIGESTS))
def test_upstream_format_inputs_are_upstreams_bytes(snapshot, tmp_path, kind, which):
    import hashlib

    from rlvrambench_hf.cli import main

    out = tmp_path / "inputs.json"
    options = ["--track", which] if kind == "transfer" else ["--admission", "--rule", which]
    assert main(["--source", str(snapshot), "inputs", "--format", "upstream", *options, "--output", str(out)]) == 0
    assert hashlib.sha256(out.read_bytes()).hexdigest() == UPSTREAM_DIGESTS[kind, which]


def test_a_method_written_for_upstreams_inputs_runs_unchanged(snapshot, tmp_path, scores):
    import csv

    from rlvrambench_hf.admission import score_decisions
    from rlvrambench_hf.cli import main

    inputs = tmp_path / "task_inputs.json"
    assert main(["--source", str(snapshot), "inputs", "--format", "upstream", "--output", str(inputs)]) == 0
    tasks = json.loads(inputs.read_text())
    assert all(isinstance(v, str) for t in tasks for s in t["source"] for v in s["measurements"].values())
    assert all("observed_state" not in t["settings"] for task in tasks for t in task["targets"])  # no target outcome
    predictions = tmp_path / "predictions.csv"
    with predictions.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["query_id", "predicted_state"], lineterminator="\n")
        writer.writeheader()
        writer.writerows(upstream_style_source_copy(tasks))
    score_file = tmp_path / "scores.json"
    args = ["--source", str(snapshot), "evaluate", "--predictions", str(predictions), "--output", str(score_file)]
    assert main(args) == 0
    assert json.loads(score_file.read_text()) == json.loads(json.dumps(scores["source_label"]))  # the rule's scores

    cases = tmp_path / "admission_inputs.json"
    option = ["inputs", "--admission", "--format", "upstream", "--rule", "headroom_guard", "--output", str(cases)]
    assert main(["--source", str(snapshot), *option]) == 0
    decisions = upstream_style_guard(json.loads(cases.read_text()))
    result = score_decisions(list(decisions), list(decisions.values()), budget=0, source=snapshot)
    assert result["macro_case_within_margin_recall"] == 0.75  # the card: the guard's 75 % before testing
    assert (result["approved_memory_failure"], result["approved_above_margin"]) == (0, 0)


def test_upstream_format_option_errors(snapshot, tmp_path, capsys):
    from rlvrambench_hf.cli import main

    out = tmp_path / "x.json"
    base = ["--source", str(snapshot), "inputs"]
    assert main([*base, "--protocol", "p.json", "--output", str(out)]) == 2
    assert "--protocol applies to --admission --format upstream only" in capsys.readouterr().err
    bad = tmp_path / "protocol.json"
    bad.write_text("[]")
    assert main([*base, "--admission", "--format", "upstream", "--protocol", str(bad), "--output", str(out)]) == 2
    assert "protocol file" in capsys.readouterr().err and not out.exists()


# ----------------------------------------------------------------------------- CLI: baseline and evaluate


@pytest.mark.parametrize("rule", transfer.RULES)
def test_cli_baseline_and_evaluate(snapshot, tmp_path, scores, rule):
    predictions = tmp_path / "p.csv"
    r = invoke("--source", str(snapshot), "baseline", "--rule", rule, "--output", str(predictions))
    assert r.returncode == 0, r.stderr
    lines = predictions.read_text().splitlines()
    assert lines[0] == "query_id,predicted_state" and len(lines) == 401
    ids = [line.split(",")[0] for line in lines[1:]]
    assert ids == sorted(ids)
    out = tmp_path / "s.json"
    r = invoke("--source", str(snapshot), "evaluate", "--predictions", str(predictions), "--output", str(out))
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text()) == scores[rule]
    assert "gpu_count_transfer" in r.stdout and "overall" in r.stdout


@pytest.mark.parametrize("rule", transfer.RULES)
def test_independent_reference_evaluator_agrees(snapshot, tables, tmp_path, scores, rule):
    """bench/reference_evaluate.py re-implements the scoring with the standard library only."""
    predictions = _baseline_csv(tables, rule, tmp_path / "p.csv")
    out = tmp_path / "ref.json"
    subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "reference_evaluate.py"), str(snapshot), str(predictions), str(out)],
        check=True,
    )
    assert json.loads(out.read_text()) == scores[rule]


def test_evaluate_path_keeps_heavy_imports_away(snapshot, tables, tmp_path):
    predictions = _baseline_csv(tables, "source_label", tmp_path / "p.csv")
    code = (
        "import sys; from rlvrambench_hf.cli import main; "
        f"main(['--source', {str(snapshot)!r}, 'evaluate', '--predictions', {str(predictions)!r}]); "
        "print([m for m in ('pandas', 'datasets', 'evaluate', 'matplotlib') if m in sys.modules])"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cli_env())
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]"


def test_cli_track_requires_exact_track_coverage(snapshot, tables, tmp_path):
    whole = _baseline_csv(tables, "source_label", tmp_path / "all.csv")
    out = tmp_path / "s.json"
    r = invoke(
        "--source",
        str(snapshot),
        "evaluate",
        "--predictions",
        str(whole),
        "--track",
        "horizon_transfer",
        "--output",
        str(out),
    )
    assert r.returncode == 2 and "396 unexpected" in r.stderr and not out.exists()
    only = _baseline_csv(tables, "source_label", tmp_path / "h.csv", "horizon_transfer")
    r = invoke(
        "--source",
        str(snapshot),
        "evaluate",
        "--predictions",
        str(only),
        "--track",
        "horizon_transfer",
        "--output",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    s = json.loads(out.read_text())
    assert s["selected_track"] == "horizon_transfer" and list(s["per_track"]) == ["horizon_transfer"]
    assert s["overall"]["queries"] == 4 and len(s["per_task"]) == 4
    r = invoke("--source", str(snapshot), "evaluate", "--predictions", str(only), "--output", str(tmp_path / "n"))
    assert r.returncode == 2 and "396 missing" in r.stderr


def test_cli_through_hub(hub, tmp_path, scores):
    predictions = tmp_path / "p.csv"
    r = invoke("--source", REPO_ID, "--revision", "main", "baseline", "--output", str(predictions))
    assert r.returncode == 0, r.stderr
    out = tmp_path / "s.json"
    r = invoke(
        "--source", REPO_ID, "--revision", "main", "evaluate", "--predictions", str(predictions), "--output", str(out)
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text()) == scores["source_label"]


# ----------------------------------------------------------------------------- validation of prediction files


@pytest.fixture(scope="module")
def good_rows(tables):
    p = transfer.reference_predictions(tables["queries"], tables["outcomes"], "source_label")
    return list(zip(p.column("query_id").to_pylist(), p.column("predicted_state").to_pylist()))


def _csv(rows, header="query_id,predicted_state") -> str:
    return "\n".join([header] + [f"{q},{s}" for q, s in rows]) + "\n"


BAD_CASES = {
    "empty": (lambda rows: "", "is empty"),
    "blank": (lambda rows: "\n  \n", "is empty"),
    "header_only": (lambda rows: "query_id,predicted_state\n", "header but no prediction rows"),
    "missing_column": (lambda rows: "query_id\n" + "\n".join(q for q, _ in rows) + "\n", "missing predicted_state"),
    "extra_column": (
        lambda rows: _csv([(q, f"{s},0.9") for q, s in rows], "query_id,predicted_state,p"),
        "exactly the columns",
    ),
    "missing_rows": (lambda rows: _csv(rows[5:]), "5 missing query id(s) (e.g. 'query-"),
    "duplicate_rows": (lambda rows: _csv(rows + rows[:2]), "2 duplicated query id(s) (e.g. 'query-"),
    "unexpected_rows": (
        lambda rows: _csv(rows + [("query-zzz", "within_margin"), ("query-yyy", "above_margin")]),
        "2 unexpected query id(s) not among the selected queries (e.g. 'query-zzz', 'query-yyy')",
    ),
    "bad_label": (lambda rows: _csv([(rows[0][0], "safe")] + rows[1:]), "1 value(s) outside"),
    "upper_case_label": (lambda rows: _csv([(q, s.upper()) for q, s in rows]), "400 value(s) outside"),
    "upper_case_id": (lambda rows: _csv([(rows[0][0].upper(), rows[0][1])] + rows[1:]), "1 unexpected"),
    "blank_id": (lambda rows: _csv([("", rows[0][1])] + rows), "empty query_id"),
    "ragged": (
        lambda rows: _csv(rows[:1] + [(rows[1][0], rows[1][1] + ",x")] + rows[2:]),
        "data row 2 (line 3) has 3 cells where the header has 2",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_invalid_predictions(case, snapshot, good_rows, tmp_path):
    make, message = BAD_CASES[case]
    predictions = tmp_path / "p.csv"
    predictions.write_text(make(good_rows))
    out = tmp_path / "s.json"
    r = invoke("--source", str(snapshot), "evaluate", "--predictions", str(predictions), "--output", str(out))
    assert r.returncode == 2, r.stdout
    assert message in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("rlvrambench: error: ")
    assert not out.exists() and list(tmp_path.iterdir()) == [predictions]


def test_missing_predictions_file(snapshot, tmp_path):
    r = invoke("--source", str(snapshot), "evaluate", "--predictions", str(tmp_path / "nope.csv"))
    assert r.returncode == 2 and f"predictions file {tmp_path / 'nope.csv'} does not exist" in r.stderr


def test_tolerated_bom_whitespace_and_order(snapshot, good_rows, scores, tmp_path):
    """Documented decision: a UTF-8 BOM, surrounding spaces/tabs, CRLF and any column order are accepted."""
    body = "\r\n".join([" predicted_state\t, query_id "] + [f" {s} ,\t{q}" for q, s in reversed(good_rows)])
    predictions = tmp_path / "p.csv"
    predictions.write_bytes(b"\xef\xbb\xbf" + body.encode() + b"\r\n")
    out = tmp_path / "s.json"
    r = invoke("--source", str(snapshot), "evaluate", "--predictions", str(predictions), "--output", str(out))
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text()) == scores["source_label"]


def test_core_validation_of_lists(snapshot, good_rows):
    key = transfer.cached_scoring_key(snapshot)
    ids = [q for q, _ in good_rows]
    states = [s for _, s in good_rows]
    assert transfer.score_predictions(key, ids, states)["overall"]["correct_three_state"] == 352
    with pytest.raises(InputError, match="400 query ids but 399 predicted labels"):
        transfer.score_predictions(key, ids, states[1:])
    with pytest.raises(InputError, match="no predictions"):
        transfer.score_predictions(key, [], [])
    with pytest.raises(InputError, match="missing \\(None\\)"):
        transfer.score_predictions(key, ids, [None] + states[1:])
