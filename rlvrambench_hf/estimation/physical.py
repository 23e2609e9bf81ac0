"""The per-phase memory model (:mod:`rlvrambench_hf.memory`) as a fourth method under the comparison's folds, and
the record of how its form was chosen.

:class:`PhysicalModel` is an estimator like a user's (``fit(training)``, ``predict(targets)``): it chooses its form
by an inner leave-one-family-out on the training families only and calibrates it on the training fold's
configurations and their stage measurements only, so the held-out family's peaks, stages and labels never reach
its predictions; the fold scores of ``physical_model`` are these nested scores.
``rlvrambench estimate compare --estimator rlvrambench_hf.estimation.physical:PhysicalModel`` scores it beside the
references (``form=NAME`` fixes one candidate form instead). :func:`memory_evidence` gathers what the model's
record reads from a release; :func:`memory_model_report` is the retrospective's ``memory_model`` section.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..data.sources.resolve import SourceLike
from ..memory.band import ModelRecord, model_record, predict_rows
from ..memory.fit import fit, fit_on, measured
from ..memory.forms import CANDIDATES, DESIGN_NOTE_FORM, Form, form_named
from ..memory.select import Grid, label_of
from .references import MODEL, Examples

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from ..data.sources.base import Source

METHOD = MODEL
#: The model outside the pool whose sizes come from the config.json facts the package ships.
UNPOOLED_MODELS = ("Qwen/Qwen2.5-1.5B-Instruct",)
#: What the score file says about the form.
FORM_NOTE = (
    "the form (runtime scale, statistic, bytes per logit element, token calibration) is chosen by an inner "
    "leave-one-family-out on each fold's training families alone, from the candidates under memory_model.forms; "
    "the published fold scores are those nested scores. Criterion, in order: fewest approved memory failures, "
    "fewest approved above-margin runs, smallest mean relative error over the held-out configuration and stage "
    "peaks, fewest usable settings rejected, most correct labels; ties to the earlier candidate. The candidates "
    "themselves (and the criterion) were written after the release's labels were public."
)


class ReleaseInputs(Protocol):
    """What :func:`memory_evidence` reads of the comparison's inputs (:class:`~.api.EstimationInputs`)."""

    @property
    def source(self) -> Source: ...

    @property
    def metadata(self) -> Mapping[str, Mapping[str, Any]]: ...

    @property
    def pool(self) -> Examples: ...

    @property
    def targets(self) -> Examples: ...


class PhysicalModel:
    """The memory model as an estimator of the comparison: its form chosen by the inner folds on the training
    families (``form``: a candidate's name fixes it instead)."""

    def __init__(self, source: SourceLike = None, form: str | Form | None = None) -> None:
        self.source = source
        self.form = form_named(form) if isinstance(form, str) else form

    def fit(self, training: pd.DataFrame, context: object = None) -> PhysicalModel:
        """Choose the form and calibrate on ``training`` and the stage measurements of its configurations only;
        the release is ``source``, else the one the comparison's ``context`` names."""
        import numpy as np

        from ..data.tables.reader import load_table

        if self.source is None and getattr(context, "source", None):
            self.source = context.source  # type: ignore[attr-defined]
        metadata = {r["model_id"]: r for r in load_table("model_metadata", self.source).to_pylist()}
        rows = cast("list[dict[str, Any]]", training.to_dict("records"))
        ids = {r["configuration_id"] for r in rows}
        stages = load_table("stage_measurements", self.source, decode=True).to_pylist()
        mine = [s for s in stages if s["configuration_id"] in ids]
        self.metadata = metadata
        if self.form is not None:
            self.chosen, self.calibration = self.form, fit(rows, mine, metadata, self.form)
            return self
        grid = Grid(measured(rows, mine, metadata), np.ones(len(rows), dtype=bool))
        every = grid.models()
        self.chosen, _ = grid.select(every)
        self.calibration = fit_on(grid.data, grid.pool, self.chosen)
        return self

    def predict(self, targets: pd.DataFrame) -> dict[str, Any]:
        labels, peaks = predict_rows(
            cast("list[dict[str, Any]]", targets.to_dict("records")), self.calibration, self.metadata
        )
        return {"predicted_state": labels, "predicted_peak_mib": peaks}


def memory_evidence(
    inputs: ReleaseInputs,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """What the model's record reads from a release: (pool rows, stage measurements, model metadata with the
    unpooled models' shipped config.json facts, the other measured configurations: every configuration outside
    the pool with its outcome, and the larger-model targets with their resolved labels)."""
    from ..data.tables.reader import load_table
    from .hubmeta import architecture_metadata
    from .knownconfigs import KNOWN_CONFIGS

    source = inputs.source
    stages = load_table("stage_measurements", source, decode=True).to_pylist()
    metadata = {m: dict(v) for m, v in inputs.metadata.items()}
    for model in UNPOOLED_MODELS:
        metadata.setdefault(model, architecture_metadata(model, KNOWN_CONFIGS[model]))
    pool = [dict(r) for r in inputs.pool.rows]
    ids = {r["configuration_id"] for r in pool}
    every = load_table("all_configurations", source, decode=True).to_pylist()
    others = [r for r in every if r["configuration_id"] not in ids]
    larger = load_table("larger_model_configurations", source, decode=True).to_pylist()
    outcomes = {r["configuration_id"]: r for r in larger}
    for target in inputs.targets.rows:
        outcome = outcomes.get(target["configuration_id"])
        if outcome is not None:
            others.append({**target, "observed_state": outcome["observed_state"], "max_completed_run_peak_mib": None})
    return pool, stages, metadata, others


def record_of(inputs: ReleaseInputs) -> ModelRecord:
    """The model's record on a release's inputs (:func:`~rlvrambench_hf.memory.band.model_record`)."""
    return model_record(*memory_evidence(inputs))


def physical_record(
    pool: Sequence[Mapping[str, Any]],
    stages: Sequence[Mapping[str, Any]],
    metadata: Mapping[str, Mapping[str, Any]],
    form: Form | None = None,
) -> dict[str, dict[str, Any]]:
    """Per fold, the model's scores (the references' metrics): nested (``form`` None) or of one fixed form."""
    import numpy as np

    from .folds import score_rows

    truth = {r["configuration_id"]: r for r in pool}
    grid = Grid(measured(pool, stages, metadata), np.ones(len(pool), dtype=bool))
    every = grid.models()
    scores = {}
    for family, held in grid.family_models(every).items():
        train = every - held
        chosen = grid.select(train)[0] if form is None else form
        index = np.flatnonzero(np.isin(grid.data.model, sorted(held)))
        peak = grid.peak(train, chosen)[index]
        margin = np.array([float(grid.data.rows[i]["margin_limit_mib"]) for i in index])
        labels = label_of(np.nan_to_num(peak, nan=np.inf), grid.data.x["device_capacity_mib"][index], margin)
        rows = [
            {
                "configuration_id": grid.data.rows[i]["configuration_id"],
                "method": METHOD,
                "predicted_state": str(label),
                "predicted_peak_mib": float(p) if np.isfinite(p) else None,
            }
            for i, label, p in zip(index, labels, peak)
        ]
        scores[family] = score_rows(rows, truth, [METHOD])[METHOD]
        scores[family]["completed_peak_mape_percent"] = _mape(rows, truth)
        scores[family]["form"] = chosen.name
    return scores


def _mape(rows: Sequence[Mapping[str, Any]], truth: Mapping[str, Mapping[str, Any]]) -> float | None:
    errors = [
        abs(r["predicted_peak_mib"] - truth[r["configuration_id"]]["max_completed_run_peak_mib"])
        / truth[r["configuration_id"]]["max_completed_run_peak_mib"]
        for r in rows
        if r["predicted_peak_mib"] is not None and truth[r["configuration_id"]]["completed"]
    ]
    return 100.0 * sum(errors) / len(errors) if errors else None


def prospective_physical(
    pool: Sequence[Mapping[str, Any]],
    stages: Sequence[Mapping[str, Any]],
    metadata: Mapping[str, Mapping[str, Any]],
    targets: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """The model chosen and calibrated on all the pool's configurations and their stages, on the targets."""
    calibration = model_record(pool, stages, metadata).calibration
    labels, peaks = predict_rows(targets, calibration, metadata)
    return [
        {"configuration_id": t["configuration_id"], "method": METHOD, "predicted_state": s, "predicted_peak_mib": p}
        for t, s, p in zip(targets, labels, peaks)
    ]


__all__ = ["CANDIDATES", "DESIGN_NOTE_FORM", "FORM_NOTE", "PhysicalModel", "memory_evidence", "physical_record"]
