"""The per-phase memory model (:mod:`rlvrambench_hf.memory`) as a fourth method under the comparison's folds.

:class:`PhysicalModel` is an estimator like a user's (``fit(training)``, ``predict(targets)``): its calibrated
terms are fitted on the training fold's configurations and on the stage measurements of those configurations
only, so the held-out family's peaks and stages never reach its predictions.
``rlvrambench estimate compare --estimator rlvrambench_hf.estimation.physical:PhysicalModel`` scores it beside
the three references; :func:`physical_record` gives its fold scores directly, for the final form and for the
simplest form fixed in advance.

Chosen after seeing all 90 configurations (as the card says of the references): the runtime term's scale
``H × (L + 1)`` (the form fixed in advance is one constant per workload), the median as its statistic, and 2 bytes
per logit element.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..data.sources.resolve import SourceLike
from ..memory.band import FoldResult, folds, predict_rows
from ..memory.calibrate import A_PRIORI_FORM, FINAL_FORM
from ..memory.fit import fit
from .folds import score_rows
from .references import MODEL

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

METHOD = MODEL
#: What the score file says about the form.
FORM_NOTE = (
    "choices of form made after seeing all 90 configurations: the runtime term's scale hidden x (layers + 1) "
    "(the a-priori form is one constant per workload), the median as its statistic, 2 bytes per logit element, "
    "and the token phases' memory calibrated per workload on the training families' actor-update and log-prob "
    "stage measurements (both forms)"
)


class PhysicalModel:
    """The memory model as an estimator of the comparison (``form``: ``hidden_layers`` or ``constant``)."""

    def __init__(self, source: SourceLike = None, form: str = FINAL_FORM) -> None:
        self.source, self.form = source, form

    def fit(self, training: pd.DataFrame, context: object = None) -> PhysicalModel:
        """Calibrate on ``training`` and the stage measurements of its configurations only; the release is
        ``source``, else the one the comparison's ``context`` names."""
        from ..data.tables.reader import load_table

        if self.source is None and getattr(context, "source", None):
            self.source = context.source  # type: ignore[attr-defined]
        metadata = {r["model_id"]: r for r in load_table("model_metadata", self.source).to_pylist()}
        rows = cast("list[dict[str, Any]]", training.to_dict("records"))
        ids = {r["configuration_id"] for r in rows}
        stages = load_table("stage_measurements", self.source, decode=True).to_pylist()
        self.metadata = metadata
        self.calibration = fit(rows, [s for s in stages if s["configuration_id"] in ids], metadata, self.form)
        return self

    def predict(self, targets: pd.DataFrame) -> dict[str, Any]:
        labels, peaks = predict_rows(
            cast("list[dict[str, Any]]", targets.to_dict("records")), self.calibration, self.metadata
        )
        return {"predicted_state": labels, "predicted_peak_mib": peaks}


def physical_record(
    pool: Sequence[Mapping[str, Any]],
    stages: Sequence[Mapping[str, Any]],
    metadata: Mapping[str, Mapping[str, Any]],
    form: str = FINAL_FORM,
) -> tuple[dict[str, dict[str, Any]], list[FoldResult]]:
    """Per fold, the model's scores (the references' metrics) and the fold results."""
    truth = {r["configuration_id"]: r for r in pool}
    results = folds(pool, stages, metadata, form)
    scores = {}
    for f in results:
        rows = [
            {"configuration_id": i, "method": METHOD, "predicted_state": s, "predicted_peak_mib": p}
            for i, s, p in zip(f.ids, f.labels, f.peaks)
        ]
        scores[f.family] = score_rows(rows, truth, [METHOD])[METHOD]
        scores[f.family]["completed_peak_mape_percent"] = _mape(rows, truth)
    return scores, results


def first_form_record(
    pool: Sequence[Mapping[str, Any]], stages: Sequence[Mapping[str, Any]], metadata: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Per fold, the scores of the simplest form, fixed before the final one (its runtime term one constant per
    workload), to stand beside the final form's."""
    scores, _ = physical_record(pool, stages, metadata, A_PRIORI_FORM)
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
    """The model calibrated on all the pool's configurations and their stages, on the prospective targets."""
    ids = {r["configuration_id"] for r in pool}
    calibration = fit(pool, [s for s in stages if s["configuration_id"] in ids], metadata)
    labels, peaks = predict_rows(targets, calibration, metadata)
    return [
        {"configuration_id": t["configuration_id"], "method": METHOD, "predicted_state": s, "predicted_peak_mib": p}
        for t, s, p in zip(targets, labels, peaks)
    ]
