"""Component regression with startup guard (ESTIMATION.md §4.2): non-negative least squares on completed peaks.

The design is [1 | X/d] with divisors d from the complete training rows; β ≥ 0 (intercept included) is solved
with Lawson–Hanson active-set NNLS (``scipy.optimize.nnls``), which the published coefficients require.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from ..errors import InputError, NumericalError
from ..scoring.estimators import state_from_peak
from ..scoring.labels import MEMORY_FAILURE
from .features import FEATURE_NAMES

NNLS_MAXITER = 10_000
MIB_PER_GIB = 1024


@dataclass(frozen=True)
class ComponentRegression:
    """A fitted regression: divisors (8), coefficients in GiB (9, intercept first) and the residual norm."""

    divisors: np.ndarray
    coefficients_gib: np.ndarray
    residual_norm_gib: float

    def predict_peaks_mib(self, features: np.ndarray) -> np.ndarray:
        """Predicted peaks (MiB) of target features (n × 8)."""
        design = np.column_stack([np.ones(len(features)), features / self.divisors])
        return cast("np.ndarray", (design @ self.coefficients_gib) * MIB_PER_GIB)


def fit_regression(features: np.ndarray, peaks_mib: np.ndarray) -> ComponentRegression:
    """Fit on complete rows only: ``features`` (n × 8) and their largest completed peaks in MiB."""
    from scipy.optimize import nnls

    if len(features) <= len(FEATURE_NAMES):
        raise InputError(
            f"component regression needs more than {len(FEATURE_NAMES)} complete rows, got {len(features)}"
        )
    divisors = np.maximum(1.0, features.max(axis=0))
    design = np.column_stack([np.ones(len(features)), features / divisors])
    coefficients, residual = nnls(design, np.asarray(peaks_mib, dtype=np.float64) / MIB_PER_GIB, maxiter=NNLS_MAXITER)
    if not np.all(np.isfinite(coefficients)):
        raise NumericalError("component regression produced non-finite coefficients")
    return ComponentRegression(divisors, coefficients, float(residual))


def regression_states(
    peaks_mib: np.ndarray, capacities: list[int], margins: list[int], startup_failures: list[bool | None]
) -> tuple[list[str], list[str]]:
    """(final labels, peak-only labels): the startup guard turns a predicted startup failure into a memory failure."""
    peak_only = [state_from_peak(float(p), c, m) for p, c, m in zip(peaks_mib, capacities, margins)]
    final = [MEMORY_FAILURE if fails else s for s, fails in zip(peak_only, startup_failures)]
    return final, peak_only
