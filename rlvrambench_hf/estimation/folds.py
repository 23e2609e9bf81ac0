"""The fitting pool, the leave-one-family-out retrospective and the prospective predictions (ESTIMATION.md §1–§7).

:func:`fitting_pool` builds the 90 historical configurations (settings joined to outcomes, with features);
:func:`retrospective` fits the references on each fold's 60 training rows and scores their predictions on the 30
held-out ones (and, side by side, any user estimator); :func:`final_fit` and :func:`prospective` are the fit on
all 90 and the predictions for planned targets. Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..data.schema.pins import OUTCOME_LABELS
from ..errors import InputError, quote
from ..scoring.estimators import estimator_scores
from .features import coarse_family, feature_matrix
from .references import METHODS, Examples, FittedReferences, evidence_cost, fit_references

POOL_STUDIES: tuple[str, ...] = ("boundary", "four_gpu")
REPEATS = 3
COST_INTERPRETATION = (
    "Evidence acquisition behind the predictions (deduplicated configurations, eligible processes and recorded "
    "attempts), not demonstrated GPU-time savings; existing measurements cost no new GPU time."
)
#: A user's estimator run on one fold: (training rows, test rows) → {"predicted_state": [...], "predicted_peak_mib"}.
EstimatorRun = Callable[[Examples, Examples], Mapping[str, list]]


def fitting_pool(
    configurations: Sequence[Mapping],
    outcomes: Sequence[Mapping],
    metadata: Mapping[str, Mapping],
    source_ids: Sequence[str] | None = None,
) -> Examples:
    """The pool of studies ``boundary`` and ``four_gpu``: settings joined to outcomes, sorted by id, checked."""
    outcome_of = {o["configuration_id"]: o for o in outcomes}
    rows = []
    for c in sorted((c for c in configurations if c["study"] in POOL_STUDIES), key=lambda c: c["configuration_id"]):
        o = outcome_of.get(c["configuration_id"])
        if o is None:
            raise InputError(f"configuration {c['configuration_id']} has no outcome")
        row = {**c, **o}
        if (row["eligible_processes"], row["distinct_seeds"]) != (REPEATS, REPEATS):
            raise InputError(f"pool configuration {row['configuration_id']} lacks three eligible distinct seeds")
        if row["observed_state"] not in OUTCOME_LABELS:
            raise InputError(f"pool configuration {row['configuration_id']} has label {quote(row['observed_state'])}")
        row["completed"] = row["completed_eligible_processes"] == REPEATS
        if row["completed"] == (row["observed_state"] == "memory_failure"):
            raise InputError(f"pool configuration {row['configuration_id']}: completion disagrees with its label")
        row["model_family_coarse"] = coarse_family(row["model_id"])
        rows.append(row)
    ids = [r["configuration_id"] for r in rows]
    if source_ids is not None and sorted(source_ids) != ids:
        extra, missing = sorted(set(ids) - set(source_ids)), sorted(set(source_ids) - set(ids))
        raise InputError(
            f"fitting pool differs from the protocol's allowlist: extra {extra[:3]}, missing {missing[:3]}"
        )
    return Examples(tuple(rows), feature_matrix(rows, metadata))


def fold_names(pool: Examples) -> list[str]:
    """The held-out families in sorted order."""
    families = {r["model_family_coarse"] for r in pool.rows}
    if None in families:
        raise InputError("the fitting pool holds a model outside the known families")
    return sorted(families)


def split(pool: Examples, family: str) -> tuple[Examples, Examples]:
    """(training, test): the rows of the other families and the rows of ``family``."""
    held_out = [r["model_family_coarse"] == family for r in pool.rows]
    return pool.subset([not h for h in held_out]), pool.subset(held_out)


def parameters_of(metadata: Mapping[str, Mapping]) -> dict[str, int]:
    """Floating checkpoint elements of each model."""
    return {model: int(m["floating_checkpoint_elements"]) for model, m in metadata.items()}


def score_rows(rows: Sequence[Mapping], truth: Mapping[str, Mapping], methods: Sequence[str]) -> dict:
    """Per-method scores (§6) of prediction rows against the truth rows of their targets."""
    scores = {}
    for method in methods:
        mine = [r for r in rows if r["method"] == method]
        ids = [r["configuration_id"] for r in mine]
        scores[method] = estimator_scores(
            ids,
            [r["predicted_state"] for r in mine],
            [truth[i]["observed_state"] for i in ids],
            predicted_peaks_mib=[r["predicted_peak_mib"] for r in mine],
            observed_peaks_mib=[truth[i]["max_completed_run_peak_mib"] for i in ids],
            guard_changed=[r.get("startup_guard_changed_state") for r in mine],
        )
    return scores


def source_cost(training: Examples, donor_ids: Sequence[str]) -> dict:
    """The evidence behind a fold: the full permitted pool and the distinct donors actually copied."""
    by_id = {r["configuration_id"]: r for r in training.rows}
    donors = sorted(set(donor_ids))
    return {
        "full_permitted_fitting_pool": _cost(training.ids, [by_id[i] for i in training.ids]),
        "distinct_selected_donors": _cost(donors, [by_id[i] for i in donors]),
        "interpretation": COST_INTERPRETATION,
    }


def retrospective(
    pool: Examples, parameters: Mapping[str, int], estimators: Mapping[str, EstimatorRun] | None = None
) -> dict:
    """Every fold (§7): fitted parameters, 90 prediction rows, per-method scores and source costs.

    ``estimators`` are users' estimators by name; each is run on the same training and test rows and scored
    beside the references (its rows are under ``user_predictions``).
    """
    truth = {r["configuration_id"]: r for r in pool.rows}
    folds = {}
    for family in fold_names(pool):
        training, test = split(pool, family)
        fitted = fit_references(training, parameters)
        rows = fitted.predict(test)
        scores = score_rows(rows, truth, METHODS)
        fold: dict = {"model": fitted.model_fields(), "predictions": rows, "scores": scores}
        if estimators:
            user_rows = []
            for name, run in estimators.items():
                result = run(training, test)
                user_rows += [
                    {"configuration_id": cid, "method": name, "predicted_state": s, "predicted_peak_mib": p}
                    for cid, s, p in zip(test.ids, result["predicted_state"], result["predicted_peak_mib"])
                ]
            scores.update(score_rows(user_rows, truth, list(estimators)))
            fold["user_predictions"] = user_rows
        donors = [r["donor_configuration_id"] for r in rows if r["method"] == METHODS[0]]
        fold["source_cost"] = source_cost(training, donors)
        folds[family] = fold
    return {"folds": folds}


def final_fit(pool: Examples, parameters: Mapping[str, int]) -> FittedReferences:
    """The references fitted on the whole pool."""
    return fit_references(pool, parameters)


def prospective(fitted: FittedReferences, targets: Examples) -> tuple[list[dict], dict]:
    """(prediction rows in target order, the fitted-model record with the targets' source cost)."""
    rows = fitted.predict(targets)
    donors = [r["donor_configuration_id"] for r in rows if r["method"] == METHODS[0]]
    return rows, {**fitted.model_fields(), "source_cost": source_cost(fitted.training, donors)}


def fold_table(report: Mapping) -> list[dict]:
    """One row per fold and method: correct labels and approvals by observed label (the card's story)."""
    out = []
    for family, fold in report["folds"].items():
        for method, s in fold["scores"].items():
            out.append(
                {
                    "fold": family,
                    "method": method,
                    "correct": s["correct_three_state"],
                    "queries": s["queries"],
                    "approved": s["approved"],
                    "approved_within_margin": s["approved_within_margin"],
                    "approved_above_margin": s["approved_above_margin"],
                    "approved_memory_failure": s["approved_memory_failure"],
                    "rejected_within_margin": s["rejected_within_margin"],
                    "peak_mae_mib": s["completed_peak_mae_mib"],
                }
            )
    return out


def _cost(ids: Sequence[str], rows: Sequence[Mapping]) -> dict:
    return {"configuration_ids": list(ids), "configurations": len(ids), **evidence_cost(rows)}
