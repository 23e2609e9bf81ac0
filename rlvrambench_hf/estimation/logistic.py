"""Logistic classification (ESTIMATION.md §4.3): balanced multinomial logistic regression on standardised features.

scikit-learn's ``LogisticRegression`` (lbfgs, C = 1, balanced class weights) as the protocol names it; lbfgs with
three classes is the symmetric multinomial model in every supported scikit-learn version. A ConvergenceWarning or
a non-finite parameter is an error.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

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
        return ((features - self.scaler_mean) / self.scaler_scale) @ self.coefficients.T + self.intercepts

    def predict(self, features: np.ndarray) -> list[str]:
        """The class with the largest logit (ties go to the first class in order)."""
        return [self.classes[i] for i in np.argmax(self.logits(features), axis=1)]


def fit_logistic(features: np.ndarray, states: Sequence[str]) -> LogisticClassifier:
    """Fit on every training row, failures included."""
    try:
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression
    except ImportError:  # pragma: no cover - a declared dependency
        raise InputError("logistic classification needs scikit-learn: pip install scikit-learn") from None

    missing = sorted(set(CLASSES) - set(states))
    if missing:
        raise InputError(f"logistic classification needs every label in training; missing {', '.join(missing)}")
    mean = features.mean(axis=0)
    scale = features.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(**CLASSIFIER_SETTINGS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        try:
            model.fit((features - mean) / scale, np.asarray(states))
        except ConvergenceWarning as exc:
            raise NumericalError(f"logistic classification did not converge: {exc}") from None
    coefficients, intercepts = np.asarray(model.coef_, dtype=np.float64), np.asarray(model.intercept_, np.float64)
    if not (np.all(np.isfinite(coefficients)) and np.all(np.isfinite(intercepts))):
        raise NumericalError("logistic classification produced non-finite parameters")
    if tuple(model.classes_) != CLASSES:
        raise InputError(f"unexpected classifier classes {list(model.classes_)}")
    return LogisticClassifier(mean, scale, CLASSES, coefficients, intercepts, int(np.max(model.n_iter_)))
