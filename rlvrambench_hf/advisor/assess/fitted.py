"""The references fitted on the 90 pool configurations and their leave-one-family-out track record, kept between runs.

Fitting needs scipy (about 0.5 s to import) and the retrospective three more fits; both depend only on the
release's sealed inputs and the numerical stack. :func:`fitted_with_record` keeps the fitted parameters and the
per-method track record in the advisor's store (:mod:`..store`, huggingface_hub's assets folder), named by a digest
of the input files, the package and the stack's versions, and later runs rebuild the references from it with numpy
alone. A store that cannot be written only costs the next run a refit. (The whole context, :mod:`.context`, is
stored too; this entry spares the fits when only other files of the release changed.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import metadata as distributions
from typing import Any

import numpy as np

from ...data.schema.registry import get_spec
from ...data.sources.base import sha256_file
from ...errors import RLVRAMBenchError
from ...estimation.api import AMENDMENT, INPUT_CONFIGS, PROTOCOL, EstimationInputs
from ...estimation.features import FEATURE_NAMES
from ...estimation.logistic import CLASSES, LogisticClassifier
from ...estimation.references import METHODS, FittedReferences
from ...estimation.regression import ComponentRegression
from ..store import entry_name, read_entry, write_entry

#: The kind of the store's entries; bump :data:`FORMAT` when the stored structure changes.
KIND = "fit"
FORMAT = 2
STACK = ("numpy", "scipy", "scikit-learn", "rlvrambench-hf")


def fitted_with_record(inputs: EstimationInputs) -> tuple[FittedReferences, dict[str, Any]]:
    """The final fit and the track record of each method (see :func:`track_record`), from the store or computed."""
    name = _entry_name(inputs)
    stored = _read(name) if name else None
    if stored is not None:
        try:
            return _rebuild(inputs, stored), stored["track_record"]
        except (KeyError, TypeError, ValueError):
            pass
    from ...estimation.folds import final_fit, retrospective

    fitted = final_fit(inputs.pool, inputs.parameters)
    record = track_record(retrospective(inputs.pool, inputs.parameters))
    if name is not None:
        _write(name, fitted, record)
    return fitted, record


def track_record(report: Mapping[str, Any]) -> dict[str, Any]:
    """Per method, summed over the held-out families and per family: approvals, approvals that failed (memory
    failures and above-margin configurations approved) and usable (within-margin) settings rejected."""
    out: dict[str, Any] = {}
    for method in METHODS:
        folds = {}
        for family, fold in report["folds"].items():
            s = fold["scores"][method]
            folds[family] = {
                "targets": s["queries"],
                "approved": s["approved"],
                "approved_memory_failure": s["approved_memory_failure"],
                "approved_above_margin": s["approved_above_margin"],
                "usable_rejected": s["rejected_within_margin"],
                "correct": s["correct_three_state"],
            }
        total = {k: sum(f[k] for f in folds.values()) for k in next(iter(folds.values()))}
        total["approvals_that_failed"] = total["approved_memory_failure"] + total["approved_above_margin"]
        out[method] = {**total, "folds": folds}
    return out


def _entry_name(inputs: EstimationInputs) -> str | None:
    """The store's name of the fit of these inputs with this stack (None when a file or version cannot be read)."""
    try:
        parts = [f"{relpath}={sha256_file(inputs.source.path(relpath))}" for relpath in _input_paths()]
        parts += [f"{name}={distributions.version(name)}" for name in STACK]
    except (OSError, ValueError, RLVRAMBenchError, distributions.PackageNotFoundError):
        return None
    return entry_name(KIND, FORMAT, *parts)


def _input_paths() -> tuple[str, ...]:
    return (*(get_spec(config).path for config in INPUT_CONFIGS), PROTOCOL, AMENDMENT)


def _read(name: str) -> dict[str, Any] | None:
    entry = read_entry(name, KIND)
    if entry is None:
        return None
    try:
        data = json.loads(entry[1])
    except ValueError:
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def _write(name: str, fitted: FittedReferences, record: dict[str, Any]) -> None:
    c, r = fitted.classifier, fitted.regression
    data = {
        "format": FORMAT,
        "regression": {
            "divisors": r.divisors.tolist(),
            "coefficients_gib": r.coefficients_gib.tolist(),
            "residual_norm_gib": r.residual_norm_gib,
            "training_ids": list(fitted.regression_ids),
        },
        "classifier": {
            "scaler_mean": c.scaler_mean.tolist(),
            "scaler_scale": c.scaler_scale.tolist(),
            "classes": list(c.classes),
            "coefficients": c.coefficients.tolist(),
            "intercepts": c.intercepts.tolist(),
            "iterations": c.iterations,
        },
        "training_ids": fitted.training.ids,
        "track_record": record,
    }
    write_entry(name, KIND, {"format": FORMAT}, json.dumps(data, allow_nan=False).encode())  # unwritable: refit next


def _rebuild(inputs: EstimationInputs, stored: Mapping[str, Any]) -> FittedReferences:
    if stored["training_ids"] != inputs.pool.ids:
        raise ValueError("the stored fit is of another pool")
    r, c = stored["regression"], stored["classifier"]
    regression = ComponentRegression(
        np.array(r["divisors"], dtype=np.float64),
        np.array(r["coefficients_gib"], dtype=np.float64),
        float(r["residual_norm_gib"]),
    )
    classifier = LogisticClassifier(
        np.array(c["scaler_mean"], dtype=np.float64),
        np.array(c["scaler_scale"], dtype=np.float64),
        tuple(c["classes"]),
        np.array(c["coefficients"], dtype=np.float64),
        np.array(c["intercepts"], dtype=np.float64),
        int(c["iterations"]),
    )
    shapes = {
        "divisors": (regression.divisors.shape, (len(FEATURE_NAMES),)),
        "coefficients": (regression.coefficients_gib.shape, (len(FEATURE_NAMES) + 1,)),
        "scaler": (classifier.scaler_mean.shape + classifier.scaler_scale.shape, (len(FEATURE_NAMES),) * 2),
        "classifier": (classifier.coefficients.shape, (len(CLASSES), len(FEATURE_NAMES))),
        "intercepts": (classifier.intercepts.shape, (len(CLASSES),)),
    }
    arrays = (regression.divisors, regression.coefficients_gib, classifier.coefficients, classifier.intercepts)
    if any(found != wanted for found, wanted in shapes.values()) or classifier.classes != CLASSES:
        raise ValueError("the stored fit has another shape")
    if not all(np.isfinite(a).all() for a in arrays) or not (classifier.scaler_scale > 0).all():
        raise ValueError("the stored fit is not finite")
    return FittedReferences(inputs.pool, inputs.parameters, regression, tuple(r["training_ids"]), classifier)
