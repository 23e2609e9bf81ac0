"""The model's held-out record: each leave-one-family-out fold calibrated on the other two families only, its
labels and peak errors on the held-out family, and the error band quoted beside every predicted label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .calibrate import FINAL_FORM, Calibration, rows_inputs
from .fit import fit
from .phases import phases

WITHIN, ABOVE, FAILURE = "within_margin", "above_margin", "memory_failure"
#: The band is this quantile of the absolute held-out peak errors (MiB).
BAND_QUANTILE = 0.95


@dataclass(frozen=True)
class FoldResult:
    """One held-out family: its calibration, and per held-out configuration the label and peak."""

    family: str
    calibration: Calibration
    ids: list[str]
    labels: list[str]
    peaks: list[float | None]


def label_of(peak: np.ndarray, capacity: np.ndarray, margin: np.ndarray) -> np.ndarray:
    """The card's label of a peak: above the capacity a failure, above the margin above-margin."""
    return np.where(peak > capacity, FAILURE, np.where(peak > margin, ABOVE, WITHIN))


def predict_rows(
    rows: Sequence[Mapping[str, Any]], calibration: Calibration, metadata: Mapping[str, Mapping[str, Any]]
) -> tuple[list[str], list[float | None]]:
    """Labels and peaks of rows in the dataset's vocabulary (no peak where the model cannot compute one)."""
    x, arch = rows_inputs(rows, metadata)
    peak = phases(x, arch, calibration).peak
    margin = np.array([float(r["margin_limit_mib"]) for r in rows])
    labels = label_of(np.nan_to_num(peak, nan=np.inf), x["device_capacity_mib"], margin)
    return [str(v) for v in labels], [float(p) if np.isfinite(p) else None for p in peak]


def folds(
    pool: Sequence[Mapping[str, Any]],
    stages: Sequence[Mapping[str, Any]],
    metadata: Mapping[str, Mapping[str, Any]],
    form: str = FINAL_FORM,
) -> list[FoldResult]:
    """Every leave-one-family-out fold (``pool`` rows carry ``model_family_coarse``)."""
    out = []
    for family in sorted({r["model_family_coarse"] for r in pool}):
        training = [r for r in pool if r["model_family_coarse"] != family]
        test = sorted((r for r in pool if r["model_family_coarse"] == family), key=lambda r: r["configuration_id"])
        ids = {r["configuration_id"] for r in training}
        calibration = fit(training, [s for s in stages if s["configuration_id"] in ids], metadata, form)
        labels, peaks = predict_rows(test, calibration, metadata)
        out.append(FoldResult(family, calibration, [r["configuration_id"] for r in test], labels, peaks))
    return out


def band_mib(results: Sequence[FoldResult], pool: Sequence[Mapping[str, Any]]) -> float:
    """The :data:`BAND_QUANTILE` quantile of |predicted − measured| over the completed held-out peaks."""
    truth = {r["configuration_id"]: r for r in pool}
    errors = [
        abs(p - truth[i]["max_completed_run_peak_mib"])
        for f in results
        for i, p in zip(f.ids, f.peaks)
        if p is not None and truth[i]["completed"]
    ]
    return float(np.quantile(errors, BAND_QUANTILE)) if errors else float("nan")


@dataclass(frozen=True)
class ModelRecord:
    """The model the advisor answers with: calibrated on all 90 configurations and their stages, its held-out
    fold results and error band."""

    calibration: Calibration
    folds: list[FoldResult]
    band_mib: float

    def fold_summary(self, pool: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Per held-out family: labels right, approved failures, usable rejected."""
        truth = {r["configuration_id"]: r["observed_state"] for r in pool}
        out = {}
        for f in self.folds:
            observed = [truth[i] for i in f.ids]
            out[f.family] = {
                "correct": sum(a == b for a, b in zip(f.labels, observed)),
                "targets": len(f.ids),
                "approvals_that_failed": sum(a == WITHIN and b != WITHIN for a, b in zip(f.labels, observed)),
                "usable_rejected": sum(a != WITHIN and b == WITHIN for a, b in zip(f.labels, observed)),
            }
        return out


def model_record(
    pool: Sequence[Mapping[str, Any]], stages: Sequence[Mapping[str, Any]], metadata: Mapping[str, Mapping[str, Any]]
) -> ModelRecord:
    """Calibrate on the whole pool, and keep the held-out folds' record and band."""
    ids = {r["configuration_id"] for r in pool}
    calibration = fit(pool, [s for s in stages if s["configuration_id"] in ids], metadata)
    results = folds(pool, stages, metadata)
    return ModelRecord(calibration, results, band_mib(results, pool))
