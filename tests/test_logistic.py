"""The logistic reference against the sealed final fit (issue 28): the refit reproduces the sealed parameters
within upstream's own refit tolerance, and the output says so, or by how much it differs and that the sealed labels
stand.

The sealed values below are facts from ``benchmark/estimation/fitted_model.json`` of the reproduction repository
(kobzaond/RLVRAMBench-reproduce, fitted with scikit-learn 1.3.0 in 38 lbfgs iterations); this copy of the release
does not carry that file. Upstream's tolerance is ``numerical_diagnostic.json``'s: 1e-9 relative, 1e-6 absolute.
"""

from __future__ import annotations

import numpy as np
import pytest

from rlvrambench_hf.estimation.logistic import (
    CLASSIFIER_SETTINGS,
    INVERSE_REGULARISATION,
    MAX_ITERATIONS,
    SEALED_MODEL,
    sealed_comparison,
)

SEALED_INTERCEPTS = [0.7271110245357251, -2.9187339040273756, 2.191622879491652]
SEALED_COEFFICIENTS = [
    [0.14837732625278155, -0.7242861977644228, -0.030985986687828454, -0.1694410444015409,
     0.05753193331705675, 0.16607992470759583, -0.3141698408276469, 0.1874593676217934],
    [0.5024974977973338, 1.1551702881304888, 2.92972148756149, 0.32062376850070523,
     0.21846640819013424, 0.46730560418414135, 0.19357465202341737, 0.28182249965838185],
    [-0.6508748240501154, -0.4308840903660661, -2.898735500873661, -0.15118272409916486,
     -0.27599834150719094, -0.6333855288917364, 0.12059518880422974, -0.4692818672801747],
]  # fmt: skip


@pytest.fixture(scope="module")
def refit(snapshot) -> dict:
    from rlvrambench_hf.estimation import run_prospective

    return run_prospective(snapshot)["fitted_model"]


def sealed_like(refit: dict, **changes: object) -> dict:
    sealed = {
        "scaler_mean": refit["scaler_mean"],
        "scaler_scale": refit["scaler_scale"],
        "classifier_coefficients": SEALED_COEFFICIENTS,
        "classifier_intercepts": SEALED_INTERCEPTS,
        "classifier_iterations": [38],
    }
    return sealed | changes


def test_the_refit_reproduces_the_sealed_parameters_within_upstreams_tolerance(refit) -> None:
    assert refit["classifier_iterations"] == 38  # scikit-learn 1.3.0's count; later versions stop after 29
    np.testing.assert_allclose(refit["classifier_intercepts"], SEALED_INTERCEPTS, rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(refit["classifier_coefficients"], SEALED_COEFFICIENTS, rtol=1e-9, atol=1e-6)
    assert (INVERSE_REGULARISATION, MAX_ITERATIONS) == (CLASSIFIER_SETTINGS["C"], CLASSIFIER_SETTINGS["max_iter"])


def test_the_comparison_says_it_reproduces_the_seal(refit) -> None:
    found = sealed_comparison(refit, sealed_like(refit))
    assert found["within_tolerance"] is True and found["max_absolute_difference"] < 1e-9
    assert found["note"].startswith(f"the refit classifier reproduces the sealed {SEALED_MODEL} (largest difference")
    assert "38 iterations, sealed 38" in found["note"] and "sealed labels stand" not in found["note"]


def test_a_refit_that_differs_says_by_how_much_and_that_the_sealed_labels_stand(refit) -> None:
    shifted = (np.array(SEALED_INTERCEPTS) + [0.0, 1.26e-3, 0.0]).tolist()
    found = sealed_comparison(refit, sealed_like(refit, classifier_intercepts=shifted, classifier_iterations=[29]))
    assert found["within_tolerance"] is False and found["max_absolute_difference"] == pytest.approx(1.26e-3, rel=1e-3)
    assert "differs from the sealed" in found["note"] and "1.3e-03 absolute" in found["note"]
    assert found["note"].endswith("; the sealed labels stand")
    other = sealed_comparison(refit, sealed_like(refit, classifier_intercepts=[1.0, 2.0]))
    assert other["within_tolerance"] is False and "another shape" in other["note"]


def test_estimate_fit_says_the_sealed_model_is_not_in_this_copy(snapshot, capsys) -> None:
    from rlvrambench_hf.cli import main

    assert main(["--source", str(snapshot), "estimate", "fit"]) == 0
    out = capsys.readouterr().out
    assert "classifier iterations 38" in out
    assert f"the sealed {SEALED_MODEL} is not in this copy of the release" in out
    assert "the sealed labels in predictions.json stand" in out
