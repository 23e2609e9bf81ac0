"""The estimator comparison on the real release: features, folds, fold scores, the final fit, the 36 prospective
predictions against the release's sealed predictions.json, users' estimators under the same folds, the CLI and
the evaluate config."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from rlvrambench_hf import estimation
from rlvrambench_hf.errors import InputError
from rlvrambench_hf.estimation.features import apply_amendment
from rlvrambench_hf.estimation.folds import split
from rlvrambench_hf.estimation.references import BUILT_IN, METHODS, MODEL
from rlvrambench_hf.estimation.user import OUTCOME_COLUMNS, checked_predictions

from conftest import invoke
from hubserver import REPO_ROOT

# ESTIMATION.md §6: correct / approved (W, A, F) per fold and method, as published
PUBLISHED_FOLDS = {
    ("granite33", "donor_copy"): (26, 22, 22, 0, 0),
    ("granite33", "component_regression"): (22, 30, 22, 4, 4),
    ("granite33", "logistic"): (26, 25, 22, 3, 0),
    ("phi4", "donor_copy"): (24, 22, 16, 6, 0),
    ("phi4", "component_regression"): (27, 19, 16, 3, 0),
    ("phi4", "logistic"): (24, 18, 16, 2, 0),
    ("qwen25", "donor_copy"): (26, 22, 22, 0, 0),
    ("qwen25", "component_regression"): (30, 22, 22, 0, 0),
    ("qwen25", "logistic"): (21, 16, 16, 0, 0),
}
TRUTH = {"granite33": (22, 4, 4), "phi4": (16, 6, 8), "qwen25": (22, 0, 8)}
POOL_COSTS = {"granite33": (60, 180, 185), "phi4": (60, 180, 218), "qwen25": (60, 180, 213)}
DONOR_COSTS = {"granite33": (30, 90, 95), "phi4": (30, 90, 95), "qwen25": (30, 90, 123)}
# sha256 of [(fold, configuration id, method, predicted label, donor id)] of all 270 fold prediction rows
FOLD_LABELS_SHA256 = "845d2aef06830cd7917702dddaa7f205e3b8245c78478ab860aefeaff957d2df"
# peak statistics (coverage, MAE, mean signed error, worst underestimate) of our recomputation, MiB
PEAK_STATS = {
    ("granite33", "donor_copy"): (22, 887.5454545454545, 774.8181818181819, 1240.0),
    ("granite33", "component_regression"): (26, 2631.1435929482172, -2145.8794031110324, 5737.519324087072),
    ("phi4", "donor_copy"): (22, 3064.818181818182, -3064.818181818182, 4516.0),
    ("phi4", "component_regression"): (22, 2331.2761415179675, -2282.428944781741, 7620.74913807241),
    ("qwen25", "donor_copy"): (22, 887.5454545454545, -774.8181818181819, 2510.0),
    ("qwen25", "component_regression"): (22, 1382.842803849714, 960.9132164405194, 1337.3477217578838),
}
METRIC = str(REPO_ROOT / "metrics" / "rlvrambench")


@pytest.fixture(scope="module")
def inputs(snapshot: Path) -> estimation.api.EstimationInputs:
    return estimation.load_inputs(snapshot)


@pytest.fixture(scope="module")
def report(snapshot: Path) -> dict:
    return estimation.run_retrospective(snapshot)


def test_worked_example_features_and_pool(inputs) -> None:
    pool = inputs.pool
    assert len(pool.rows) == 90 and pool.ids == sorted(pool.ids)
    states = [r["observed_state"] for r in pool.rows]
    assert (states.count("within_margin"), states.count("above_margin"), states.count("memory_failure")) == (60, 10, 20)
    i = pool.ids.index("cfg-2afbe250af9cd3e1")
    assert pool.features[i].tolist() == [
        2.4645233154296875,
        0.2099609375,
        28.0,
        4.929046630859375,
        0.37506103515625,
        2.5625,
        1.500213623046875,
        2.4645233154296875,
    ]
    assert list(inputs.protocol["features"]) == list(estimation.FEATURE_NAMES)


def test_the_amendment_replaces_the_eighth_feature(snapshot: Path) -> None:
    protocol = json.loads((snapshot / "benchmark/estimation/protocol.json").read_text())
    amendment = json.loads((snapshot / "benchmark/estimation/amendment-01.json").read_text())
    assert protocol["features"][-1] == "actor_parameter_offload"
    assert apply_amendment(protocol, amendment)["features"][-1] == "resident_actor_shards_gib"
    with pytest.raises(InputError, match="updates"):
        apply_amendment(protocol, {})


def test_folds_hold_out_whole_families(inputs) -> None:
    for family, (w, a, f) in TRUTH.items():
        training, test = split(inputs.pool, family)
        assert len(training.rows) == 60 and len(test.rows) == 30
        assert {r["model_family_coarse"] for r in test.rows} == {family}
        assert family not in {r["model_family_coarse"] for r in training.rows}
        states = [r["observed_state"] for r in test.rows]
        assert (states.count("within_margin"), states.count("above_margin"), states.count("memory_failure")) == (
            w,
            a,
            f,
        )


def test_fold_scores_reproduce_the_published_table(report: dict) -> None:
    for (fold, method), (correct, approved, w, a, f) in PUBLISHED_FOLDS.items():
        s = report["folds"][fold]["scores"][method]
        assert (
            s["correct_three_state"],
            s["approved"],
            s["approved_within_margin"],
            s["approved_above_margin"],
            s["approved_memory_failure"],
        ) == (correct, approved, w, a, f), (fold, method)
        assert s["queries"] == s["distinct_target_configurations"] == 30
        assert s["startup_guard_changed_states"] == 0
        assert (s["target_within_margin"], s["target_above_margin"], s["target_memory_failure"]) == TRUTH[fold]
    # the card's headline facts
    granite, qwen = report["folds"]["granite33"]["scores"], report["folds"]["qwen25"]["scores"]
    assert granite["component_regression"]["approved_memory_failure"] == 4
    assert qwen["component_regression"]["correct_three_state"] == 30
    assert qwen["logistic"]["rejected_within_margin"] == 6
    assert qwen["logistic"]["approval_rate_on_above_margin_targets"] is None  # no above-margin Qwen target


def test_fold_labels_and_peak_statistics_are_stable(report: dict) -> None:
    rows = [
        (fold, r["configuration_id"], r["method"], r["predicted_state"], r["donor_configuration_id"])
        for fold, content in report["folds"].items()
        for r in content["predictions"]
        if r["method"] in estimation.METHODS  # the memory model's rows follow the references'
    ]
    assert len(rows) == 270
    assert hashlib.sha256(json.dumps(rows).encode()).hexdigest() == FOLD_LABELS_SHA256
    for (fold, method), expected in PEAK_STATS.items():
        s = report["folds"][fold]["scores"][method]
        found = (
            s["completed_peak_prediction_coverage"],
            s["completed_peak_mae_mib"],
            s["completed_peak_mean_signed_error_mib"],
            s["completed_peak_worst_underestimate_mib"],
        )
        assert found[0] == expected[0] and found[1:] == pytest.approx(expected[1:], abs=1e-6), (fold, method)
    for fold in report["folds"].values():
        logistic = fold["scores"]["logistic"]
        assert logistic["completed_peak_prediction_coverage"] == 0 and logistic["completed_peak_mae_mib"] is None


def test_source_costs_and_fold_model_structure(report: dict, inputs) -> None:
    for fold, content in report["folds"].items():
        cost = content["source_cost"]
        for key, expected in (("full_permitted_fitting_pool", POOL_COSTS), ("distinct_selected_donors", DONOR_COSTS)):
            c = cost[key]
            assert (c["configurations"], c["eligible_source_processes"], c["recorded_source_attempts"]) == expected[
                fold
            ]
        assert "not demonstrated GPU-time savings" in cost["interpretation"]
        model = content["model"]
        assert model["training_configuration_ids"] == cost["full_permitted_fitting_pool"]["configuration_ids"]
        assert len(model["regression_training_configuration_ids"]) == {"granite33": 44, "phi4": 48, "qwen25": 48}[fold]
        assert model["component_divisors"][1] == 1.0 and len(model["component_coefficients_gib"]) == 9
        assert min(model["component_coefficients_gib"]) >= 0  # the intercept is constrained too
        assert model["classifier_classes"] == ["above_margin", "memory_failure", "within_margin"]
        # a symmetric multinomial fit from zero: intercepts and each feature's weights sum to 0
        weights, intercepts = np.array(model["classifier_coefficients"]), np.array(model["classifier_intercepts"])
        assert weights.shape == (3, 8) and np.allclose(weights.sum(axis=0), 0, atol=1e-8)
        assert abs(intercepts.sum()) < 1e-8
        donors = [r for r in content["predictions"] if r["method"] == "donor_copy"]
        assert all(r["donor_gpu_count_matches"] for r in donors)
    model_of = {r["configuration_id"]: r["model_id"] for r in inputs.pool.rows}
    donor_models = {
        fold: {model_of[r["donor_configuration_id"]] for r in c["predictions"] if r["method"] == "donor_copy"}
        for fold, c in report["folds"].items()
    }
    assert donor_models == {
        "granite33": {"Qwen/Qwen2.5-3B-Instruct"},
        "phi4": {"Qwen/Qwen2.5-3B-Instruct"},
        "qwen25": {"ibm-granite/granite-3.3-2b-instruct"},
    }


def test_classifier_parameters_are_a_stationary_point(report: dict, inputs) -> None:
    """Parameters are compared with a tolerance only (§8): the balanced, L2-penalised multinomial loss has a
    vanishing gradient at the fitted parameters of every fold."""
    for fold, content in report["folds"].items():
        training, _ = split(inputs.pool, fold)
        model = content["model"]
        z = (training.features - np.array(model["scaler_mean"])) / np.array(model["scaler_scale"])
        weights, intercepts = np.array(model["classifier_coefficients"]), np.array(model["classifier_intercepts"])
        classes = model["classifier_classes"]
        y = np.array([[r["observed_state"] == c for c in classes] for r in training.rows], dtype=float)
        omega = (len(y) / (3 * y.sum(axis=0))) @ y.T
        logits = z @ weights.T + intercepts
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        residual = (p - y) * omega[:, None]
        gradient = np.concatenate([(residual.T @ z + weights).ravel(), residual.sum(axis=0)])
        assert np.max(np.abs(gradient)) / len(y) < 1e-3, fold


def test_prospective_predictions_equal_the_release(snapshot: Path) -> None:
    result = estimation.run_prospective(snapshot)
    published = json.loads((snapshot / "benchmark/estimation/predictions.json").read_text())
    rows = result["predictions"]
    assert len(rows) == len(published) == 36
    for mine, theirs in zip(rows, published):
        assert set(mine) == set(theirs)
        for key in theirs:
            if key == "predicted_peak_mib" and theirs[key] is not None:
                assert abs(mine[key] - theirs[key]) <= 1e-6, (theirs["configuration_id"], theirs["method"])
            else:
                assert mine[key] == theirs[key], (theirs["configuration_id"], theirs["method"], key)
    check = result["published_check"]
    assert check["matches"] and check["differences"] == [] and check["max_peak_difference_mib"] <= 1e-6
    fitted = result["fitted_model"]
    assert (
        len(fitted["training_configuration_ids"]) == 90 and len(fitted["regression_training_configuration_ids"]) == 70
    )
    assert fitted["component_training_residual_norm_gib"] == pytest.approx(13.98249734490586, abs=1e-9)
    cost = fitted["source_cost"]
    assert [cost["full_permitted_fitting_pool"][k] for k in ("configurations", "eligible_source_processes")] == [
        90,
        270,
    ]
    assert cost["full_permitted_fitting_pool"]["recorded_source_attempts"] == 308
    donors = cost["distinct_selected_donors"]
    assert (donors["configurations"], donors["eligible_source_processes"], donors["recorded_source_attempts"]) == (
        10,
        30,
        34,
    )
    code_4gpu = [r for r in rows if r["method"] == "donor_copy" and "code_heavy_tail" in r["configuration_id"]]
    assert [r["donor_gpu_count_matches"] for r in code_4gpu if r["configuration_id"].endswith("4gpu")] == [False] * 2


def test_check_against_published_notices_a_changed_label(snapshot: Path) -> None:
    published = json.loads((snapshot / "benchmark/estimation/predictions.json").read_text())
    changed = [dict(r) for r in published]
    changed[4] = {
        **changed[4],
        "predicted_state": "within_margin" if changed[4]["predicted_state"] != "within_margin" else "memory_failure",
    }
    changed[0] = {**changed[0], "predicted_peak_mib": changed[0]["predicted_peak_mib"] + 0.01}
    check = estimation.check_against_published(changed, published)
    assert not check["matches"] and len(check["differences"]) == 1 and check["max_peak_difference_mib"] > 1e-3


class Spy:
    """Records what the folds give it; predicts within_margin for every target."""

    def __init__(self) -> None:
        self.fits: list = []
        self.predicts: list = []

    def fit(self, training):
        self.fits.append(training.copy())

    def predict(self, targets):
        self.predicts.append(targets.copy())
        return {"predicted_state": ["within_margin"] * len(targets), "predicted_peak_mib": [30000.0] * len(targets)}


def test_a_spy_estimator_sees_only_its_fold(snapshot: Path, inputs) -> None:
    spy = Spy()
    report = estimation.run_retrospective(snapshot, estimators={"spy": spy})
    assert len(spy.fits) == len(spy.predicts) == 3
    for fold, fit, predict in zip(("granite33", "phi4", "qwen25"), spy.fits, spy.predicts):
        training, test = split(inputs.pool, fold)
        assert fit["configuration_id"].tolist() == training.ids
        assert "observed_state" in fit.columns and "max_completed_run_peak_mib" in fit.columns
        assert predict["configuration_id"].tolist() == test.ids
        assert not set(predict.columns) & set(OUTCOME_COLUMNS)
        leaky = [c for c in predict.columns if any(w in c for w in ("state", "peak", "label", "process", "attempt"))]
        assert leaky == ["peak_measurement"]  # a setting: the measurement convention, the same for every row
        assert predict["peak_measurement"].nunique() == 1
        assert set(estimation.FEATURE_NAMES) <= set(predict.columns)
        assert np.array_equal(predict[list(estimation.FEATURE_NAMES)].to_numpy(), test.features)
        scores = report["folds"][fold]["scores"]
        assert list(scores) == [*BUILT_IN, "spy"]
        w, a, f = TRUTH[fold]
        assert (scores["spy"]["approved"], scores["spy"]["approved_memory_failure"]) == (30, f)
        assert scores["spy"]["completed_peak_prediction_coverage"] == w + a
    reference_only = estimation.run_retrospective(snapshot)
    for fold in reference_only["folds"]:
        for method in METHODS:
            assert report["folds"][fold]["scores"][method] == reference_only["folds"][fold]["scores"][method]


def test_user_predictions_are_checked() -> None:
    with pytest.raises(InputError, match="estimator e: predict returned 2 labels for 3 targets"):
        checked_predictions(["within_margin"] * 2, 3, "e")
    with pytest.raises(InputError, match="unknown label"):
        checked_predictions(["within_margin", "fits", "memory_failure"], 3, "e")
    with pytest.raises(InputError, match="finite non-negative"):
        checked_predictions({"predicted_state": ["within_margin"], "predicted_peak_mib": [-1.0]}, 1, "e")
    assert checked_predictions({"predicted_state": ["above_margin"], "predicted_peak_mib": [float("nan")]}, 1, "e") == {
        "predicted_state": ["above_margin"],
        "predicted_peak_mib": [None],
    }


def test_cli_retrospective_and_prospective(snapshot: Path, tmp_path: Path, report: dict) -> None:
    output = tmp_path / "retrospective.json"
    result = invoke("--source", str(snapshot), "estimate", "retrospective", "--output", str(output))
    assert result.returncode == 0, result.stderr
    written = json.loads(output.read_text())
    assert written["folds"] == json.loads(json.dumps(report["folds"]))
    line = next(x for x in result.stdout.splitlines() if x.startswith("granite33  component_regression"))
    assert line.split()[2:7] == ["22/30", "30", "22", "4", "4"]
    assert "qwen25: pool 60 configurations / 180 processes / 213 attempts; donors 30 / 90 / 123" in result.stdout

    predictions = tmp_path / "predictions.json"
    result = invoke("--source", str(snapshot), "estimate", "prospective", "--output", str(predictions))
    assert result.returncode == 0, result.stderr
    assert "equal to the release's predictions.json: 36 rows, labels and donors identical" in result.stdout
    text = predictions.read_text()
    assert text.endswith("}\n]\n") and json.loads(text)[0]["configuration_id"] == "est-qwen25-7b-gsm8k-c2-2gpu"

    result = invoke("--source", str(snapshot), "estimate", "fit")
    assert result.returncode == 0 and "fitted on 90 configurations (270 processes, 308 attempts)" in result.stdout


def test_cli_compare_scores_a_user_estimator_beside_the_references(snapshot: Path, tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text(
        "class AlwaysReject:\n"
        "    def fit(self, training):\n"
        "        self.n = len(training)\n"
        "    def predict(self, targets):\n"
        "        return ['memory_failure'] * len(targets)\n"
    )
    output = tmp_path / "compare.json"
    result = invoke(
        "--source",
        str(snapshot),
        "estimate",
        "compare",
        "--estimator",
        "mine:AlwaysReject",
        "--output",
        str(output),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    scores = json.loads(output.read_text())["folds"]["phi4"]["scores"]
    assert list(scores) == [*BUILT_IN, "AlwaysReject"]
    assert scores["AlwaysReject"]["correct_three_state"] == 8 and scores["AlwaysReject"]["approved"] == 0
    assert any(x.startswith("phi4       AlwaysReject") for x in result.stdout.splitlines())


def test_metric_estimation_config_scores_fold_predictions(snapshot: Path, report: dict, monkeypatch) -> None:
    evaluate = pytest.importorskip("evaluate")
    monkeypatch.setenv("RLVRAMBENCH_SOURCE", str(snapshot))
    rows = [r for c in report["folds"].values() for r in c["predictions"] if r["method"] == "component_regression"]
    metric = evaluate.load(METRIC, "estimation")
    scores = metric.compute(
        predictions=[r["predicted_state"] for r in rows],
        configuration_ids=[r["configuration_id"] for r in rows],
        predicted_peaks_mib={r["configuration_id"]: r["predicted_peak_mib"] for r in rows},
    )
    for fold, content in report["folds"].items():
        assert scores["folds"][fold] == content["scores"]["component_regression"]
    qwen = [r for r in report["folds"]["qwen25"]["predictions"] if r["method"] == "logistic"]
    for start in range(0, 30, 10):
        metric.add_batch(
            predictions=[r["predicted_state"] for r in qwen[start : start + 10]],
            configuration_ids=[r["configuration_id"] for r in qwen[start : start + 10]],
        )
    assert metric.compute(fold="qwen25") == {"folds": {"qwen25": report["folds"]["qwen25"]["scores"]["logistic"]}}
    with pytest.raises(InputError, match="fold qwen25 exactly once: 0 missing, 1 unexpected"):
        estimation.score_fold_predictions(
            [r["configuration_id"] for r in qwen] + ["cfg-nope"], ["within_margin"] * 31, fold="qwen25"
        )


def test_the_new_registry_entries_through_the_data_commands(snapshot: Path, tmp_path: Path) -> None:
    result = invoke("--source", str(snapshot), "configs", "--all")
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split()[1:5] for line in result.stdout.splitlines()[2:] if line.strip()}
    assert rows["estimation_targets"] == ["planned", "12", "43", "yes"]
    assert rows["model_metadata"] == ["models", "4", "21", "yes"]
    output = tmp_path / "models.jsonl"
    result = invoke("--source", str(snapshot), "export", "model_metadata", "--format", "jsonl", "--output", str(output))
    assert result.returncode == 0, result.stderr
    exported = {r["model_id"]: r for r in map(json.loads, output.read_text().splitlines())}
    published = json.loads((snapshot / "benchmark/estimation/model_metadata.json").read_text())
    for model, record in published.items():
        assert exported[model]["all_linear_layer_adapter_elements"] == record["all_linear_layer_adapter_elements"]
        assert exported[model]["tie_word_embeddings"] is record["tie_word_embeddings"]
        assert exported[model]["shard_header_sha256"] == [f"{k}={v}" for k, v in record["shard_header_sha256"].items()]


def test_per_fold_comparison_figure(report: dict) -> None:
    pytest.importorskip("matplotlib")
    from rlvrambench_hf.reporting.canvas import figure_png
    from rlvrambench_hf.reporting.comparison import estimation_figure
    from rlvrambench_hf.reporting.figuredata import fold_approvals

    every = fold_approvals(report)
    bars = [b for b in every if b.method in estimation.METHODS]
    assert [(b.fold, b.method) for b in bars] == list(PUBLISHED_FOLDS)
    assert [b.fold for b in every if b.method == MODEL] == ["granite33", "phi4", "qwen25"]
    for bar in bars:
        correct, approved, w, a, f = PUBLISHED_FOLDS[(bar.fold, bar.method)]
        assert (bar.approved_within_margin, bar.approved_above_margin, bar.approved_memory_failure) == (w, a, f)
        assert bar.correct == correct and bar.queries == 30
    figure = estimation_figure(every)
    drawn = sorted(round(p.get_height()) for p in figure.axes[0].patches if p.get_height() > 0)
    model = [
        (b.approved_within_margin, b.approved_above_margin, b.approved_memory_failure)
        for b in every
        if b.method == MODEL
    ]
    published = [(w, a, f) for (_, _, w, a, f) in PUBLISHED_FOLDS.values()]
    expected = sorted(v for counts in (*published, *model) for v in counts if v)
    assert drawn == expected  # one bar segment per non-zero approval count
    assert figure_png(figure)[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(InputError, match="malformed"):
        fold_approvals({"folds": {"x": {"scores": {"m": {}}}}})


def test_inputs_sealed_by_the_protocol_are_checked(snapshot: Path, tmp_path: Path) -> None:
    """targets.csv and model_metadata.json are in no manifest; protocol.json seals their SHA-256."""
    import shutil

    from rlvrambench_hf.errors import IntegrityError

    release = tmp_path / "release"
    shutil.copytree(snapshot, release)
    targets = release / "benchmark/estimation/targets.csv"
    targets.chmod(0o644)
    targets.write_text(targets.read_text().replace(",0.6,", ",0.5,", 1))
    sealed = "seal benchmark/estimation/protocol.json: benchmark/estimation/targets.csv has SHA-256 "
    with pytest.raises(IntegrityError, match=sealed):
        estimation.load_inputs(release)
    result = invoke("--source", str(release), "estimate", "prospective", "--output", str(tmp_path / "p.json"))
    assert result.returncode == 2 and sealed in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "p.json").exists()
