"""Choosing the form inside the folds: every candidate of :data:`~.forms.CANDIDATES` calibrated on every set of
training models the folds need (memoised in a :class:`Grid`), scored by an inner leave-one-family-out on the
training families only.

A candidate's inner score adds its scores over the inner folds (each training family predicted by a calibration
on the others). The chosen form is the first by :attr:`Score.key`: fewest approved memory failures, then fewest
approved above-margin runs, fewest usable settings rejected, most correct labels, then the smallest mean
relative error over the held-out configuration peaks and stage peaks (every phase the release measured); ties go
to the earlier candidate (the design note's form first). Outcomes of the held-out family never reach the choice.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .calibrate import Calibration
from .fit import Measured, fit_on
from .forms import CANDIDATES, Form
from .phases import PHASES, phases

WITHIN, ABOVE, FAILURE = "within_margin", "above_margin", "memory_failure"
LABELS: tuple[str, ...] = (WITHIN, ABOVE, FAILURE)


def label_of(peak: np.ndarray, capacity: np.ndarray, margin: np.ndarray) -> np.ndarray:
    """The card's label of a peak: above the capacity a failure, above the margin above-margin."""
    return np.where(peak > capacity, FAILURE, np.where(peak > margin, ABOVE, WITHIN))


@dataclass(frozen=True)
class Score:
    """Labels and relative peak errors of predictions against resolved outcomes (``queries`` counts the resolved
    labels; peaks count every completed configuration, resolved or not)."""

    queries: int = 0
    correct: int = 0
    approved_memory_failure: int = 0
    approved_above_margin: int = 0
    rejected_within_margin: int = 0
    peak_errors: tuple[float, ...] = ()
    stage_errors: tuple[float, ...] = ()

    def __add__(self, other: Score) -> Score:
        counts = [getattr(self, n) + getattr(other, n) for n in COUNTS]
        return Score(*counts, self.peak_errors + other.peak_errors, self.stage_errors + other.stage_errors)

    @property
    def peak_mape(self) -> float | None:
        return 100.0 * float(np.mean(np.abs(self.peak_errors))) if self.peak_errors else None

    @property
    def stage_mape(self) -> float | None:
        return 100.0 * float(np.mean(np.abs(self.stage_errors))) if self.stage_errors else None

    @property
    def key(self) -> tuple[float, ...]:
        errors = self.peak_errors + self.stage_errors
        mean = float(np.mean(np.abs(errors))) if errors else float("inf")
        return (
            self.approved_memory_failure,
            self.approved_above_margin,
            round(mean, 12),
            self.rejected_within_margin,
            -self.correct,
        )

    def as_dict(self) -> dict[str, Any]:
        peak, stage = self.peak_mape, self.stage_mape
        return {
            **{n: getattr(self, n) for n in COUNTS},
            "completed_peaks": len(self.peak_errors),
            "completed_peak_mape_percent": None if peak is None else round(peak, 3),
            "completed_peak_mean_signed_error_percent": (
                round(100.0 * float(np.mean(self.peak_errors)), 3) if self.peak_errors else None
            ),
            "stage_peaks": len(self.stage_errors),
            "stage_peak_mape_percent": None if stage is None else round(stage, 3),
        }


COUNTS = ("queries", "correct", "approved_memory_failure", "approved_above_margin", "rejected_within_margin")


@dataclass
class Grid:
    """Every form calibrated on any set of training models of ``data``'s calibration rows (``pool``), memoised,
    with its phase peaks on every row of ``data``."""

    data: Measured
    pool: np.ndarray
    forms: tuple[Form, ...] = CANDIDATES
    _calibrations: dict[tuple[frozenset[str], Form], Calibration] = field(default_factory=dict)
    _peaks: dict[tuple[frozenset[str], Form], np.ndarray] = field(default_factory=dict)

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

    def score(self, models: frozenset[str], form: Form, test: np.ndarray) -> Score:
        """The calibration's score on the rows ``test`` selects: resolved labels, completed peaks, stage peaks."""
        return score_rows(self.data, self.phase_peaks(models, form), test)

    def inner(self, models: frozenset[str], form: Form) -> Score:
        """``form``'s inner leave-one-family-out score on the families of ``models`` (each predicted by a
        calibration on the others)."""
        total = Score()
        by_family = self.family_models(models)
        for family, held in by_family.items():
            test = self.pool & np.isin(self.data.model, sorted(held))
            total = total + self.score(models - held, form, test)
        return total

    def select(self, models: frozenset[str]) -> tuple[Form, dict[Form, Score]]:
        """The form chosen by the inner folds on ``models``' families, with every candidate's inner score."""
        if len(self.family_models(models)) < 2:
            raise ValueError("an inner leave-one-family-out needs at least two training families")
        scores = {form: self.inner(models, form) for form in self.forms}
        order = sorted(range(len(self.forms)), key=lambda k: (scores[self.forms[k]].key, k))
        return self.forms[order[0]], scores


def score_rows(data: Measured, phase_peaks: np.ndarray, test: np.ndarray) -> Score:
    """Scores of per-row phase peaks on the rows ``test`` selects."""
    index = np.flatnonzero(test)
    peak = np.max(phase_peaks[index], axis=1)
    observed = [str(data.rows[i].get("observed_state")) for i in index]
    capacity = data.x["device_capacity_mib"][index]
    margin = np.array([float(data.rows[i].get("margin_limit_mib") or 0.95 * c) for i, c in zip(index, capacity)])
    labels = label_of(np.nan_to_num(peak, nan=np.inf), capacity, margin)
    resolved = [k for k, o in enumerate(observed) if o in LABELS]
    counts = {
        "queries": len(resolved),
        "correct": sum(labels[k] == observed[k] for k in resolved),
        "approved_memory_failure": sum(labels[k] == WITHIN and observed[k] == FAILURE for k in resolved),
        "approved_above_margin": sum(labels[k] == WITHIN and observed[k] == ABOVE for k in resolved),
        "rejected_within_margin": sum(labels[k] != WITHIN and observed[k] == WITHIN for k in resolved),
    }
    truth = data.peak[index]
    done = np.isfinite(truth) & np.isfinite(peak)
    stage_errors: list[float] = []
    for stage, (rows, observed_peaks) in data.stages.items():
        keep = test[rows] if len(rows) else np.zeros(0, dtype=bool)
        predicted = phase_peaks[rows[keep], PHASES.index(stage)]
        ok = np.isfinite(predicted)
        stage_errors += list((predicted[ok] - observed_peaks[keep][ok]) / observed_peaks[keep][ok])
    return Score(
        **counts,
        peak_errors=tuple(float(e) for e in (peak[done] - truth[done]) / truth[done]),
        stage_errors=tuple(stage_errors),
    )


def subsets(families: Iterable[str]) -> list[frozenset[str]]:
    """Every set of ``families`` with at least two members (the training sets an inner fold can choose on)."""
    names: Sequence[str] = sorted(families)
    out = []
    for mask in range(1, 2 ** len(names)):
        chosen = frozenset(n for k, n in enumerate(names) if mask >> k & 1)
        if len(chosen) >= 2:
            out.append(chosen)
    return out
