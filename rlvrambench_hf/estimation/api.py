"""Where the estimator comparison meets a source: the typed inputs of a release, users' estimators and plans.

Inputs come through the registry (``configurations``, ``outcomes``, ``estimation_targets``, ``model_metadata``)
and the release's protocol with its amendment applied; the cores in :mod:`.folds` and :mod:`.advisor` do the work.
"""

from __future__ import annotations

import contextlib
import os
import platform
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from ..data.sources.base import Source
from ..data.sources.resolve import SourceLike, open_source
from ..errors import InputError, quote
from ..scoring.bounded import DEFAULT_TIMEOUT
from .advisor import BENCHMARK_HARDWARE, HARDWARE_SETTINGS, PLANNED_SETTINGS, Hardware, advise
from .features import FEATURE_NAMES, apply_amendment, feature_matrix
from .folds import final_fit, fitting_pool, parameters_of, prospective, retrospective, score_rows
from .logistic import CLASSIFIER_SETTINGS
from .references import Examples, FittedReferences

if TYPE_CHECKING:  # pragma: no cover
    from .user import Estimator

PROTOCOL = "benchmark/estimation/protocol.json"
AMENDMENT = "benchmark/estimation/amendment-01.json"
PUBLISHED_PREDICTIONS = "benchmark/estimation/predictions.json"
#: Peak tolerance (MiB) when checking recomputed predictions against the published file.
PEAK_TOLERANCE_MIB = 1e-6
#: Inputs read here whose SHA-256 the protocol seals (``input_sha256``); two are in no manifest.
SEALED_INPUTS = (
    "benchmark/configurations.csv",
    "benchmark/outcomes.csv",
    "benchmark/estimation/targets.csv",
    "benchmark/estimation/model_metadata.json",
)
#: Fold names of the comparison; "all" scores every fold.
ALL_FOLDS = "all"


@dataclass(frozen=True)
class EstimationInputs:
    """The comparison's inputs from one release."""

    pool: Examples
    metadata: Mapping[str, Mapping]
    targets: Examples
    protocol: Mapping
    source: Source

    @property
    def parameters(self) -> dict[str, int]:
        return parameters_of(self.metadata)


def load_inputs(source: SourceLike = None, revision: str | None = None) -> EstimationInputs:
    """Read and check the inputs: the 90-configuration pool, model metadata, targets and effective protocol."""
    from ..data.tables.reader import load_table

    src = open_source(source, revision)
    original, amendment = _json_object(src, PROTOCOL), _json_object(src, AMENDMENT)
    _check_sealed(src, PROTOCOL, amendment.get("base_protocol_sha256"), AMENDMENT)
    for relpath in SEALED_INPUTS:
        _check_sealed(src, relpath, original.get("input_sha256", {}).get(relpath), PROTOCOL)
    protocol = apply_amendment(original, amendment)
    if list(protocol.get("features", ())) != list(FEATURE_NAMES):
        raise InputError(f"{PROTOCOL}: the amended feature order differs from the implemented {FEATURE_NAMES}")
    classifier = protocol.get("classifier", {})
    differing = sorted(k for k, v in CLASSIFIER_SETTINGS.items() if k in classifier and classifier[k] != v)
    if differing:
        raise InputError(f"{PROTOCOL}: classifier settings {', '.join(differing)} differ from the implemented ones")
    metadata = {r["model_id"]: r for r in load_table("model_metadata", src).to_pylist()}
    pool = fitting_pool(
        load_table("configurations", src, decode=True).to_pylist(),
        load_table("outcomes", src, decode=True).to_pylist(),
        metadata,
        protocol.get("source_configuration_ids"),
    )
    target_rows = load_table("estimation_targets", src, decode=True).to_pylist()
    targets = Examples(tuple(target_rows), feature_matrix(target_rows, metadata))
    return EstimationInputs(pool, metadata, targets, protocol, src)


def numerical_environment() -> dict:
    """Versions of the numerical stack (the reference stack is in ``docs/estimation.md``)."""
    import numpy
    import scipy
    import sklearn

    return {
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "scikit_learn": sklearn.__version__,
        "platform": platform.platform(),
    }


def run_retrospective(
    source: SourceLike = None,
    revision: str | None = None,
    *,
    estimators: Mapping | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> dict:
    """The three leave-one-family-out folds (``retrospective.json``'s structure); ``estimators`` maps names to
    users' estimators (objects or ``module:attr`` specs) scored beside the references, each call into one within
    ``timeout`` seconds (None: no limit; a ``module:attr`` estimator runs in a child process stopped at the limit,
    an object you pass in a worker thread of your process)."""
    from .user import bind_estimator, estimator_run

    inputs = load_inputs(source, revision)
    with contextlib.ExitStack() as bound:
        runs = {}
        for name, given in (estimators or {}).items():
            user = bound.enter_context(
                bind_estimator(load_estimator(given, name, timeout=timeout), name, timeout=timeout)
            )
            runs[name] = estimator_run(user, name)
        folds = retrospective(inputs.pool, inputs.parameters, runs)
    return {**folds, "numerical_environment": numerical_environment()}


def run_final_fit(source: SourceLike = None, revision: str | None = None) -> tuple[FittedReferences, EstimationInputs]:
    """The references fitted on all 90 pool configurations, with the inputs they came from."""
    inputs = load_inputs(source, revision)
    return final_fit(inputs.pool, inputs.parameters), inputs


def run_prospective(source: SourceLike = None, revision: str | None = None) -> dict:
    """The final fit (``fitted_model.json``'s structure), the 36 prospective predictions and their check against
    the release's sealed ``predictions.json``."""
    fitted, inputs = run_final_fit(source, revision)
    rows, model = prospective(fitted, inputs.targets)
    published = inputs.source.read_json(PUBLISHED_PREDICTIONS) if inputs.source.has(PUBLISHED_PREDICTIONS) else None
    return {
        "fitted_model": {**model, "numerical_environment": numerical_environment()},
        "predictions": rows,
        "published_check": check_against_published(rows, published),
    }


def check_against_published(rows: Sequence[Mapping], published: object) -> dict:
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


def load_estimator(estimator: object, name: str, *, timeout: float | None = DEFAULT_TIMEOUT) -> Estimator:
    """An estimator object, or the one a ``module:attr`` spec names (a class is instantiated, within ``timeout``
    seconds)."""
    from ..scoring.user import load_object

    if isinstance(estimator, str):
        return cast("Estimator", load_object(estimator, "estimator", ("fit", "predict"), timeout=timeout))
    if not all(callable(getattr(estimator, m, None)) for m in ("fit", "predict")):
        raise InputError(f"estimator {name} has no fit and predict methods")
    return cast("Estimator", estimator)


def score_fold_predictions(
    configuration_ids: Sequence[str],
    predictions: Sequence[str],
    predicted_peaks_mib: Sequence[float | None] | Mapping[str, float | None] | None = None,
    *,
    fold: str = ALL_FOLDS,
    source: SourceLike = None,
    revision: str | None = None,
) -> dict:
    """Score a user's held-out predictions against the hidden fold labels, per fold, as the references are scored.

    ``fold`` is ``"all"`` (cover all 90 pool configurations) or one family (cover exactly its 30);
    ``predicted_peaks_mib`` is aligned with the ids or maps ids to peaks (an absent id has no peak).
    """
    from .folds import fold_names
    from .user import checked_predictions

    inputs = load_inputs(source, revision)
    families = fold_names(inputs.pool)
    if fold != ALL_FOLDS and fold not in families:
        raise InputError(f"unknown fold {quote(fold)}; choose {ALL_FOLDS} or one of: {', '.join(families)}")
    ids = [str(i).strip() for i in configuration_ids]
    if isinstance(predicted_peaks_mib, Mapping):
        peaks = [predicted_peaks_mib.get(i) for i in ids]
    else:
        peaks = list(predicted_peaks_mib) if predicted_peaks_mib is not None else [None] * len(ids)
    checked = checked_predictions(
        {"predicted_state": list(predictions), "predicted_peak_mib": peaks}, len(ids), "predictions"
    )
    family_of = {r["configuration_id"]: r["model_family_coarse"] for r in inputs.pool.rows}
    expected = {i for i, f in family_of.items() if fold in (ALL_FOLDS, f)}
    duplicates = sorted(i for i, n in Counter(ids).items() if n > 1)  # (ids.count per id would be quadratic)
    missing, unknown = sorted(expected - set(ids)), sorted(set(ids) - expected)
    if duplicates or missing or unknown:
        raise InputError(
            f"predictions must cover the {len(expected)} configurations of fold {fold} exactly once: "
            f"{len(missing)} missing, {len(unknown)} unexpected, {len(duplicates)} duplicated "
            f"(e.g. {quote((missing + unknown + duplicates)[0])})"
        )
    truth = {r["configuration_id"]: r for r in inputs.pool.rows}
    scores = {}
    for family in families:
        if fold not in (ALL_FOLDS, family):
            continue
        rows = [
            {"configuration_id": i, "method": "predictions", "predicted_state": s, "predicted_peak_mib": p}
            for i, s, p in zip(ids, checked["predicted_state"], checked["predicted_peak_mib"])
            if family_of[i] == family
        ]
        rows.sort(key=lambda r: r["configuration_id"])
        scores[family] = score_rows(rows, truth, ["predictions"])["predictions"]
    return {"folds": scores}


def advise_planned(
    planned: str | os.PathLike | Sequence[Mapping],
    source: SourceLike = None,
    revision: str | None = None,
    *,
    hardware: Hardware = BENCHMARK_HARDWARE,
    model_revision: str | None = None,
    nearest: int = 3,
) -> dict:
    """Advice for planned configurations (a YAML / JSON / CSV file or a list of mappings); a model outside the
    release's metadata is read from its Hub repository (config.json and safetensors headers only)."""
    from .hubmeta import fetch_model_metadata
    from .planned import read_planned

    plans = read_planned(planned, PLANNED_SETTINGS, HARDWARE_SETTINGS)
    fitted, inputs = run_final_fit(source, revision)
    metadata = dict(inputs.metadata)
    for model in dict.fromkeys(p["model_id"] for p in plans):
        if model not in metadata:
            metadata[model] = fetch_model_metadata(model, model_revision)
    return advise(plans, fitted, metadata, hardware=hardware, nearest=nearest)


def _check_sealed(src: Source, relpath: str, digest: object, sealed_in: str) -> None:
    """Refuse ``relpath`` unless its SHA-256 is the one ``sealed_in`` records (a release without the record: no
    check)."""
    from ..data.sources.base import sha256_file
    from ..errors import IntegrityError

    if isinstance(digest, str) and sha256_file(src.path(relpath)) != digest.lower():
        raise IntegrityError(f"{relpath} does not match the SHA-256 sealed in {sealed_in} ({src.label}); refused")


def _json_object(src: Source, relpath: str) -> dict:
    data = src.read_json(relpath)
    if not isinstance(data, dict):
        raise InputError(f"{relpath} is not a JSON object")
    return data
