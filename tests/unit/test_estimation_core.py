"""The estimator comparison: the eight features on a worked example, the three references on hand-made data, and
folds, final fit and prospective predictions on the mini release's 30-configuration pool."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from rlvrambench_hf.errors import InputError, IntegrityError, NumericalError
from rlvrambench_hf.estimation.api import (
    AMENDMENT,
    PROTOCOL,
    load_inputs,
    run_prospective,
    run_retrospective,
    score_fold_predictions,
)
from rlvrambench_hf.estimation.donor import choose_donor
from rlvrambench_hf.estimation.features import (
    FEATURE_NAMES,
    apply_amendment,
    coarse_family,
    feature_matrix,
    feature_vector,
    startup_diagnostic,
)
from rlvrambench_hf.estimation.folds import check_against_published, fitting_pool, fold_names, split
from rlvrambench_hf.estimation.logistic import CLASSES, LogisticClassifier, fit_logistic
from rlvrambench_hf.estimation.references import BUILT_IN, METHODS, Examples, FittedReferences
from rlvrambench_hf.estimation.regression import ComponentRegression, fit_regression, regression_states
from rlvrambench_hf.estimation.user import checked_predictions

import miniworld as world
from minirelease import seal

pytestmark = pytest.mark.unit

W, A, F = world.W, world.A, world.F
TARGETS = "benchmark/estimation/targets.csv"
#: P + R = 2^30 elements, so that every feature of the worked example is a short binary fraction.
METADATA = {
    "floating_checkpoint_elements": 2**30 - 2**27,
    "all_linear_layer_adapter_elements": 2**27,
    "largest_transformer_layer_elements": 2**28,
    "non_transformer_layer_elements": 2**27,
    "largest_weight_tensor_elements": 2**26,
    "num_hidden_layers": 3,
    "hidden_size": 1024,
    "vocab_size": 2**15,
}
SETTINGS = {
    "configuration_id": "example",
    "gpu_count": 2,
    "rollout_tp_size": 1,
    "actor_micro_batch": 4,
    "rollout_logprob_micro_batch": 8,
    "ref_logprob_micro_batch": 8,
    "vllm_gpu_memory_utilization": 0.5,
    "parameter_offload": False,
    "optimizer_offload": False,
    "max_prompt_length": 512,
    "max_response_length": 512,
    "max_model_len": 1024,
    "rollout_n": 4,
    "train_batch_size": 16,
    "device_capacity_mib": 40960,
    "margin_limit_mib": 38912,
}


def test_the_eight_features_of_a_worked_example():
    # actor 4*2^30/2, adapter optimizer 8*2^27/2, budget 0.5*40 GiB, replica 2*2^30, unit 4*2^28,
    # checkpoint 2*(4*1024 tokens)*(3+1)*1024, vocabulary 2*(8*1024 tokens)*2^15, resident = actor (all in GiB)
    assert feature_vector(SETTINGS, METADATA) == [2.0, 0.5, 20.0, 2.0, 1.0, 0.03125, 0.5, 2.0]
    offloaded = feature_vector({**SETTINGS, "optimizer_offload": True, "parameter_offload": True}, METADATA)
    assert offloaded[1] == 0.0 and offloaded[7] == 0.0 and offloaded[0] == 2.0
    four = feature_vector({**SETTINGS, "gpu_count": 4}, METADATA)
    assert four[0] == 1.0 and four[5] == 0.03125  # per-rank sequences 16: the micro-batch still fits


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rollout_tp_size": 3}, "gpu_count divisible by it"),
        ({"rollout_tp_size": 0}, "rollout_tp_size > 0"),
        ({"vllm_gpu_memory_utilization": 1.0}, "between 0 and 1"),
        ({"train_batch_size": 15, "rollout_n": 1}, "train_batch_size\\*rollout_n divisible by GPUs"),
        ({"max_model_len": 0}, "positive sequence length"),
        ({"actor_micro_batch": 4.0}, "actor_micro_batch must be an integer"),
        ({"gpu_count": True}, "gpu_count must be an integer"),
    ],
)
def test_settings_that_give_no_feature_are_one_line(change, message):
    with pytest.raises(InputError, match=f"example: .*{message}"):
        feature_vector({**SETTINGS, **change}, METADATA)


def test_feature_matrix_needs_every_model_and_startup_check():
    with pytest.raises(InputError, match="no model metadata for 'm/x'"):
        feature_matrix([{**SETTINGS, "model_id": "m/x"}], {})
    x = feature_vector(SETTINGS, METADATA)
    check = startup_diagnostic(SETTINGS, x)
    assert check["applicable"] and check["budget_plus_actor_mib"] == 22.0 * 1024
    assert check["predicted_startup_budget_failure"] is False
    high = {**SETTINGS, "vllm_gpu_memory_utilization": 0.98}
    assert startup_diagnostic(high, feature_vector(high, METADATA))["predicted_startup_budget_failure"] is True
    offloaded = startup_diagnostic({**SETTINGS, "parameter_offload": True}, x)
    assert offloaded["applicable"] is False and offloaded["budget_plus_actor_mib"] is None


def test_the_amendment_replaces_matching_protocol_keys():
    protocol = {"features": ["a"], "other": 1}
    assert apply_amendment(protocol, {"updates": {"features": ["b"]}}) == {"features": ["b"], "other": 1}
    with pytest.raises(InputError, match="amendment has no 'updates' object"):
        apply_amendment(protocol, {})


def _row(cid: str, model: str, gpus: int, state: str = W, peak: float | None = 30000.0, level: str = "c1") -> dict:
    return {
        "configuration_id": cid,
        "model_id": model,
        "workload_id": "gsm8k",
        "configuration_level": level,
        "gpu_count": gpus,
        "observed_state": state,
        "max_completed_run_peak_mib": peak,
        "completed": state != F,
    }


QWEN3, QWEN7, PHI, GRANITE = tuple(world.MODELS)[1], world.TARGET_MODEL, tuple(world.MODELS)[2], tuple(world.MODELS)[0]
PARAMETERS = {m: spec[3] for m, spec in world.MODELS.items()}


def test_the_donor_key_gpu_count_then_family_then_size_then_id():
    target = _row("t", QWEN7, 2)
    rows = [_row("g4", GRANITE, 4), _row("q2", QWEN3, 2), _row("p2", PHI, 2), _row("q2-other", QWEN3, 2, level="c2")]
    assert choose_donor(target, rows, PARAMETERS).configuration_id == "q2"  # same GPUs and family
    assert choose_donor(target, [rows[0], rows[2]], PARAMETERS).configuration_id == "p2"  # GPUs before family
    far = choose_donor(target, [rows[0]], PARAMETERS)
    assert far.configuration_id == "g4" and far.gpu_count_matches is False
    # both of another family: the smaller |ln(P_candidate / P_target)| wins; Phi-4 (3.8e9) is nearer 7.6e9
    assert choose_donor(target, [_row("a", GRANITE, 2), _row("b", PHI, 2)], PARAMETERS).configuration_id == "b"
    assert choose_donor(target, [_row("b", PHI, 2), _row("a", PHI, 2)], PARAMETERS).configuration_id == "a"
    assert choose_donor(target, [rows[3]], PARAMETERS) is None  # no row with the same workload and level
    failed = choose_donor(target, [_row("f", QWEN3, 2, state=F, peak=None)], PARAMETERS)
    assert (failed.state, failed.peak_mib) == (F, None)
    with pytest.raises(InputError, match="no model metadata for someone/else"):
        choose_donor(_row("t", "someone/else", 2), rows, PARAMETERS)
    assert coarse_family("someone/else") is None and coarse_family(QWEN7) == coarse_family(QWEN3) == "qwen25"


def test_nnls_recovers_a_known_non_negative_model():
    rng = np.random.default_rng(7)
    features = rng.uniform(0.5, 30.0, size=(24, 8))
    truth = np.array([3.0, 0.0, 1.5, 0.0, 2.0, 0.25, 0.0, 4.0, 1.0])  # intercept first, in GiB per unit of X/d
    divisors = np.maximum(1.0, features.max(axis=0))
    peaks = (np.column_stack([np.ones(24), features / divisors]) @ truth) * 1024
    fitted = fit_regression(features, peaks)
    np.testing.assert_allclose(fitted.divisors, divisors)
    np.testing.assert_allclose(fitted.coefficients_gib, truth, atol=1e-9)
    assert fitted.residual_norm_gib < 1e-9 and np.all(fitted.coefficients_gib >= 0)
    np.testing.assert_allclose(fitted.predict_peaks_mib(features[:3]), peaks[:3])


def test_the_regression_needs_more_rows_than_features_and_finite_coefficients(monkeypatch):
    with pytest.raises(InputError, match="needs more than 8 complete rows, got 8"):
        fit_regression(np.ones((8, 8)), np.ones(8))
    import scipy.optimize

    monkeypatch.setattr(scipy.optimize, "nnls", lambda a, b, maxiter: (np.full(a.shape[1], np.nan), 0.0))
    with pytest.raises(NumericalError, match="non-finite coefficients"):
        fit_regression(np.ones((9, 8)), np.ones(9))


def test_the_startup_guard_turns_a_predicted_startup_failure_into_a_memory_failure():
    final, peak_only = regression_states(
        np.array([30000.0, 39000.0, 30000.0]), [40960] * 3, [38912] * 3, [None, False, True]
    )
    assert peak_only == [W, A, W] and final == [W, A, F]


def test_logistic_classification_on_three_separated_clusters():
    rng = np.random.default_rng(11)
    centres = {W: 0.0, A: 5.0, F: 10.0}
    states = [s for s in centres for _ in range(8)]
    features = np.array([rng.normal(centres[s], 0.3, size=8) for s in states])
    classifier = fit_logistic(features, states)
    assert classifier.classes == CLASSES == (A, F, W)
    assert classifier.predict(features) == states and classifier.iterations > 0
    assert classifier.coefficients.shape == (3, 8) and abs(classifier.intercepts.sum()) < 1e-6
    np.testing.assert_allclose(classifier.scaler_scale, features.std(axis=0))
    with pytest.raises(InputError, match="needs every label in training; missing above_margin"):
        fit_logistic(features[[0, 20]], [W, F])


def _references(training: Examples) -> FittedReferences:
    """References with hand-set parameters: the regression predicts 30 GiB everywhere, the classifier within."""
    regression = ComponentRegression(np.ones(8), np.array([30.0] + [0.0] * 8), 0.0)
    classifier = LogisticClassifier(np.zeros(8), np.ones(8), CLASSES, np.zeros((3, 8)), np.array([0.0, 0.0, 1.0]), 1)
    return FittedReferences(training, PARAMETERS, regression, tuple(training.ids), classifier)


def test_three_prediction_rows_per_target_and_the_guard_change():
    base = {**SETTINGS, "workload_id": "gsm8k", "configuration_level": "c1", "model_id": QWEN3}
    donor_row = {**base, "configuration_id": "donor", "observed_state": A, "max_completed_run_peak_mib": 39100.0}
    training = Examples(({**donor_row, "completed": True},), np.zeros((1, 8)))
    target = {**base, "configuration_id": "target", "model_id": QWEN7, "vllm_gpu_memory_utilization": 0.98}
    targets = Examples((target,), feature_matrix([target], {QWEN7: METADATA}))
    rows = _references(training).predict(targets)
    assert [r["method"] for r in rows] == list(METHODS)
    donor, regression, logistic = rows
    assert (donor["predicted_state"], donor["predicted_peak_mib"], donor["donor_configuration_id"]) == (
        A,
        39100.0,
        "donor",
    )
    assert donor["donor_gpu_count_matches"] is True and donor["peak_only_predicted_state"] is None
    assert regression["predicted_peak_mib"] == 30 * 1024 and regression["peak_only_predicted_state"] == W
    assert regression["predicted_state"] == F and regression["startup_guard_changed_state"] is True
    assert (logistic["predicted_state"], logistic["predicted_peak_mib"]) == (W, None)
    assert donor["startup_budget_diagnostic"] == regression["startup_budget_diagnostic"]
    lonely = Examples(({**target, "configuration_level": "c9"},), targets.features)
    with pytest.raises(InputError, match="no donor candidate .* for target"):
        _references(training).predict(lonely)
    assert _references(training).predict(lonely, require_donor=False)[0]["predicted_state"] is None


@pytest.fixture(scope="module")
def inputs(shared_mini):
    return load_inputs(shared_mini.root)


def test_the_inputs_of_the_mini_release(inputs):
    assert len(inputs.pool.rows) == 30 and inputs.pool.ids == sorted(inputs.pool.ids)
    assert inputs.pool.features.shape == (30, 8) and len(inputs.targets.rows) == 4
    assert list(inputs.protocol["features"]) == list(FEATURE_NAMES)  # the amendment is applied
    assert fold_names(inputs.pool) == ["granite33", "phi4", "qwen25"]
    assert sum(r["completed"] for r in inputs.pool.rows) == 25
    training, test = split(inputs.pool, "phi4")
    assert len(training.rows) == 20 and {r["model_family_coarse"] for r in test.rows} == {"phi4"}


def test_the_retrospective_folds(shared_mini, inputs):
    report = run_retrospective(shared_mini.root)
    assert list(report["folds"]) == ["granite33", "phi4", "qwen25"] and "numerical_environment" in report
    for family, fold in report["folds"].items():
        held_out = [r["configuration_id"] for r in inputs.pool.rows if r["model_family_coarse"] == family]
        references = [r["configuration_id"] for r in fold["predictions"] if r["method"] in METHODS]
        assert references == [c for c in held_out for _ in METHODS]
        assert [r["configuration_id"] for r in fold["predictions"] if r["method"] not in METHODS] == held_out
        model = fold["model"]
        assert len(model["training_configuration_ids"]) == 20 and not set(held_out) & set(
            model["training_configuration_ids"]
        )
        assert len(model["component_coefficients_gib"]) == 9 and min(model["component_coefficients_gib"]) >= 0
        assert model["eligible_source_processes"] == 60 and model["feature_names"] == list(FEATURE_NAMES)
        assert {m: s["queries"] for m, s in fold["scores"].items()} == dict.fromkeys(BUILT_IN, 10)
        assert fold["scores"]["logistic"]["completed_peak_prediction_coverage"] == 0
        donors = [r["donor_configuration_id"] for r in fold["predictions"] if r["method"] == "donor_copy"]
        assert all(d not in held_out for d in donors)
        assert all(r["donor_gpu_count_matches"] for r in fold["predictions"] if r["method"] == "donor_copy")
        cost = fold["source_cost"]
        assert cost["full_permitted_fitting_pool"]["configurations"] == 20
        assert cost["distinct_selected_donors"]["configuration_ids"] == sorted(set(donors))


def test_the_final_fit_and_the_prospective_predictions(shared_mini):
    result = run_prospective(shared_mini.root)
    rows, model = result["predictions"], result["fitted_model"]
    assert len(rows) == 12 and len(model["training_configuration_ids"]) == 30
    assert len(model["regression_training_configuration_ids"]) == 25
    donors = {r["configuration_id"]: r["donor_configuration_id"] for r in rows if r["method"] == "donor_copy"}
    assert donors[world.target_id("gsm8k", "c1", 2)] == "pool-qwen25-gsm8k-c1-2gpu"  # Qwen2.5-3B: same family
    assert donors[world.target_id("gsm8k", "c2", 4)] == "pool-qwen25-gsm8k-c2-4gpu"
    math_c3 = [r for r in rows if r["configuration_id"] == world.target_id("math", "c3", 2)]
    assert math_c3[0]["predicted_state"] == F and math_c3[0]["predicted_peak_mib"] is None  # its donor failed
    assert math_c3[1]["startup_budget_diagnostic"]["predicted_startup_budget_failure"] is True
    assert math_c3[1]["predicted_state"] == F
    assert result["published_check"] == {"available": False}  # the mini release publishes no predictions


def test_the_published_check_compares_labels_exactly_and_peaks_within_tolerance():
    rows = [{"configuration_id": "t", "method": "m", "predicted_state": W, "predicted_peak_mib": 100.0}]
    assert check_against_published(rows, [dict(rows[0], predicted_peak_mib=100.0 + 1e-9)])["matches"] is True
    moved = check_against_published(rows, [dict(rows[0], predicted_state=A)])
    assert moved["matches"] is False and moved["differences"] == ["t m predicted_state"]
    assert check_against_published(rows, [dict(rows[0], predicted_peak_mib=101.0)])["max_peak_difference_mib"] == 1.0


def test_sealed_inputs_are_checked_against_the_protocol(mini):
    targets = mini.path("estimation_targets")  # in no manifest: only the seals guard it
    sealed = mini.documents[PROTOCOL]["input_sha256"][TARGETS]
    targets.write_text(targets.read_text().replace("GRPO", "PPO", 1))
    with pytest.raises(IntegrityError) as caught:
        load_inputs(mini.root)
    found = hashlib.sha256(targets.read_bytes()).hexdigest()
    message = str(caught.value)  # the amendment and the prediction freeze record the same file
    assert message == f"seal {PROTOCOL}: {TARGETS} has SHA-256 {found}, sealed as {sealed} (and 2 more)"
    assert caught.value.path == TARGETS


def test_the_protocol_is_checked_against_the_amendment(mini):
    protocol = mini.root / PROTOCOL
    sealed = mini.documents[AMENDMENT]["base_protocol_sha256"]
    protocol.write_text(protocol.read_text().replace("estimation-1.0", "estimation-1.1"))
    with pytest.raises(IntegrityError) as caught:
        load_inputs(mini.root)
    found = hashlib.sha256(protocol.read_bytes()).hexdigest()  # the prediction freeze records it too
    assert str(caught.value) == f"seal {AMENDMENT}: {PROTOCOL} has SHA-256 {found}, sealed as {sealed} (and 1 more)"


@pytest.mark.parametrize(
    ("document", "key", "value", "message"),
    [
        (AMENDMENT, "updates", {"features": ["x"]}, "the amended feature order differs"),
        (
            PROTOCOL,
            "source_configuration_ids",
            ["pool-granite33-gsm8k-c0-2gpu"],
            "differs from the protocol's allowlist",
        ),
        (PROTOCOL, "classifier", {"C": 2.0}, "classifier settings C differ from the implemented ones"),
    ],
)
def test_a_protocol_the_comparison_cannot_follow_is_one_line(mini, document, key, value, message):
    mini.documents[document][key] = value
    seal(mini)
    with pytest.raises(InputError, match=message):
        load_inputs(mini.root)


def test_the_pool_refuses_configurations_without_three_seeds_or_a_consistent_label(inputs):
    rows = [dict(r) for r in inputs.pool.rows]
    metadata = inputs.metadata
    with pytest.raises(InputError, match="lacks three eligible distinct seeds"):
        fitting_pool(rows[:1], [{**rows[0], "distinct_seeds": 2}], metadata)
    failed = {**rows[0], "observed_state": F}
    with pytest.raises(InputError, match="completion disagrees with its label"):
        fitting_pool(rows[:1], [failed], metadata)
    with pytest.raises(InputError, match="has no outcome"):
        fitting_pool(rows[:1], [], metadata)


def test_held_out_predictions_scored_per_fold(shared_mini, inputs):
    phi = [r for r in inputs.pool.rows if r["model_family_coarse"] == "phi4"]
    ids = [r["configuration_id"] for r in phi]
    truth = [r["observed_state"] for r in phi]
    peaks = {r["configuration_id"]: r["max_completed_run_peak_mib"] for r in phi}
    scores = score_fold_predictions(ids, truth, peaks, fold="phi4", source=shared_mini.root)["folds"]
    assert list(scores) == ["phi4"] and scores["phi4"]["correct_three_state"] == 10
    assert scores["phi4"]["completed_peak_mae_mib"] == 0.0 and scores["phi4"]["completed_peak_prediction_coverage"] == 8
    with pytest.raises(InputError, match="must cover the 30 configurations of fold all exactly once: 20 missing"):
        score_fold_predictions(ids, truth, fold="all", source=shared_mini.root)
    with pytest.raises(InputError, match="unknown fold 'llama'"):
        score_fold_predictions(ids, truth, fold="llama", source=shared_mini.root)


class Constant:
    """An estimator that approves everything and checks that targets carry no outcome."""

    def fit(self, training):
        assert {"observed_state", "max_completed_run_peak_mib", *FEATURE_NAMES} <= set(training.columns)

    def predict(self, targets):
        assert "observed_state" not in targets.columns and "completed" not in targets.columns
        return {"predicted_state": [W] * len(targets), "predicted_peak_mib": [30000.0] * len(targets)}


def test_a_user_estimator_is_scored_beside_the_references(shared_mini):
    folds = run_retrospective(shared_mini.root, estimators={"constant": Constant()})["folds"]
    for fold in folds.values():
        assert fold["scores"]["constant"]["approved"] == 10 and len(fold["user_predictions"]) == 10


def test_the_built_in_methods_are_fitted_once_per_release_content(mini, monkeypatch):
    from rlvrambench_hf.data.sources.memo import forget
    from rlvrambench_hf.estimation import folds

    fits = []
    real = folds.fit_references
    monkeypatch.setattr(folds, "fit_references", lambda *args: fits.append(1) or real(*args))
    plain = run_retrospective(mini.root)
    assert len(fits) == 3  # one per fold
    plain["folds"]["phi4"]["scores"]["logistic"]["approved"] = -1  # a caller's edit reaches no later report
    plain["memory_model"].clear()
    compared = run_retrospective(mini.root, estimators={"constant": Constant()})
    assert len(fits) == 3 and all(f["scores"]["constant"]["approved"] == 10 for f in compared["folds"].values())
    again = run_retrospective(mini.root)
    forget()
    assert run_retrospective(mini.root) == again and len(fits) == 6  # remembered = computed afresh
    (mini.root / "README.md").touch()  # any write to the release's files: fitted again
    run_retrospective(mini.root)
    assert len(fits) == 9


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ([W], "predict returned 1 labels for 2 targets"),
        ([W, "safe"], "unknown label\\(s\\) 'safe'"),
        ({"predicted_state": [W, W], "predicted_peak_mib": [1.0, -5.0]}, "is not a finite non-negative MiB value"),
        ({"predicted_peak_mib": [1.0, 2.0]}, "without a predicted_state column"),
        ("within_margin", "must return a sequence of labels"),
    ],
)
def test_an_estimator_result_that_cannot_be_scored(result, message):
    with pytest.raises(InputError, match=f"estimator mine: .*{message}"):
        checked_predictions(result, 2, "mine")
    clean = checked_predictions({"predicted_state": [W, F], "predicted_peak_mib": [math.nan, 7]}, 2, "mine")
    assert clean == {"predicted_state": [W, F], "predicted_peak_mib": [None, 7.0]}


def test_advice_for_a_planned_run_is_its_measurement_first(shared_mini):
    from rlvrambench_hf.advisor import advise_planned

    plan = {k: v for k, v in world.target_settings()[0].items() if k not in ("device_capacity_mib", "margin_limit_mib")}
    advice = advise_planned([plan], shared_mini.root)
    (entry,) = advice["configurations"]
    assert advice["fitted_on_configurations"] == 30 and set(entry["predictions"]) == set(METHODS)
    # the mini world's larger-model panel measured this very target: the answer is that record, not a prediction
    assert [(r["table"], r["configuration_id"]) for r in entry["measured"]] == [
        ("larger_model_configurations", plan["configuration_id"])
    ]
    assert (
        entry["verdict"]["basis"] == "measured" and entry["verdict"]["state"] == entry["measured"][0]["observed_state"]
    )
    assert "the references disagree with it" in entry["verdict"]["sentence"]
    assert {f["check"] for f in entry["floors"]} >= {"generation_weights", "sequence_length"}
    assert all(f["holds"] for f in entry["floors"])
    assert any(
        "model outside the references' fitting pool" in flag for flag in entry["scope_flags"]
    )  # 7B: its family is, the model is not
