"""The fitting pool, the leave-one-family-out retrospective and the prospective predictions (ESTIMATION.md §1–§7).

:func:`fitting_pool` builds the 90 historical configurations (settings joined to outcomes, with features);
:func:`retrospective` fits the references on each fold's 60 training rows and scores their predictions on the 30
held-out ones (and, side by side, any user estimator); :func:`final_fit` and :func:`prospective` are the fit on
all 90 and the predictions for planned targets. Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..data.schema.pins import OUTCOME_LABELS
from ..errors import InputError, quote
from ..scoring.estimators import estimator_scores, peak_error_statistics
from .features import coarse_family, feature_matrix
from .references import METHODS, MODEL, Examples, FittedReferences, evidence_cost, fit_references

POOL_STUDIES: tuple[str, ...] = ("boundary", "four_gpu")
REPEATS = 3
COST_INTERPRETATION = (
    "Evidence acquisition behind the predictions (deduplicated configurations, eligible processes and recorded "
    "attempts), not demonstrated GPU-time savings; existing measurements cost no new GPU time."
)
#: A user's estimator run on one fold: (training rows, test rows) → {"predicted_state": [...], "predicted_peak_mib"}.
EstimatorRun = Callable[[Examples, Examples], Mapping[str, list[Any]]]


def fitting_pool(
    configurations: Sequence[Mapping[str, Any]],
    outcomes: Sequence[Mapping[str, Any]],
    metadata: Mapping[str, Mapping[str, Any]],
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


def parameters_of(metadata: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """Floating checkpoint elements of each model."""
    return {model: int(m["floating_checkpoint_elements"]) for model, m in metadata.items()}


def score_rows(
    rows: Sequence[Mapping[str, Any]], truth: Mapping[str, Mapping[str, Any]], methods: Sequence[str]
) -> dict[str, Any]:
    """Per-method scores (§6) of prediction rows against the truth rows of their targets
    (``startup_guard_changed_states`` only for methods whose rows carry the guard, the references')."""
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
        if not any("startup_guard_changed_state" in r for r in mine):
            del scores[method]["startup_guard_changed_states"]
    return scores


def common_peaks(
    rows: Sequence[Mapping[str, Any]], truth: Mapping[str, Mapping[str, Any]], methods: Sequence[str]
) -> dict[str, Any]:
    """Peak errors over the targets whose peak every method that predicts peaks predicted (and that have an
    observed peak): the fair comparison of ``completed_peak_mae_mib`` between methods of different coverage."""
    observed = {i for i, r in truth.items() if r["max_completed_run_peak_mib"] is not None}
    covered = {
        m: {r["configuration_id"] for r in rows if r["method"] == m and r["predicted_peak_mib"] is not None} & observed
        for m in methods
    }
    predicting = [m for m in methods if covered[m]]
    common = sorted(set.intersection(*(covered[m] for m in predicting))) if predicting else []
    errors = {}
    for m in predicting:
        peak = {r["configuration_id"]: r["predicted_peak_mib"] for r in rows if r["method"] == m}
        errors[m] = peak_error_statistics(
            [peak[i] for i in common], [truth[i]["max_completed_run_peak_mib"] for i in common]
        )
    return {"methods": predicting, "configuration_ids": common, "targets": len(common), "scores": errors}


def source_cost(training: Examples, donor_ids: Sequence[str]) -> dict[str, Any]:
    """The evidence behind a fold: the full permitted pool and the distinct donors actually copied."""
    by_id = {r["configuration_id"]: r for r in training.rows}
    donors = sorted(set(donor_ids))
    return {
        "full_permitted_fitting_pool": _cost(training.ids, [by_id[i] for i in training.ids]),
        "distinct_selected_donors": _cost(donors, [by_id[i] for i in donors]),
        "interpretation": COST_INTERPRETATION,
    }


#: What serves a fold's built-in part, given the fold's name and its compute: a copy of what the compute gives (e.g.
#: :func:`.api.run_retrospective`'s memo, which computes it once per release).
FoldMemo = Callable[[str, Callable[[], dict[str, Any]]], dict[str, Any]]


def retrospective(
    pool: Examples,
    parameters: Mapping[str, int],
    estimators: Mapping[str, EstimatorRun] | None = None,
    models: Mapping[str, EstimatorRun] | None = None,
    memo: FoldMemo | None = None,
) -> dict[str, Any]:
    """Every fold (§7): fitted parameters, the references' prediction rows, per-method scores and source costs.

    ``models`` are the package's own further methods (the memory model), run like estimators and listed with the
    references (their rows under ``predictions``); ``estimators`` are users' estimators by name, each run on the
    same training and test rows and scored beside them (its rows under ``user_predictions``). ``memo`` may serve a
    fold's built-in part (:func:`built_in_fold`: a function of the pool, ``parameters`` and ``models`` alone).
    """
    truth = {r["configuration_id"]: r for r in pool.rows}
    folds = {}
    for family in fold_names(pool):
        training, test = split(pool, family)
        user_rows = []  # the users' estimators first: one that fails does so before anything else is fitted
        for name, run in (estimators or {}).items():
            user_rows += _rows_of(name, test, run(training, test))

        def compute(training: Examples = training, test: Examples = test) -> dict[str, Any]:
            return built_in_fold(training, test, parameters, models or {}, truth)

        built = memo(family, compute) if memo is not None else compute()
        fold: dict[str, Any] = {k: built[k] for k in ("model", "predictions", "scores")}
        if estimators:
            fold["scores"].update(score_rows(user_rows, truth, list(estimators)))
            fold["user_predictions"] = user_rows
        fold["common_peaks"] = common_peaks([*fold["predictions"], *user_rows], truth, list(fold["scores"]))
        fold["source_cost"] = built["source_cost"]
        folds[family] = fold
    return {"folds": folds}


def built_in_fold(
    training: Examples,
    test: Examples,
    parameters: Mapping[str, int],
    models: Mapping[str, EstimatorRun],
    truth: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """One fold of the references and the package's ``models``: their fitted parameters, prediction rows, scores and
    the fold's source cost."""
    fitted = fit_references(training, parameters)
    rows = fitted.predict(test)
    for name, run in models.items():
        rows += _rows_of(name, test, run(training, test))
    scores = score_rows(rows, truth, [*METHODS, *models])
    donors = [r["donor_configuration_id"] for r in rows if r["method"] == METHODS[0]]
    return {
        "model": fitted.model_fields(),
        "predictions": rows,
        "scores": scores,
        "source_cost": source_cost(training, donors),
    }


def _rows_of(method: str, test: Examples, result: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    return [
        {"configuration_id": cid, "method": method, "predicted_state": s, "predicted_peak_mib": p}
        for cid, s, p in zip(test.ids, result["predicted_state"], result["predicted_peak_mib"])
    ]


def final_fit(pool: Examples, parameters: Mapping[str, int]) -> FittedReferences:
    """The references fitted on the whole pool."""
    return fit_references(pool, parameters)


def prospective(fitted: FittedReferences, targets: Examples) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(prediction rows in target order, the fitted-model record with the targets' source cost)."""
    rows = fitted.predict(targets)
    donors = [r["donor_configuration_id"] for r in rows if r["method"] == METHODS[0]]
    return rows, {**fitted.model_fields(), "source_cost": source_cost(fitted.training, donors)}


#: Why the three folds' spread is no interval about a new family.
THREE_FAMILIES = (
    "Three held-out families are three units: their spread shows how far a method moved from one family to "
    "another, but three families cannot support a claim about how it would do on a fourth (the interval of "
    "--intervals resamples configurations within a fold, which answers another question)."
)
#: The fold scores whose spread over the folds is reported.
SPREAD_METRICS: tuple[str, ...] = (
    "correct_three_state",
    "three_state_accuracy",
    "within_margin_recall",
    "within_margin_approval_precision",
    "approved_memory_failure",
    "approved_above_margin",
    "rejected_within_margin",
    "completed_peak_mae_mib",
)


def fold_table(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per fold and method, references and users' estimators side by side: correct labels, approvals
    by observed label, the peak error beside the number of peaks it covers and over the peaks every
    peak-predicting method predicted; ``startup_guard_changed_states`` on references only, the arguments on
    estimators only (any method the references list is a reference)."""
    described = report.get("estimators", {})
    out = []
    for family, fold in report["folds"].items():
        common = fold.get("common_peaks", {})
        for method, s in fold["scores"].items():
            row = {
                "fold": family,
                "held_out_family": family,
                "method": method,
                "kind": "reference" if method in METHODS else "memory model" if method == MODEL else "estimator",
                "correct": s["correct_three_state"],
                "queries": s["queries"],
                "approved": s["approved"],
                "approved_within_margin": s["approved_within_margin"],
                "approved_above_margin": s["approved_above_margin"],
                "approved_memory_failure": s["approved_memory_failure"],
                "rejected_within_margin": s["rejected_within_margin"],
                "peak_mae_mib": s["completed_peak_mae_mib"],
                "peaks": s["completed_peak_prediction_coverage"],
                "peak_mae_mib_common": common.get("scores", {}).get(method, {}).get("completed_peak_mae_mib"),
                "common_peaks": common.get("targets"),
            }
            if method in METHODS:
                row["startup_guard_changed_states"] = s.get("startup_guard_changed_states")
            elif method != MODEL:
                row["arguments"] = described.get(method, {}).get("arguments")
            out.append(row)
    return out


def across_folds(report: Mapping[str, Any]) -> dict[str, Any]:
    """Each method's scores per held-out family with their lowest and highest value, and
    :data:`THREE_FAMILIES`."""
    methods: dict[str, dict[str, Any]] = {}
    for family, fold in report["folds"].items():
        for method, s in fold["scores"].items():
            for metric in SPREAD_METRICS:
                methods.setdefault(method, {}).setdefault(metric, {"per_fold": {}})["per_fold"][family] = s.get(metric)
    for per_metric in methods.values():
        for entry in per_metric.values():
            values = [v for v in entry["per_fold"].values() if v is not None]
            entry["low"], entry["high"] = (min(values), max(values)) if values else (None, None)
    return {"unit": "held_out_family", "units": len(report["folds"]), "statement": THREE_FAMILIES, "methods": methods}


def _cost(ids: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"configuration_ids": list(ids), "configurations": len(ids), **evidence_cost(rows)}


#: Peak tolerance (MiB) when checking recomputed predictions against the published file.
PEAK_TOLERANCE_MIB = 1e-6


def check_against_published(rows: Sequence[Mapping[str, Any]], published: object) -> dict[str, Any]:
    """Labels, donors and every other field equal; peaks within :data:`PEAK_TOLERANCE_MIB`."""
    if not isinstance(published, list):
        return {"available": False}
    differences, largest = [], 0.0
    if len(published) != len(rows):
        differences.append(f"{len(rows)} rows recomputed, {len(published)} published")
    for mine, theirs in zip(rows, published):
        for key, value in theirs.items():
            if key == "predicted_peak_mib" and value is not None and mine.get(key) is not None:
                largest = max(largest, abs(mine[key] - value))
            elif mine.get(key) != value:
                differences.append(f"{theirs.get('configuration_id')} {theirs.get('method')} {key}")
    return {
        "available": True,
        "rows": len(published),
        "max_peak_difference_mib": largest,
        "differences": differences,
        "matches": not differences and largest <= PEAK_TOLERANCE_MIB,
    }
