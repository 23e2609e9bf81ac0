"""Logistic classification (ESTIMATION.md §4.3): balanced multinomial logistic regression on standardised features.

The protocol names scikit-learn's ``LogisticRegression`` (lbfgs, C = 1, balanced class weights, max_iter 10,000);
the sealed fit (``fitted_model.json``) ran scikit-learn 1.3.0. Later scikit-learn versions minimise the same
model's objective divided by the sum of the sample weights, so their lbfgs stops elsewhere (29 iterations instead of
38, parameters up to 2.7e-3 away) although the optimum is the same. This module therefore minimises the objective
exactly as scikit-learn 1.3.0 did, with SciPy's L-BFGS-B under the same settings: the class-weighted sum of the
multinomial log-loss plus ``||W||² / (2C)`` (intercepts not penalised), from zero, gradient tolerance 1e-4 (the
estimator's default ``tol``), SciPy's default function tolerance, at most ``max_iter`` iterations. It reproduces the
sealed parameters to about 3e-13 in 38 iterations, inside upstream's own refit tolerance (1e-9 relative, 1e-6
absolute). A non-converged or non-finite fit is an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..data.schema.pins import OUTCOME_LABELS
from ..errors import InputError, NumericalError

#: The protocol's classifier settings (``protocol.json`` ``classifier``).
CLASSIFIER_SETTINGS = {
    "C": 1.0,
    "class_weight": "balanced",
    "solver": "lbfgs",
    "max_iter": 10_000,
    "random_state": 20260915,
}
CLASSES: tuple[str, ...] = tuple(sorted(OUTCOME_LABELS))
INVERSE_REGULARISATION, MAX_ITERATIONS = 1.0, 10_000  # C and max_iter of CLASSIFIER_SETTINGS
#: scikit-learn's default ``tol`` of LogisticRegression, L-BFGS-B's projected-gradient tolerance.
GRADIENT_TOLERANCE = 1e-4
#: Upstream's refit check (``numerical_diagnostic.json``): parameters agree within these, labels exactly.
REFIT_RTOL, REFIT_ATOL = 1e-9, 1e-6
#: The sealed final fit and the parameters compared with it.
SEALED_MODEL = "benchmark/estimation/fitted_model.json"
SEALED_PARAMETERS = ("scaler_mean", "scaler_scale", "classifier_coefficients", "classifier_intercepts")


@dataclass(frozen=True)
class LogisticClassifier:
    """A fitted classifier: scaler (population mean and standard deviation), weights (3 × 8) and intercepts."""

    scaler_mean: np.ndarray
    scaler_scale: np.ndarray
    classes: tuple[str, ...]
    coefficients: np.ndarray
    intercepts: np.ndarray
    iterations: int

    def logits(self, features: np.ndarray) -> np.ndarray:
        return cast(
            "np.ndarray", ((features - self.scaler_mean) / self.scaler_scale) @ self.coefficients.T + self.intercepts
        )

    def predict(self, features: np.ndarray) -> list[str]:
        """The class with the largest logit (ties go to the first class in order)."""
        return [self.classes[i] for i in np.argmax(self.logits(features), axis=1)]


def fit_logistic(features: np.ndarray, states: Sequence[str]) -> LogisticClassifier:
    """Fit on every training row, failures included (the module docstring says how)."""
    missing = sorted(set(CLASSES) - set(states))
    if missing:
        raise InputError(f"logistic classification needs every label in training; missing {', '.join(missing)}")
    unknown = sorted(set(states) - set(CLASSES))
    if unknown:
        raise InputError(f"unexpected classifier classes {unknown}")
    mean = features.mean(axis=0)
    scale = features.std(axis=0)
    scale[scale == 0] = 1.0
    standardised = (features - mean) / scale
    labels = np.array([CLASSES.index(s) for s in states])
    weights = (len(labels) / (len(CLASSES) * np.bincount(labels, minlength=len(CLASSES))))[labels]
    parameters, iterations = _minimise(standardised, labels, weights)
    coefficients, intercepts = parameters[:, :-1].copy(), parameters[:, -1].copy()
    if not (np.all(np.isfinite(coefficients)) and np.all(np.isfinite(intercepts))):
        raise NumericalError("logistic classification produced non-finite parameters")
    return LogisticClassifier(mean, scale, CLASSES, coefficients, intercepts, iterations)


def _minimise(x: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, int]:
    """L-BFGS-B on scikit-learn 1.3.0's objective; the (classes × features + 1) parameters and the iterations."""
    from scipy import optimize
    from scipy.special import logsumexp

    rows, classes, width = len(labels), len(CLASSES), x.shape[1] + 1
    penalty = 1.0 / INVERSE_REGULARISATION
    rows_index = np.arange(rows)

    def objective(flat: np.ndarray) -> tuple[float, np.ndarray]:
        w = flat.reshape(classes, width)
        logits = x @ w[:, :-1].T + w[:, -1]
        normaliser = logsumexp(logits, axis=1)
        loss = float(np.dot(weights, normaliser - logits[rows_index, labels]))
        residual = np.exp(logits - normaliser[:, None])
        residual[rows_index, labels] -= 1.0
        residual *= weights[:, None]
        gradient = np.empty_like(w)
        gradient[:, :-1] = residual.T @ x + penalty * w[:, :-1]
        gradient[:, -1] = residual.sum(axis=0)
        return loss + 0.5 * penalty * float(np.sum(w[:, :-1] ** 2)), gradient.ravel()

    result = optimize.minimize(
        objective,
        np.zeros(classes * width),
        method="L-BFGS-B",
        jac=True,
        options={"maxiter": MAX_ITERATIONS, "gtol": GRADIENT_TOLERANCE, "maxls": 50},
    )
    if not result.success:
        raise NumericalError(f"logistic classification did not converge: {result.message}")
    return result.x.reshape(classes, width), int(result.nit)


def sealed_comparison(refit: Mapping[str, Any], sealed: Mapping[str, Any] | None) -> dict[str, Any]:
    """The refit classifier (``fitted_model`` fields) against the sealed ``fitted_model.json`` (None: this copy of
    the release lacks it): the largest absolute and relative differences of its parameters, the iterations, and
    whether they agree within upstream's refit tolerance; ``note`` says it in one line."""
    if sealed is None:
        return {
            "sealed_available": False,
            "within_tolerance": None,
            "note": f"the sealed {SEALED_MODEL} is not in this copy of the release, so the refit is not compared "
            "with it; the refit follows the sealed fit's solver (scikit-learn 1.3.0's objective, 38 lbfgs "
            "iterations on the release) and the sealed labels in predictions.json stand",
        }
    pairs = [
        (np.asarray(refit[name], dtype=np.float64), np.asarray(sealed.get(name), dtype=np.float64))
        for name in SEALED_PARAMETERS
    ]
    if any(a.shape != b.shape for a, b in pairs):
        return {
            "sealed_available": True,
            "within_tolerance": False,
            "note": f"the sealed {SEALED_MODEL} has parameters of another shape than the refit; the sealed labels "
            "stand",
        }
    absolute = max(float(np.max(np.abs(a - b))) for a, b in pairs)
    relative = max(float(np.max(np.abs(a - b) / np.maximum(np.abs(b), np.finfo(float).tiny))) for a, b in pairs)
    within = all(np.allclose(a, b, rtol=REFIT_RTOL, atol=REFIT_ATOL) for a, b in pairs)
    iterations = (refit.get("classifier_iterations"), _first(sealed.get("classifier_iterations")))
    verdict = "reproduces" if within else "differs from"
    note = (
        f"the refit classifier {verdict} the sealed {SEALED_MODEL} (largest difference {absolute:.1e} absolute, "
        f"{relative:.1e} relative; upstream's tolerance {REFIT_RTOL:g} relative, {REFIT_ATOL:g} absolute; "
        f"{iterations[0]} iterations, sealed {iterations[1]})"
    )
    if not within:
        note += "; the sealed labels stand"
    return {
        "sealed_available": True,
        "within_tolerance": within,
        "max_absolute_difference": absolute,
        "max_relative_difference": relative,
        "iterations": iterations[0],
        "sealed_iterations": iterations[1],
        "note": note,
    }


def _first(value: object) -> object:
    return value[0] if isinstance(value, list) and len(value) == 1 else value
