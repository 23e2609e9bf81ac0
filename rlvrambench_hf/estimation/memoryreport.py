"""The retrospective's ``memory_model`` section: how the per-phase model's form was chosen in each fold
(``selection``), every candidate form with its inner and outer scores (``forms``), the nested scores beside the
best-of-forms figure, the leave-one-model-out check (``leave_one_model_out``), the band's calibrated figures and
the calibrated coefficients with their spread over the folds (pure: a :class:`~rlvrambench_hf.memory.band.ModelRecord`
in, JSON-ready mappings out)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..memory.band import ModelRecord
from ..memory.calibrate import Calibration
from ..memory.forms import DESIGN_NOTE_FORM, TOKEN_SHARE_LIMITS, Form
from ..memory.select import Score
from .physical import FORM_NOTE

CRITERION = (
    "approved_memory_failure (fewest)",
    "approved_above_margin (fewest)",
    "mean relative error over held-out configuration and stage peaks (smallest)",
    "rejected_within_margin (fewest)",
    "correct (most)",
    "earlier candidate",
)
BEST_OF_FORMS = (
    "per fold, the candidate with the most correct labels on the held-out family itself (then the criterion): "
    "chosen after seeing that family, so not a held-out figure"
)


def memory_model_report(record: ModelRecord) -> dict[str, Any]:
    """The ``memory_model`` section of the retrospective."""
    grid = record.grid
    every = grid.models()
    names = sorted(grid.family_models(every))
    families = {f.family: [n for n in names if n != f.family] for f in record.folds}
    selection: dict[str, Any] = {
        f.family: {
            "training_families": families[f.family],
            "chosen": f.form.name,
            "candidates": [{"form": form.name, **score.as_dict()} for form, score in f.inner.items()],
        }
        for f in record.folds
    }
    selection["final"] = {
        "training_families": sorted(grid.family_models(every)),
        "chosen": record.calibration.form.name,
        "candidates": [{"form": form.name, **score.as_dict()} for form, score in record.selection.items()],
    }
    forms = [
        {
            **form.describe(),
            "chosen_in": [f.family for f in record.folds if f.form == form]
            + (["final"] if record.calibration.form == form else []),
            "inner": {f.family: f.inner[form].as_dict() for f in record.folds},
            "outer": {f.family: f.outer[form].as_dict() for f in record.folds},
            "outer_total": _total([f.outer[form] for f in record.folds]),
        }
        for form in grid.forms
    ]
    best = {}
    for f in record.folds:
        form = min(grid.forms, key=lambda c: (-f.outer[c].correct, f.outer[c].key, grid.forms.index(c)))
        best[f.family] = {"form": form.name, **f.outer[form].as_dict()}
    return {
        "form_note": FORM_NOTE,
        "criterion": list(CRITERION),
        "chosen_form": record.calibration.form.describe(),
        "nested": {f.family: {"form": f.form.name, **f.score.as_dict()} for f in record.folds},
        "best_of_forms": {"note": BEST_OF_FORMS, "folds": best},
        "first_form": {
            "form": DESIGN_NOTE_FORM.name,
            "folds": {f.family: f.outer[DESIGN_NOTE_FORM].as_dict() for f in record.folds},
        },
        "selection": selection,
        "forms": forms,
        "leave_one_model_out": {o.model_family: o.as_dict() for o in record.models_out},
        "band": record.band.describe(),
        "coefficients": coefficients(record),
    }


def _models(record: ModelRecord, family: str) -> list[str]:
    fold = next(f for f in record.folds if f.family == family)
    return sorted({str(m) for m in record.grid.data.model[fold.index]})


def _total(scores: list[Score]) -> dict[str, Any]:
    total = Score()
    for s in scores:
        total = total + s
    return total.as_dict()


def _spread(final: float, folds: Mapping[str, float]) -> dict[str, Any]:
    """A coefficient on all three families and per fold (None where a fold's training rows have none of it)."""
    per = {k: (round(v, 6) if math.isfinite(v) else None) for k, v in folds.items()}
    values = [final, *(v for v in per.values() if v is not None)]
    return {"final": round(final, 6), "folds": per, "low": round(min(values), 6), "high": round(max(values), 6)}


def coefficients(record: ModelRecord) -> dict[str, Any]:
    """The final form's calibrated coefficients on all three families and on each fold's two, with their range;
    the token shares (as measured and within their limits) of the same form with calibrated token terms."""
    grid, final = record.grid, record.calibration.form
    every = grid.models()
    trains = {f.family: every - frozenset(_models(record, f.family)) for f in record.folds}

    def each(form: Form) -> tuple[Calibration, dict[str, Calibration]]:
        return grid.calibration(every, form), {k: grid.calibration(t, form) for k, t in trains.items()}

    cal, by_fold = each(final)
    out: dict[str, Any] = {
        "form": final.name,
        "runtime_per_workload": {
            w: _spread(v, {k: c.per_workload.get(w, float("nan")) for k, c in by_fold.items()})
            for w, v in cal.per_workload.items()
        },
        "mib_per_sequence": _spread(cal.mib_per_sequence, {k: c.mib_per_sequence for k, c in by_fold.items()}),
        "weight_sync_extra_mib": _spread(cal.sync_extra, {k: c.sync_extra for k, c in by_fold.items()}),
    }
    tokens = Form(final.runtime, final.statistic, final.logit_bytes, "per_workload")
    cal, by_fold = each(tokens)
    out["token_shares"] = {
        "form": tokens.name,
        "limits": list(TOKEN_SHARE_LIMITS),
        "used_by_final_form": final.tokens == "per_workload",
        "phases": {
            phase: {
                w: {
                    "share": _spread(
                        v, {k: c.token_scale.get(phase, {}).get(w, float("nan")) for k, c in by_fold.items()}
                    ),
                    "measured": _spread(
                        cal.token_measured[phase][w],
                        {k: c.token_measured.get(phase, {}).get(w, float("nan")) for k, c in by_fold.items()},
                    ),
                }
                for w, v in shares.items()
            }
            for phase, shares in cal.token_scale.items()
        },
    }
    return out
