"""Leave one model out: every measured model predicted by the model calibrated without it, its form chosen by an
inner leave-one-family-out on the remaining calibration families only.

A pool model left out takes its family's calibration rows with it; a model the pool never held (the 1.5B and 7B
Qwen) is predicted by the calibration on the whole pool. Every measured configuration of the model is scored: the
resolved labels (approved memory failures and above-margin runs, usable settings rejected, by label alone and
with the band: an approval is a within-margin label whose band does not reach the margin), and the completed peaks
(relative errors, one-step and multi-step runs apart).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .extrapolation import BandModel, near_limit, plan_band
from .forms import Form
from .phases import phases
from .select import ABOVE, FAILURE, LABELS, WITHIN, Grid, Score, label_of


@dataclass(frozen=True)
class ModelOut:
    """One model left out: its id and fine family, the calibration models, the chosen form, its score, approvals
    with the band, and the signed relative errors of its completed peaks (one-step and multi-step runs)."""

    model_id: str
    model_family: str
    calibration_models: tuple[str, ...]
    form: Form
    score: Score
    one_step_errors: tuple[float, ...]
    multi_step_excess_mib: tuple[float, ...]
    rows: int
    band_approved: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "model_id": self.model_id,
            "calibration_models": list(self.calibration_models),
            "form": self.form.name,
            "configurations": self.rows,
            **self.score.as_dict(),
            "approved_with_band": self.band_approved,
        }


def multi_step(grid: Grid) -> np.ndarray:
    """Rows of runs longer than one training step."""
    x = grid.data.x
    return x.valid["total_training_steps"] & (x["total_training_steps"] > 1)


def leave_one_model_out(grid: Grid) -> list[ModelOut]:
    """Every model of ``grid``'s rows left out in turn (without the approvals with the band: :func:`with_band`)."""
    data = grid.data
    every = grid.models()
    steps = multi_step(grid)
    out = []
    for model in sorted({str(m) for m in data.model}):
        train = every - {model}
        form, _ = grid.select(train)
        test = data.model == model
        index = np.flatnonzero(test)
        peak, truth = grid.peak(train, form), data.peak
        done = index[np.isfinite(truth[index]) & np.isfinite(peak[index])]
        one, many = done[~steps[done]], done[steps[done]]
        family = str(data.rows[index[0]].get("model_family") or data.family[index[0]])
        out.append(
            ModelOut(
                model,
                family,
                tuple(sorted(train)),
                form,
                grid.score(train, form, test),
                tuple(float(e) for e in (peak[one] - truth[one]) / truth[one]),
                tuple(float(e) for e in truth[many] - peak[many]),
                len(index),
            )
        )
    return out


def with_band(grid: Grid, outs: list[ModelOut], band_without: Callable[[str], BandModel]) -> list[ModelOut]:
    """``outs`` with their approvals when the band must stay off the margin (``band_without(model)``: the band
    calibrated without that model's evidence)."""
    return [
        replace(
            o,
            band_approved=_band_approvals(
                grid,
                frozenset(o.calibration_models),
                o.form,
                np.flatnonzero(grid.data.model == o.model_id),
                band_without(o.model_id),
            ),
        )
        for o in outs
    ]


def _band_approvals(
    grid: Grid, train: frozenset[str], form: Form, index: np.ndarray, band: BandModel
) -> dict[str, int]:
    """Approvals of the left-out model's resolved labels when an approval must also keep its band off the margin."""
    data = grid.data
    x, arch = data.x.take(index), data.arch.take(index)
    model = phases(x, arch, grid.calibration(train, form))
    peak = np.where(model.known, model.peak, np.nan)
    margin = np.array([float(data.rows[i].get("margin_limit_mib") or 0.95 * c)
                       for i, c in zip(index, x["device_capacity_mib"])])  # fmt: skip
    capacity = x["device_capacity_mib"]
    labels = label_of(np.nan_to_num(peak, nan=np.inf), capacity, margin)
    width = plan_band(model, x, arch, [str(m) for m in data.model[index]], band).mib
    near = near_limit(peak, width, margin, capacity)
    approved = (labels == WITHIN) & ~near
    observed = np.array([str(data.rows[i].get("observed_state")) for i in index], dtype=object)
    resolved = np.isin(observed, LABELS)
    return {
        "approved": int((approved & resolved).sum()),
        "approved_memory_failure": int((approved & (observed == FAILURE)).sum()),
        "approved_above_margin": int((approved & (observed == ABOVE)).sum()),
        "near_limit": int((near & resolved).sum()),
        "rejected_within_margin": int((~approved & (observed == WITHIN)).sum()),
    }
