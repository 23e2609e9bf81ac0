"""Choosing the form inside the folds: every candidate of :data:`~.forms.CANDIDATES` calibrated on every set of
training models the folds need (memoised in a :class:`Grid`), scored by an inner leave-one-family-out on the
training families only.

A candidate's inner score adds its scores over the inner folds (each training family predicted by a calibration
on the others); its approvals are read as the advisor gives them, a within-margin label whose in-domain band (the
95th percentile of the candidate's own absolute inner errors) does not reach the margin. The chosen form is the
first by :attr:`Score.key`: fewest approved memory failures, then fewest approved above-margin runs, the smallest
mean relative error over the held-out configuration peaks and stage peaks (every phase the release measured),
fewest usable settings not approved, most correct labels; ties go to the earlier candidate (the ``sequences``
runtime before ``constant``: the pool's max_num_seqs moves with its workload, so the two predict every pool
configuration alike, and the one whose term grows with what it physically depends on goes first).
Outcomes of the held-out family never reach the choice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .calibrate import Calibration
from .fit import Measured, fit_on
from .forms import CANDIDATES, Form
from .phases import PHASES, phases

WITHIN, ABOVE, FAILURE = "within_margin", "above_margin", "memory_failure"
#: The quantile of the absolute held-out errors the in-domain band is.
BAND_QUANTILE = 0.95
LABELS: tuple[str, ...] = (WITHIN, ABOVE, FAILURE)


def label_of(peak: np.ndarray, capacity: np.ndarray, margin: np.ndarray) -> np.ndarray:
    """The card's label of a peak: above the capacity a failure, above the margin above-margin."""
    return np.where(peak > capacity, FAILURE, np.where(peak > margin, ABOVE, WITHIN))


@dataclass(frozen=True)
class Score:
    """Labels and relative peak errors of predictions against resolved outcomes (``queries`` counts the resolved
    labels; peaks count every completed configuration, resolved or not). The ``band_*`` counts read approvals as
    the advisor gives them: a within-margin label whose band (``band_mib``, the in-domain band the inner folds
    measured) does not reach the margin or the capacity."""

    queries: int = 0
    correct: int = 0
    approved_memory_failure: int = 0
    approved_above_margin: int = 0
    rejected_within_margin: int = 0
    near_limit: int = 0
    band_approved_memory_failure: int = 0
    band_approved_above_margin: int = 0
    band_rejected_within_margin: int = 0
    band_mib: float = 0.0
    peak_errors: np.ndarray = field(default_factory=lambda: np.zeros(0))
    stage_errors: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __add__(self, other: Score) -> Score:
        counts = {n: getattr(self, n) + getattr(other, n) for n in COUNTS}
        return Score(
            **counts,
            band_mib=max(self.band_mib, other.band_mib),
            peak_errors=np.concatenate([self.peak_errors, other.peak_errors]),
            stage_errors=np.concatenate([self.stage_errors, other.stage_errors]),
        )

    @property
    def peak_mape(self) -> float | None:
        return 100.0 * float(np.mean(np.abs(self.peak_errors))) if len(self.peak_errors) else None

    @property
    def stage_mape(self) -> float | None:
        return 100.0 * float(np.mean(np.abs(self.stage_errors))) if len(self.stage_errors) else None

    @property
    def mean_error(self) -> float:
        """The mean relative error over the configuration and stage peaks (inf without any)."""
        errors = np.concatenate([self.peak_errors, self.stage_errors])
        return float(np.mean(np.abs(errors))) if len(errors) else float("inf")

    @property
    def key(self) -> tuple[float, ...]:
        return (
            self.band_approved_memory_failure,
            self.band_approved_above_margin,
            round(self.mean_error, 12),
            self.band_rejected_within_margin,
            -self.correct,
        )

    def as_dict(self) -> dict[str, Any]:
        peak, stage = self.peak_mape, self.stage_mape
        return {
            **{n: getattr(self, n) for n in COUNTS[:5]},
            "with_band": {
                "band_mib": round(self.band_mib, 1),
                "near_limit": self.near_limit,
                "approved_memory_failure": self.band_approved_memory_failure,
                "approved_above_margin": self.band_approved_above_margin,
                "rejected_within_margin": self.band_rejected_within_margin,
            },
            "completed_peaks": len(self.peak_errors),
            "completed_peak_mape_percent": None if peak is None else round(peak, 3),
            "completed_peak_mean_signed_error_percent": (
                round(100.0 * float(np.mean(self.peak_errors)), 3) if len(self.peak_errors) else None
            ),
            "stage_peaks": len(self.stage_errors),
            "stage_peak_mape_percent": None if stage is None else round(stage, 3),
        }


COUNTS = (
    "queries",
    "correct",
    "approved_memory_failure",
    "approved_above_margin",
    "rejected_within_margin",
    "near_limit",
    "band_approved_memory_failure",
    "band_approved_above_margin",
    "band_rejected_within_margin",
)


@dataclass
class Grid:
    """Every form calibrated on any set of training models of ``data``'s calibration rows (``pool``), memoised,
    with its phase peaks on every row of ``data``."""

    data: Measured
    pool: np.ndarray
    forms: tuple[Form, ...] = CANDIDATES
    _calibrations: dict[tuple[frozenset[str], Form], Calibration] = field(default_factory=dict)
    _peaks: dict[tuple[frozenset[str], Form], np.ndarray] = field(default_factory=dict)
    _selected: dict[frozenset[str], tuple[Form, dict[Form, Score]]] = field(default_factory=dict)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its memos (the advisor's store keeps the grid of its model's record; what a memo holds is
        recomputed, the same, when asked for): 2.9 MB of a 3.4 MB context, a third of its reading time."""
        return {**self.__dict__, "_calibrations": {}, "_peaks": {}, "_selected": {}}

    def models(self, rows: np.ndarray | None = None) -> frozenset[str]:
        mask = self.pool if rows is None else self.pool & rows
        return frozenset(str(m) for m in self.data.model[mask])

    def family_models(self, models: frozenset[str]) -> dict[str, frozenset[str]]:
        """The calibration models of ``models`` by coarse family."""
        out: dict[str, set[str]] = {}
        for m, f in zip(self.data.model[self.pool], self.data.family[self.pool]):
            if m in models:
                out.setdefault(str(f), set()).add(str(m))
        return {f: frozenset(ms) for f, ms in sorted(out.items())}

    def calibration(self, models: frozenset[str], form: Form) -> Calibration:
        key = (models, form)
        if key not in self._calibrations:
            train = self.pool & np.isin(self.data.model, sorted(models))
            self._calibrations[key] = fit_on(self.data, train, form)
        return self._calibrations[key]

    def phase_peaks(self, models: frozenset[str], form: Form) -> np.ndarray:
        """Rows × :data:`~.phases.PHASES` peaks (MiB; NaN where the model has none) of the calibration."""
        key = (models, form)
        if key not in self._peaks:
            model = phases(self.data.x, self.data.arch, self.calibration(models, form))
            self._peaks[key] = np.where(model.known[:, None], model.peaks, np.nan)
        return self._peaks[key]

    def peak(self, models: frozenset[str], form: Form) -> np.ndarray:
        return np.max(self.phase_peaks(models, form), axis=1)  # type: ignore[no-any-return]

    def score(self, models: frozenset[str], form: Form, test: np.ndarray, band: float = 0.0) -> Score:
        """The calibration's score on the rows ``test`` selects: resolved labels (approvals also with ``band``),
        completed peaks, stage peaks."""
        return score_rows(self.data, self.phase_peaks(models, form), test, band)

    def inner(self, models: frozenset[str], form: Form) -> Score:
        """``form``'s inner leave-one-family-out score on the families of ``models`` (each predicted by a
        calibration on the others), its approvals read with the in-domain band of these inner folds: the
        95th percentile of their absolute errors on the completed peaks."""
        folds = [
            (models - held, self.pool & np.isin(self.data.model, sorted(held)))
            for held in self.family_models(models).values()
        ]
        errors: list[float] = []
        for train, test in folds:
            peak, truth = self.peak(train, form)[test], self.data.peak[test]
            done = np.isfinite(peak) & np.isfinite(truth) & self.data.completed[test]
            errors += list(np.abs(peak[done] - truth[done]))
        band = float(np.quantile(errors, BAND_QUANTILE)) if errors else 0.0
        total = Score()
        for train, test in folds:
            total = total + self.score(train, form, test, band)
        return total

    def select(self, models: frozenset[str]) -> tuple[Form, dict[Form, Score]]:
        """The form chosen by the inner folds on ``models``' families, with every candidate's inner score."""
        if models not in self._selected:
            if len(self.family_models(models)) < 2:
                raise ValueError("an inner leave-one-family-out needs at least two training families")
            scores = {form: self.inner(models, form) for form in self.forms}
            order = sorted(range(len(self.forms)), key=lambda k: (scores[self.forms[k]].key, k))
            self._selected[models] = (self.forms[order[0]], scores)
        return self._selected[models]


def score_rows(data: Measured, phase_peaks: np.ndarray, test: np.ndarray, band: float = 0.0) -> Score:
    """Scores of per-row phase peaks on the rows ``test`` selects (approvals also with ``band``)."""
    peak = np.max(phase_peaks[test], axis=1)
    observed, capacity, margin = data.observed[test], data.x["device_capacity_mib"][test], data.margin[test]
    labels = label_of(np.nan_to_num(peak, nan=np.inf), capacity, margin)
    resolved = np.isin(observed, LABELS)
    near = np.isfinite(peak) & ((np.abs(peak - margin) <= band) | (np.abs(peak - capacity) <= band))
    approved, within = (labels == WITHIN) & ~near, labels == WITHIN
    counts = {
        "queries": resolved,
        "correct": resolved & (labels == observed),
        "approved_memory_failure": within & (observed == FAILURE),
        "approved_above_margin": within & (observed == ABOVE),
        "rejected_within_margin": ~within & (observed == WITHIN),
        "near_limit": resolved & near,
        "band_approved_memory_failure": approved & (observed == FAILURE),
        "band_approved_above_margin": approved & (observed == ABOVE),
        "band_rejected_within_margin": ~approved & (observed == WITHIN),
    }
    truth = data.peak[test]
    done = np.isfinite(truth) & np.isfinite(peak)
    stage_errors = []
    for stage, (rows, observed_peaks) in data.stages.items():
        keep = test[rows] if len(rows) else np.zeros(0, dtype=bool)
        predicted, measured_peaks = phase_peaks[rows[keep], PHASES.index(stage)], observed_peaks[keep]
        ok = np.isfinite(predicted)
        stage_errors.append((predicted[ok] - measured_peaks[ok]) / measured_peaks[ok])
    return Score(
        **{k: int(np.count_nonzero(v)) for k, v in counts.items()},
        band_mib=band,
        peak_errors=(peak[done] - truth[done]) / truth[done],
        stage_errors=np.concatenate(stage_errors) if stage_errors else np.zeros(0),
    )
