"""The model's held-out record: the nested leave-one-family-out folds (each family predicted by a calibration on the
other two, its form chosen by an inner leave-one-family-out on those two alone), every form's outer scores beside
them, the leave-one-model-out check (:mod:`.lomo`) and the calibration of the error band's parts
(:mod:`.extrapolation`). :func:`model_record` is what the advisor answers with: the form chosen on all three
families, calibrated on the whole pool.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .arithmetic import tokens_of
from .calibrate import Calibration, rows_inputs
from .documented import DOCUMENTED, Documented
from .extrapolation import DEVICE as DEVICE_PART
from .extrapolation import HORIZON as HORIZON_PART
from .extrapolation import IN_DOMAIN, BandModel, device_share_needed, quantile
from .extrapolation import MODEL as MODEL_PART
from .extrapolation import TOKENS as TOKENS_PART
from .fit import measured
from .forms import Form
from .lomo import ModelOut, leave_one_model_out, with_band
from .phases import PHASES, TOKEN_TERMS, phases
from .select import ABOVE, FAILURE, WITHIN, Grid, Score, label_of

__all__ = ["ABOVE", "FAILURE", "WITHIN", "FoldResult", "ModelRecord", "label_of", "model_record", "predict_rows"]


@dataclass(frozen=True)
class FoldResult:
    """One held-out family: the form its inner folds chose, its calibration, per held-out configuration the label
    and peak, its score, every candidate's inner scores and every candidate's outer score (best-of-forms)."""

    family: str
    form: Form
    calibration: Calibration
    index: np.ndarray
    ids: list[str]
    labels: list[str]
    peaks: list[float | None]
    score: Score
    inner: Mapping[Form, Score]
    outer: Mapping[Form, Score]


def predict_rows(
    rows: Sequence[Mapping[str, Any]], calibration: Calibration, metadata: Mapping[str, Mapping[str, Any]]
) -> tuple[list[str], list[float | None]]:
    """Labels and peaks of rows in the dataset's vocabulary (no peak where the model cannot compute one)."""
    x, arch = rows_inputs(rows, metadata)
    peak = phases(x, arch, calibration).peak
    margin = np.array([float(r["margin_limit_mib"]) for r in rows])
    labels = label_of(np.nan_to_num(peak, nan=np.inf), x["device_capacity_mib"], margin)
    return [str(v) for v in labels], [float(p) if np.isfinite(p) else None for p in peak]


def nested_folds(grid: Grid) -> list[FoldResult]:
    """Every leave-one-family-out fold with its form chosen on the training families only."""
    every = grid.models()
    out = []
    for family, held in grid.family_models(every).items():
        train = every - held
        form, inner = grid.select(train)
        test = grid.pool & np.isin(grid.data.model, sorted(held))
        index = np.flatnonzero(test)
        index = index[np.argsort([grid.data.rows[i]["configuration_id"] for i in index])]
        peak = grid.peak(train, form)[index]
        margin = np.array([float(grid.data.rows[i]["margin_limit_mib"]) for i in index])
        labels = label_of(np.nan_to_num(peak, nan=np.inf), grid.data.x["device_capacity_mib"][index], margin)
        outer = {f: grid.score(train, f, test, inner[f].band_mib) for f in grid.forms}
        out.append(
            FoldResult(
                family,
                form,
                grid.calibration(train, form),
                index,
                [str(grid.data.rows[i]["configuration_id"]) for i in index],
                [str(v) for v in labels],
                [float(p) if np.isfinite(p) else None for p in peak],
                outer[form],
                inner,
                outer,
            )
        )
    return out


def _fold_errors(grid: Grid, folds: Sequence[FoldResult]) -> tuple[list[float], list[float]]:
    """(absolute held-out peak errors in MiB, held-out relative under-predictions of the token phases' stages)."""
    absolute, under = [], []
    for f in folds:
        train = grid.models() - frozenset(str(m) for m in grid.data.model[f.index])
        truth = grid.data.peak[f.index]
        peak = np.array([np.nan if p is None else p for p in f.peaks])
        ok = np.isfinite(truth) & np.isfinite(peak) & grid.data.completed[f.index]
        absolute += list(np.abs(peak[ok] - truth[ok]))
        predicted = grid.phase_peaks(train, f.form)
        for stage in TOKEN_TERMS:
            rows, observed = grid.data.stages[stage]
            keep = np.isin(rows, f.index)
            value = predicted[rows[keep], PHASES.index(stage)]
            under += list(np.maximum(0.0, (observed[keep] - value) / observed[keep])[np.isfinite(value)])
    return absolute, under


def band_model(
    grid: Grid, folds: Sequence[FoldResult], outs: Sequence[ModelOut], exclude: str | None = None
) -> BandModel:
    """The band's figures from the held-out evidence, without that of model ``exclude`` (None: all of it)."""
    models = grid.models() - ({exclude} if exclude else set())
    used = [f for f in folds if exclude not in {str(m) for m in grid.data.model[f.index]}]
    absolute, under = _fold_errors(grid, used)
    others = [o for o in outs if o.model_id != exclude]
    relative = [abs(e) for o in others for e in o.one_step_errors]
    excess = [e for o in others for e in o.multi_step_excess_mib]
    pool = np.flatnonzero(grid.pool)
    _, _, tok_actor, tok_score = tokens_of(grid.data.x.take(pool), grid.data.arch.take(pool))
    sizes = [float(p) for p, m in zip(grid.data.arch.p[pool], grid.data.model[pool]) if m in models]
    return BandModel(
        in_domain_mib=quantile(absolute),
        model_share=quantile(relative),
        token_share=quantile(under),
        device_share=0.0,
        horizon_mib=max(0.0, quantile(excess)),
        models=tuple(sorted(models)),
        sizes=(min(sizes), max(sizes)),
        tokens_max={"actor_update": float(np.max(tok_actor)), "reference_logprob": float(np.max(tok_score))},
        capacity_mib=float(np.median(grid.data.x["device_capacity_mib"][pool])),
        evidence={
            IN_DOMAIN: len(absolute),
            MODEL_PART: len(relative),
            TOKENS_PART: len(under),
            HORIZON_PART: len(excess),
        },
    )


def with_device_share(
    band: BandModel,
    calibration: Calibration,
    metadata: Mapping[str, Mapping[str, Any]],
    documented: Sequence[Documented],
) -> BandModel:
    """``band`` with its device share: the largest share any documented failure on another device needs, under
    any filling of what its source leaves unsaid."""
    failed = [p for d in documented if not d.ran for p in d.plans() if p["device_capacity_mib"] != band.capacity_mib]
    count = sum(1 for d in documented if not d.ran)
    if not failed:
        return replace(band, evidence={**band.evidence, DEVICE_PART: 0})
    x, arch = rows_inputs(failed, metadata)
    model = phases(x, arch, calibration)
    needed = device_share_needed(model, x, arch, [str(p["model_id"]) for p in failed], band)
    share = float(np.max(np.where(model.known, needed, 0.0)))
    return replace(band, device_share=share, evidence={**band.evidence, DEVICE_PART: count})


@dataclass(frozen=True)
class ModelRecord:
    """The model the advisor answers with: the form chosen by the inner folds on all three families, calibrated
    on the whole pool; its nested folds, its leave-one-model-out record and its band's figures."""

    calibration: Calibration
    selection: Mapping[Form, Score]
    folds: list[FoldResult]
    band: BandModel
    models_out: list[ModelOut]
    grid: Grid

    @property
    def band_mib(self) -> float:
        """The in-domain band (MiB): what every plan's band starts from."""
        return self.band.in_domain_mib

    def fold_summary(self, pool: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Per held-out family: labels right, approved failures, usable rejected (nested)."""
        truth = {r["configuration_id"]: r["observed_state"] for r in pool}
        out = {}
        for f in self.folds:
            observed = [truth[i] for i in f.ids]
            out[f.family] = {
                "form": f.form.name,
                "correct": sum(a == b for a, b in zip(f.labels, observed)),
                "targets": len(f.ids),
                "approvals_that_failed": sum(a == WITHIN and b != WITHIN for a, b in zip(f.labels, observed)),
                "usable_rejected": sum(a != WITHIN and b == WITHIN for a, b in zip(f.labels, observed)),
            }
        return out


def model_record(
    pool: Sequence[Mapping[str, Any]],
    stages: Sequence[Mapping[str, Any]],
    metadata: Mapping[str, Mapping[str, Any]],
    others: Sequence[Mapping[str, Any]] = (),
    documented: Sequence[Documented] = DOCUMENTED,
) -> ModelRecord:
    """Choose and calibrate on the ``pool`` (rows with ``completed`` and ``model_family_coarse``), with the nested
    folds, the leave-one-model-out check over the pool's models and the ``others`` measured (configurations with
    outcomes; their models' metadata in ``metadata``), and the band calibrated from all of it."""
    rows = [*pool, *others]
    data = measured(rows, stages, metadata)
    grid = Grid(data, np.arange(len(rows)) < len(pool))
    every = grid.models()
    form, selection = grid.select(every)
    calibration = grid.calibration(every, form)
    folds = nested_folds(grid)
    first = leave_one_model_out(grid)
    band = with_device_share(band_model(grid, folds, first), calibration, metadata, documented)
    outs = with_band(grid, first, lambda m: replace(band_model(grid, folds, first, m), device_share=band.device_share))
    return ModelRecord(calibration, selection, folds, band, outs, grid)
