"""Scores a researcher can publish on the real release: intervals on every rate, files unchanged without them,
paired comparisons, the Hub's evaluation results, the leaderboard, and the flat view for training loops."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from rlvrambench_hf import DEFAULT_REVISION, admission, estimation, flat_scores, trainer_metrics, transfer
from rlvrambench_hf.data.tables.output import json_text
from rlvrambench_hf.errors import InputError
from rlvrambench_hf.followup import STUDIES, score_study
from rlvrambench_hf.scoring.intervals import BOOTSTRAP, RANGE
from rlvrambench_hf.scoring.labels import metrics_from_confusion

from conftest import cli_env, invoke, run_cli

ADDED = ("intervals", "interval_settings", "comparisons")
#: The rates of the label metrics (every one must carry an interval).
RATES = [k for k, v in metrics_from_confusion(__import__("numpy").eye(3, dtype=int)).items() if isinstance(v, float)]


@pytest.fixture(scope="module")
def tables(snapshot):
    return transfer.load_transfer_tables(snapshot)


@pytest.fixture(scope="module")
def key(tables):
    return transfer.scoring_key(tables["queries"], tables["outcomes"])


def rule_rows(tables, rule: str, track: str | None = None):
    rows = transfer.reference_predictions(tables["queries"], tables["outcomes"], rule, track)
    return rows.column("query_id"), rows.column("predicted_state")


def without_intervals(value: Any) -> Any:
    """``value`` with every block the interval option adds removed."""
    if isinstance(value, dict):
        return {k: without_intervals(v) for k, v in value.items() if k not in ADDED}
    if isinstance(value, list):
        return [without_intervals(v) for v in value]
    return value


def blocks(value: Any, path: str = ""):
    """(path, scope, its interval block) of every scored scope in a file."""
    if isinstance(value, dict):
        if "intervals" in value:
            yield path, value, value["intervals"]
        for k, v in value.items():
            if k not in ADDED:
                yield from blocks(v, f"{path}/{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from blocks(v, f"{path}/{i}")


def assert_every_rate_has_an_interval(scores: dict, expected_blocks: int) -> None:
    found = list(blocks(scores))
    assert len(found) == expected_blocks
    for path, scope, block in found:
        assert block["method"] in (BOOTSTRAP, RANGE), path
        rates = [k for k, v in scope.items() if isinstance(v, float) or (v is None and k in RATES)]
        for name in rates:
            assert name in block["metrics"], (path, name)
            ends = block["metrics"][name]
            if scope[name] is not None and ends["low"] is not None:
                assert ends["low"] <= ends["high"], (path, name)
                if block["method"] == BOOTSTRAP:  # a percentile interval contains its point in these data
                    assert ends["low"] - 1e-12 <= scope[name] <= ends["high"] + 1e-12, (path, name)


# ------------------------------------------------------------------ intervals: every rate, reproducible, additive


def test_transfer_intervals_on_every_scope_resample_targets(snapshot, tables, key):
    ids, states = rule_rows(tables, "source_label")
    scores = transfer.score_predictions(key, ids, states, intervals=True)
    assert_every_rate_has_an_interval(scores, 1 + 4 + 52)
    assert scores["interval_settings"]["unit"] == "target_configuration"
    overall = scores["overall"]["intervals"]
    assert (overall["method"], overall["units"]) == (BOOTSTRAP, 94)
    recall = overall["metrics"]["within_margin_recall"]
    assert 0.89 < recall["low"] < 0.9438 < recall["high"] < 0.99
    units = {t: s["intervals"]["units"] for t, s in scores["per_track"].items()}
    assert units == {"model_transfer": 72, "workload_transfer": 72, "gpu_count_transfer": 36, "horizon_transfer": 4}
    horizon = scores["per_track"]["horizon_transfer"]["intervals"]
    assert horizon["method"] == RANGE and "4 target configurations: too few" in horizon["note"]
    gpu = scores["per_track"]["gpu_count_transfer"]["intervals"]["metrics"]
    assert gpu["approved_memory_failure"]["low"] == 0 and gpu["approved_memory_failure"]["high"] >= 4
    assert "macro_task_three_state_accuracy" in gpu


def test_draws_with_every_unit_once_are_the_point_scores(snapshot, tables, key):
    """The resampled recomputation is the scorer itself: with every unit drawn once it gives the score file's
    numbers exactly (transfer scopes and estimation folds)."""
    import numpy as np

    from rlvrambench_hf.estimation.intervals import fold_draws
    from rlvrambench_hf.transfer.intervals import MACRO, scope_draws, scopes_of, unit_cells

    predicted = transfer.align_predictions(key, *rule_rows(tables, "source_label"))
    scores = transfer.score(key, predicted)
    cells = unit_cells(key, predicted)
    ones = np.ones((1, cells.shape[0]), dtype=np.int64)
    for scope in scopes_of(key):
        point = scores["overall"] if scope.level == "overall" else scores[scope.level][scope.name]
        draw = scope_draws(cells, ones, scope, 1 + len(key.tracks))[0]
        assert {k: v for k, v in draw.items() if k != MACRO} == {k: point[k] for k in draw if k != MACRO}
        if scope.tasks:
            assert draw[MACRO] == pytest.approx(point[MACRO], abs=1e-15)
    report = estimation.run_retrospective(snapshot)
    truth = {r["configuration_id"]: r for r in estimation.load_inputs(snapshot).pool.rows}
    for fold in report["folds"].values():
        ids = sorted({r["configuration_id"] for r in fold["predictions"]})
        for method, point in fold["scores"].items():
            assert fold_draws(fold["predictions"], truth, ids, np.ones((1, 30), dtype=np.int64), method) == [point]


def test_same_seed_same_bytes_another_seed_other_intervals(snapshot, tables, key, tmp_path):
    ids, states = rule_rows(tables, "always_approve")
    first = json_text(transfer.score_predictions(key, ids, states, intervals={"seed": 7, "resamples": 500}))
    assert first == json_text(transfer.score_predictions(key, ids, states, intervals={"seed": 7, "resamples": 500}))
    assert first != json_text(transfer.score_predictions(key, ids, states, intervals={"seed": 8, "resamples": 500}))
    predictions = tmp_path / "p.csv"
    predictions.write_text(
        transfer.predictions_csv(
            transfer.reference_predictions(tables["queries"], tables["outcomes"], "always_approve")
        )
    )
    for name in ("a.json", "b.json"):
        result = invoke(
            "--source",
            str(snapshot),
            "evaluate",
            "--predictions",
            str(predictions),
            "--intervals",
            "--seed",
            "7",
            "--resamples",
            "500",
            "--output",
            str(tmp_path / name),
        )
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text() == first


def test_evaluate_without_the_option_writes_todays_file_and_with_it_only_adds(snapshot, tables, key, tmp_path):
    predictions = tmp_path / "p.csv"
    predictions.write_text(
        transfer.predictions_csv(transfer.reference_predictions(tables["queries"], tables["outcomes"], "source_label"))
    )
    plain, with_intervals = tmp_path / "plain.json", tmp_path / "intervals.json"
    base = ["--source", str(snapshot), "evaluate", "--predictions", str(predictions), "--output"]
    result = invoke(*base, str(plain))
    assert result.returncode == 0, result.stderr
    golden = transfer.score(key, transfer.align_predictions(key, *rule_rows(tables, "source_label")))
    assert plain.read_text() == json_text(golden)
    assert "interval" not in plain.read_text() and "[" not in result.stdout
    result = invoke(*base, str(with_intervals), "--intervals")
    assert result.returncode == 0, result.stderr
    assert json_text(without_intervals(json.loads(with_intervals.read_text()))) == plain.read_text()
    assert re.search(r"\noverall\s+94\s+0\.9438 \[0\.91\d*, 0\.9\d*\]", result.stdout)
    assert "4 (range)" in result.stdout


def test_replay_intervals_are_the_range_over_the_four_cases(snapshot, tmp_path):
    plain, ranged = tmp_path / "plain.json", tmp_path / "ranged.json"
    result = invoke("--source", str(snapshot), "replay", "--output", str(plain))
    assert result.returncode == 0, result.stderr
    golden = admission.build_report(
        admission.load_protocol(snapshot),
        admission.load_attempts(snapshot),
        [admission.policy.builtin_rule(r) for r in admission.api.DEFAULT_RULES],
        (0, 1, 2, 3),
        admission.api.candidate_gpu_counts(snapshot),
    )
    assert plain.read_text() == json_text(golden)
    result = invoke("--source", str(snapshot), "replay", "--intervals", "--output", str(ranged))
    assert result.returncode == 0, result.stderr
    report = json.loads(ranged.read_text())
    assert json_text(without_intervals(report)) == plain.read_text()
    assert_every_rate_has_an_interval(report, 12 + 48 + 8)
    row = next(
        r for r in report["summary"] if r["rule"] == "direct_screen" and r["budget_target_attempts_per_case"] == 2
    )
    block = row["intervals"]
    assert (block["method"], block["units"]) == (RANGE, 4)
    assert block["metrics"]["macro_case_within_margin_recall"] == {"low": 0.0, "high": 1.0}
    assert "direct_screen   2       4 (range)  0.75 (per case 0–1)" in result.stdout
    assert "4 cases: too few for a bootstrap interval" in result.stdout


def test_decision_scores_of_the_metric_range_over_cases(snapshot):
    candidates = [
        c for c in __import__("rlvrambench_hf").load_table("admission_candidates", snapshot, decode=True).to_pylist()
    ]
    ids = [c["candidate_id"] for c in candidates]
    scores = admission.score_decisions(ids, ["approve"] * len(ids), source=snapshot, intervals=True)
    assert_every_rate_has_an_interval(scores, 1 + 4)
    assert scores["intervals"]["units"] == 4 and scores["intervals"]["method"] == RANGE


@pytest.mark.parametrize("study", list(STUDIES))
def test_followup_intervals_range_over_the_planned_configurations(snapshot, tmp_path, study):
    plain, ranged = tmp_path / "plain.json", tmp_path / "ranged.json"
    assert (
        invoke("--source", str(snapshot), "followup", "score", "--study", study, "--output", str(plain)).returncode == 0
    )
    assert plain.read_text() == json_text(score_study(study, snapshot))
    result = invoke(
        "--source", str(snapshot), "followup", "score", "--study", study, "--intervals", "--output", str(ranged)
    )
    assert result.returncode == 0, result.stderr
    scores = json.loads(ranged.read_text())
    assert json_text(without_intervals(scores)) == plain.read_text()
    assert_every_rate_has_an_interval(scores, 2 * 4)  # three frozen methods and the always-failure reference
    planned = scores["approvals"]["donor_copy"]["intervals"]
    assert planned["units"] == scores["planned_configurations"] and planned["method"] == RANGE
    assert scores["resolved_subset_metrics"]["logistic"]["intervals"]["units"] == scores["resolved_configurations"]


def test_estimation_intervals_resample_configurations_within_each_fold(snapshot, tmp_path):
    plain, with_intervals = tmp_path / "plain.json", tmp_path / "intervals.json"
    assert invoke("--source", str(snapshot), "estimate", "retrospective", "--output", str(plain)).returncode == 0
    result = invoke(
        "--source",
        str(snapshot),
        "estimate",
        "retrospective",
        "--intervals",
        "--resamples",
        "300",
        "--output",
        str(with_intervals),
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(with_intervals.read_text())
    assert json_text(without_intervals(report)) == plain.read_text()
    assert_every_rate_has_an_interval(report, 3 * 4)  # three folds: three references and the memory model
    block = report["folds"]["granite33"]["scores"]["component_regression"]["intervals"]
    assert (block["method"], block["units"], block["unit"]) == (BOOTSTRAP, 30, "held_out_configuration")
    approved = block["metrics"]["approved_memory_failure"]
    assert approved["low"] <= 4 <= approved["high"]  # the regression approves 4 memory-failing Granite settings
    assert "granite33  component_regression  22 [" in result.stdout


def test_estimate_compare_reads_each_estimator_against_each_reference(snapshot, tmp_path):
    (tmp_path / "mine.py").write_text(
        "class AlwaysReject:\n"
        "    def fit(self, training):\n        pass\n"
        "    def predict(self, targets):\n        return ['memory_failure'] * len(targets)\n"
    )
    output = tmp_path / "compare.json"
    result = invoke(
        "--source",
        str(snapshot),
        "estimate",
        "compare",
        "--estimator",
        "mine:AlwaysReject",
        "--intervals",
        "--resamples",
        "200",
        "--output",
        str(output),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    fold = json.loads(output.read_text())["folds"]["qwen25"]
    assert set(fold["comparisons"]["AlwaysReject"]) == {*estimation.METHODS, "physical_model"}
    entry = fold["comparisons"]["AlwaysReject"]["logistic"]["metrics"]["rejected_within_margin"]
    assert (entry["a"], entry["b"], entry["difference"]) == (22, 6, 16)
    assert (
        "qwen25: AlwaysReject rejects 16 more within-margin targets than logistic (22 against 6), 95% "
        "interval" in result.stdout
    )


def test_score_fold_predictions_takes_the_intervals_keyword(snapshot):
    report = estimation.run_retrospective(snapshot)
    rows = [r for f in report["folds"].values() for r in f["predictions"] if r["method"] == "logistic"]
    ids, states = [r["configuration_id"] for r in rows], [r["predicted_state"] for r in rows]
    phi4 = [r for r in report["folds"]["phi4"]["predictions"] if r["method"] == "logistic"]
    scored = estimation.score_fold_predictions(
        [r["configuration_id"] for r in phi4],
        [r["predicted_state"] for r in phi4],
        fold="phi4",
        source=snapshot,
        intervals={"resamples": 200},
    )
    assert set(scored["folds"]) == {"phi4"} and scored["folds"]["phi4"]["intervals"]["units"] == 30
    full = estimation.score_fold_predictions(ids, states, source=snapshot, intervals={"resamples": 200})
    assert full["folds"]["phi4"]["intervals"] == scored["folds"]["phi4"]["intervals"]  # one stream per fold


def test_interval_settings_without_the_option_are_refused(snapshot, tmp_path):
    result = invoke("--source", str(snapshot), "replay", "--level", "0.9", "--output", str(tmp_path / "r.json"))
    assert result.returncode == 2 and result.stderr.strip() == "rlvrambench: error: --level needs --intervals"
    result = invoke(
        "--source", str(snapshot), "replay", "--intervals", "--level", "2", "--output", str(tmp_path / "r.json")
    )
    assert result.returncode == 2 and "interval level 2.0 must be a number between 0 and 1" in result.stderr
    assert not (tmp_path / "r.json").exists()


# ------------------------------------------------------------------------------------------- paired comparisons


def test_compare_source_label_against_always_approve_on_the_gpu_count_track(snapshot, tmp_path):
    output = tmp_path / "compare.json"
    result = invoke(
        "--source",
        str(snapshot),
        "compare",
        "rule:source_label",
        "rule:always_approve",
        "--track",
        "gpu_count_transfer",
        "--output",
        str(output),
    )
    assert result.returncode == 0, result.stderr
    comparison = json.loads(output.read_text())
    assert list(comparison["scopes"]) == ["gpu_count_transfer"]
    block = comparison["scopes"]["gpu_count_transfer"]
    assert (block["method"], block["units"]) == (BOOTSTRAP, 36)
    failures = block["metrics"]["approved_memory_failure"]
    assert (failures["a"], failures["b"], failures["difference"]) == (2, 4, -2)
    assert failures["low"] <= -2 <= failures["high"] <= 0
    line = (
        "gpu_count_transfer: source_label approves 2 fewer memory failures than always_approve (2 against 4), "
        f"95% interval {-failures['high']}–{-failures['low']} fewer"
    )
    assert line in result.stdout
    assert set(block["metrics"]) >= {
        "within_margin_recall",
        "approved_above_margin",
        "within_margin_approval_precision",
    }
    assert not any(k in comparison for k in ("score", "combined"))


def test_compare_a_predictions_file_with_a_rule_and_with_itself(snapshot, tables, tmp_path):
    mine = tmp_path / "mine.csv"
    mine.write_text(
        transfer.predictions_csv(transfer.reference_predictions(tables["queries"], tables["outcomes"], "source_label"))
    )
    result = invoke("--source", str(snapshot), "compare", str(mine), "rule:source_label", "--intervals")
    assert result.returncode == 0, result.stderr
    assert (
        "overall: mine.csv and source_label approve the same number of memory failures (2 each); no difference "
        "in any resample" in result.stdout
    )
    result = invoke("--source", str(snapshot), "compare", "rule:nope", str(mine))
    assert result.returncode == 2 and "unknown rule 'nope'" in result.stderr


# ---------------------------------------------------------------------------------------- Hub evaluation results


def test_results_export_parses_back_and_names_the_revision(snapshot, tables, key, tmp_path):
    import yaml
    from huggingface_hub import parse_eval_result_entries

    from rlvrambench_hf import __version__

    scores = tmp_path / "scores.json"
    scores.write_text(
        json_text(transfer.score_predictions(key, *rule_rows(tables, "always_reject"), intervals={"resamples": 300}))
    )
    result = invoke("results", "export", str(scores), "--repo-id", "me/my-model", "--output", str(tmp_path))
    assert result.returncode == 0, result.stderr
    written = tmp_path / ".eval_results" / "rlvrambench.yaml"
    entries = parse_eval_result_entries(yaml.safe_load(written.read_text()))
    assert len(entries) == 4 * 4 - 4  # always_reject approves nothing: its approval precision is null, left out
    assert "left out (null, never 0): gpu_count_transfer-within_margin_approval_precision" in result.stdout
    assert {e.dataset_id for e in entries} == {"kobzaond/RLVRAMBench"}
    assert {e.dataset_revision for e in entries} == {DEFAULT_REVISION}
    recall = next(e for e in entries if e.task_id == "gpu_count_transfer-within_margin_recall")
    assert recall.value == 0.0 and f"rlvrambench-hf {__version__}" in recall.notes and "95% interval" in recall.notes
    failures = next(e for e in entries if e.task_id == "model_transfer-approved_memory_failure")
    assert failures.value == 0


def test_results_push_dry_run_plans_one_added_file(hub, snapshot, tables, key, tmp_path, hf_home):
    model = tmp_path / "model"
    model.mkdir()
    (model / "README.md").write_text("a model\n")
    hub.add_repo("me/tiny-model", model, repo_type="model")
    scores = tmp_path / "scores.json"
    scores.write_text(json_text(transfer.score_predictions(key, *rule_rows(tables, "source_label"))))
    out = tmp_path / "out"
    out.mkdir()
    result = run_cli(
        "results",
        "export",
        str(scores),
        "--repo-id",
        "me/tiny-model",
        "--output",
        str(out),
        "--push",
        "--dry-run",
        "--revision",
        "main",
        env=cli_env(HF_HOME=str(hf_home), HF_TOKEN=None),
    )
    assert result.returncode == 0, result.stderr
    assert "1 to add, 0 to replace, 0 to delete, 0 unchanged" in result.stdout
    assert "add     .eval_results/rlvrambench.yaml" in result.stdout
    assert "dry run: nothing was changed" in result.stdout


def test_results_export_refuses_a_file_that_is_not_a_transfer_score_file(snapshot, tmp_path):
    bad = tmp_path / "replay.json"
    bad.write_text(json.dumps({"summary": []}))
    result = invoke("results", "export", str(bad), "--repo-id", "me/model", "--output", str(tmp_path))
    assert result.returncode == 2 and "is not a transfer score file" in result.stderr
    assert not (tmp_path / ".eval_results").exists()


# ---------------------------------------------------------------------------------------------------- leaderboard


def test_leaderboard_of_the_reference_rules_and_a_users_predictions(snapshot, tables, key, tmp_path):
    from rlvrambench_hf.release.evalresults import eval_entries, eval_results_text

    board = tmp_path / "board"
    (board / ".eval_results").mkdir(parents=True)
    mine = transfer.score_predictions(key, *rule_rows(tables, "source_label"), intervals=True)
    (board / "mine.json").write_text(json_text(mine))
    export = eval_entries(mine, dataset_id="kobzaond/RLVRAMBench", dataset_revision=DEFAULT_REVISION, version="x")
    (board / ".eval_results" / "hub.yaml").write_text(eval_results_text(export.entries))
    result = invoke(
        "--source", str(snapshot), "leaderboard", str(board), "--references", "--output", str(tmp_path / "board.csv")
    )
    assert result.returncode == 0, result.stderr
    lines = [line.split() for line in result.stdout.splitlines() if line.startswith("gpu_count_transfer")]
    assert [row[2] for row in lines][0] == "always_approve"
    assert {row[2]: row[1] for row in lines} == {
        "always_approve": "1",
        "mine": "2",
        "board": "2",
        "source_label": "2",
        "always_reject": "3",
    }
    mine_row = next(row for row in lines if row[2] == "mine")
    assert mine_row[3:4] == ["0.7692"] and mine_row[-2:] == ["2", "4"]
    assert any(line.startswith("horizon_transfer    no interval: not grouped") for line in result.stdout.splitlines())
    csv_text = (tmp_path / "board.csv").read_text()
    assert csv_text.splitlines()[0] == (
        "track,group,method,within_margin_recall,recall_low,recall_high,approved_memory_failure,approved_above_margin"
    )
    result = invoke("--source", str(snapshot), "leaderboard", str(tmp_path / "nothing.json"))
    assert result.returncode == 2 and "does not exist" in result.stderr


# ----------------------------------------------------------------------------------------- scores in a training loop


def numbers(value: Any) -> list:
    """Every non-null number of a nested score file (booleans are not numbers)."""
    if isinstance(value, dict):
        return [n for v in value.values() for n in numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in numbers(v)]
    return [value] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def nulls(value: Any) -> int:
    if isinstance(value, dict):
        return sum(nulls(v) for v in value.values())
    if isinstance(value, list):
        return sum(nulls(v) for v in value)
    return value is None


@pytest.mark.parametrize("rule", ["source_label", "always_reject"])
def test_flat_view_has_every_non_null_number_and_nothing_else(tables, key, rule):
    scores = transfer.score_predictions(key, *rule_rows(tables, rule))
    flat = flat_scores(scores)
    assert sorted(flat.values()) == sorted(numbers(scores))
    assert flat.nulls == nulls(scores) and all(v is not None for v in flat.values())
    assert flat["overall/within_margin_recall"] == scores["overall"]["within_margin_recall"]
    assert flat["gpu_count_transfer/approved_memory_failure"] == (2 if rule == "source_label" else 0)
    task = next(iter(scores["per_task"]))
    assert flat[f"{task}/correct_three_state"] == scores["per_task"][task]["correct_three_state"]
    if rule == "always_reject":  # no approvals: precision is null, left out and counted, never 0
        assert "overall/within_margin_approval_precision" not in flat
        assert "overall/within_margin_approval_precision" in flat.left_out


def test_metric_compute_takes_the_intervals_and_flat_options(snapshot, tables, monkeypatch):
    import evaluate

    import rlvrambench_hf

    monkeypatch.setenv("RLVRAMBENCH_SOURCE", str(snapshot))
    ids, states = (c.to_pylist() for c in rule_rows(tables, "source_label"))
    metric = evaluate.load(rlvrambench_hf.metric_path())
    flat = metric.compute(predictions=states, query_ids=ids, flat=True)
    assert flat["overall/correct_three_state"] == 352 and "overall/intervals/metrics/approved/low" not in flat
    nested = metric.compute(predictions=states, query_ids=ids, intervals={"resamples": 200})
    assert nested["per_track"]["gpu_count_transfer"]["intervals"]["units"] == 36
    with pytest.raises(InputError, match="flat must be True or False"):
        metric.compute(predictions=states, query_ids=ids, flat="yes")


def test_trainer_factory_scores_eval_predictions_of_logits_and_indices(snapshot, tables):
    import numpy as np
    from transformers import EvalPrediction

    from rlvrambench_hf.data.schema.pins import OUTCOME_LABELS

    ids, states = (c.to_pylist() for c in rule_rows(tables, "source_label"))
    order = np.random.default_rng(0).permutation(len(ids))  # evaluation rows in any order
    ids, states = [ids[i] for i in order], [states[i] for i in order]
    codes = np.array([OUTCOME_LABELS.index(s) for s in states])
    logits = np.random.default_rng(1).normal(size=(len(ids), 3)).astype(np.float32)
    logits[np.arange(len(ids)), codes] += 10.0  # argmax: the source_label baseline
    compute_metrics = trainer_metrics(ids, source=snapshot, view="full")  # every number; the default: the headline
    metrics = compute_metrics(EvalPrediction(predictions=logits, label_ids=codes))
    assert metrics["overall/correct_three_state"] == 352
    assert metrics["gpu_count_transfer/approved_memory_failure"] == 2
    assert compute_metrics(EvalPrediction(predictions=codes, label_ids=codes)) == metrics
    assert compute_metrics((logits, codes)) == metrics
    with pytest.raises(InputError, match=r"predictions of shape \(400, 2\)"):
        compute_metrics(EvalPrediction(predictions=logits[:, :2], label_ids=codes))
    with pytest.raises(InputError, match="399 prediction rows but 400 query ids"):
        compute_metrics(EvalPrediction(predictions=logits[:-1], label_ids=codes[:-1]))
    with pytest.raises(InputError, match="1 missing query id"):
        trainer_metrics(ids[:-1], source=snapshot)


def test_score_study_takes_the_intervals_keyword(snapshot):
    scores = score_study("expanded_host", snapshot, intervals=True)
    assert scores["interval_settings"]["unit"] == "planned_configuration"
    assert scores["approvals"]["logistic"]["intervals"]["units"] == 6


def test_the_package_does_not_import_transformers():
    import subprocess
    import sys

    code = "import sys, rlvrambench_hf; rlvrambench_hf.trainer_metrics; print('transformers' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_leaderboard_reads_the_eval_results_of_a_hub_repository(hub, tables, key, tmp_path):
    from rlvrambench_hf.release.evalresults import eval_entries, eval_results_text

    repo = tmp_path / "repo"
    (repo / ".eval_results").mkdir(parents=True)
    (repo / "README.md").write_text("a model\n")
    scores = transfer.score_predictions(key, *rule_rows(tables, "always_approve"), intervals={"resamples": 200})
    export = eval_entries(scores, dataset_id="kobzaond/RLVRAMBench", dataset_revision=DEFAULT_REVISION, version="x")
    (repo / ".eval_results" / "rlvrambench.yaml").write_text(eval_results_text(export.entries))
    hub.add_repo("me/scored-model", repo, repo_type="model")
    result = invoke("leaderboard", "hub:me/scored-model", "--output", str(tmp_path / "board.html"))
    assert result.returncode == 0, result.stderr
    assert re.search(r"\ngpu_count_transfer\s+1\s+me/scored-model\s+1\s+1\s+1\s+4\s+6\n", result.stdout)
    page = (tmp_path / "board.html").read_text()
    assert "<td>me/scored-model</td>" in page and "<title>RLVRAMBench leaderboard</title>" in page
    result = invoke("leaderboard", "hub:me/no-such-model")
    assert result.returncode == 2 and "not found" in result.stderr and len(result.stderr.splitlines()) == 1
