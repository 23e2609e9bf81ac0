"""Where the estimator comparison meets a source: the typed inputs of a release, users' estimators and plans.

Inputs come through the registry (``configurations``, ``outcomes``, ``estimation_targets``, ``model_metadata``)
and the release's protocol with its amendment applied; the cores in :mod:`.folds` do the work
(the advisor, :mod:`rlvrambench_hf.advisor`, answers planned runs from them).
"""

from __future__ import annotations

import contextlib
import math
import platform
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ..data.sources.base import Source
from ..data.sources.memo import remembered
from ..data.sources.resolve import SourceLike, open_source
from ..errors import InputError, quote
from ..scoring import DEFAULT_TIMEOUT
from .evidence import ARCHITECTURE, RUNS, STAGES, Evidence, build_evidence
from .features import FEATURE_NAMES, apply_amendment, feature_matrix
from .logistic import CLASSIFIER_SETTINGS
from .references import BUILT_IN, MODEL, Examples, FittedReferences

if TYPE_CHECKING:  # pragma: no cover
    from ..scoring.intervals import IntervalsLike
    from .user import Estimator

PROTOCOL = "benchmark/estimation/protocol.json"
AMENDMENT = "benchmark/estimation/amendment-01.json"
PUBLISHED_PREDICTIONS = "benchmark/estimation/predictions.json"
#: The registry tables the references are fitted from, beside the protocol and amendment (the advisor's cache key).
INPUT_CONFIGS = ("configurations", "outcomes", "estimation_targets", "model_metadata")
#: The registry tables the pool and the estimators' views are built from.
VIEW_TABLES: tuple[str, ...] = ("configurations", "outcomes", RUNS, STAGES, ARCHITECTURE)
#: Fold names of the comparison; "all" scores every fold.
ALL_FOLDS = "all"


@dataclass(frozen=True)
class EstimationInputs:
    """The comparison's inputs from one release."""

    pool: Examples
    metadata: Mapping[str, Mapping[str, Any]]
    targets: Examples
    protocol: Mapping[str, Any]
    source: Source
    evidence: Evidence

    @property
    def parameters(self) -> dict[str, int]:
        from .folds import parameters_of

        return parameters_of(self.metadata)


def load_inputs(source: SourceLike = None, revision: str | None = None) -> EstimationInputs:
    """Read and check the inputs: the 90-configuration pool, model metadata, targets and effective protocol, after
    every digest the comparison's seals record (its inputs and its frozen predictions)."""
    from ..data.schema.seals import ESTIMATION_SEALS
    from ..data.sealed import check_seals
    from ..data.tables.reader import load_table

    src = open_source(source, revision)
    check_seals(src, ESTIMATION_SEALS)  # the protocol, its amendment and the prediction freeze: inputs and outputs
    original, amendment = _json_object(src, PROTOCOL), _json_object(src, AMENDMENT)
    protocol = apply_amendment(original, amendment)
    if list(protocol.get("features", ())) != list(FEATURE_NAMES):
        raise InputError(f"{PROTOCOL}: the amended feature order differs from the implemented {FEATURE_NAMES}")
    classifier = protocol.get("classifier", {})
    differing = sorted(k for k, v in CLASSIFIER_SETTINGS.items() if k in classifier and classifier[k] != v)
    if differing:
        raise InputError(f"{PROTOCOL}: classifier settings {', '.join(differing)} differ from the implemented ones")
    tables = {name: load_table(name, src, decode=name != ARCHITECTURE).to_pylist() for name in VIEW_TABLES}
    target_rows = load_table("estimation_targets", src, decode=True).to_pylist()
    return inputs_from_tables(tables, target_rows, protocol, src)


def inputs_from_tables(
    tables: Mapping[str, Sequence[Mapping[str, Any]]],
    target_rows: Sequence[Mapping[str, Any]],
    protocol: Mapping[str, Any],
    source: Source,
) -> EstimationInputs:
    """The comparison's inputs from the rows of :data:`VIEW_TABLES` (pure: what :func:`load_inputs` read)."""
    from .folds import fitting_pool

    metadata = {r["model_id"]: r for r in tables[ARCHITECTURE]}
    pool = fitting_pool(
        tables["configurations"], tables["outcomes"], metadata, protocol.get("source_configuration_ids")
    )
    targets = Examples(tuple(target_rows), feature_matrix(target_rows, metadata))
    evidence = build_evidence(pool.ids, tables[RUNS], tables[STAGES], metadata)
    return EstimationInputs(pool, metadata, targets, protocol, source, evidence)


def numerical_environment() -> dict[str, Any]:
    """Versions of the numerical stack (the reference stack is in ``docs/estimation.md``), read from the installed
    distributions: scikit-learn is named, not imported (its import alone takes about 0.5 s; the fits use scipy)."""
    from importlib import metadata

    def version(distribution: str) -> str | None:
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            return None

    return {
        "python": platform.python_version(),
        "numpy": version("numpy"),
        "scipy": version("scipy"),
        "scikit_learn": version("scikit-learn"),
        "platform": platform.platform(),
    }


def run_retrospective(
    source: SourceLike = None,
    revision: str | None = None,
    *,
    estimators: Mapping[str, Any] | None = None,
    intervals: IntervalsLike = None,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> dict[str, Any]:
    """The three leave-one-family-out folds (``retrospective.json``'s structure) with the per-phase memory model
    (:mod:`.physical`) scored as a fourth method beside the three references, ``table`` (one row per fold and
    method, references, the model and estimators side by side), ``across_folds`` (each method's spread over the
    three folds) and, with estimators, ``estimators`` (what each name is and its arguments).

    ``estimators`` maps names to users' estimators: objects, or ``module:attr[,key=value...]`` specs
    (:func:`parse_estimator`), scored beside the references, each call into one within ``timeout`` seconds (None:
    no limit; a spec's estimator runs in a child process stopped at the limit, an object you pass in a worker
    thread of your process). With ``intervals``, every method's fold scores get their interval block and each
    estimator is compared with each reference (:mod:`.intervals`)."""
    from ..scoring.intervals import interval_options
    from .folds import across_folds, fold_table, retrospective
    from .user import bind_estimator, estimator_run

    options = interval_options(intervals)
    inputs = load_inputs(source, revision)
    described = {}
    with contextlib.ExitStack() as bound:
        from .physical import PhysicalModel

        model = bound.enter_context(bind_estimator(PhysicalModel(inputs.source), MODEL, timeout=None))
        models = {MODEL: estimator_run(model, MODEL, inputs.evidence, inputs.source.identity)}
        runs = {}
        for name, given in (estimators or {}).items():
            if name in BUILT_IN:
                raise InputError(f"estimator name {quote(name)} is a built-in method's; choose another name")
            loaded, described[name] = _estimator(given, str(name), timeout)
            user = bound.enter_context(bind_estimator(loaded, name, timeout=timeout))
            runs[name] = estimator_run(user, name, inputs.evidence, inputs.source.identity)

        def memo(family: str, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
            return remembered(inputs.source, ("retrospective fold", family), compute)

        folds = retrospective(inputs.pool, inputs.parameters, runs, models, memo)
    memory = remembered(inputs.source, ("memory model",), lambda: _memory_model(inputs))
    report = {**folds, "memory_model": memory, "numerical_environment": numerical_environment()}
    if described:
        report["estimators"] = described
    if options is not None:
        from .intervals import add_retrospective_intervals

        truth = {r["configuration_id"]: r for r in inputs.pool.rows}
        report = add_retrospective_intervals(report, truth, options, BUILT_IN)
    return {**report, "table": fold_table(report), "across_folds": across_folds(report)}


def _memory_model(inputs: EstimationInputs) -> dict[str, Any]:
    """The memory model's section: how its form was chosen, every candidate form, the leave-one-model-out check."""
    from .memoryreport import memory_model_report
    from .physical import record_of

    return memory_model_report(record_of(inputs))


def run_final_fit(source: SourceLike = None, revision: str | None = None) -> tuple[FittedReferences, EstimationInputs]:
    """The references fitted on all 90 pool configurations, with the inputs they came from."""
    from .folds import final_fit

    inputs = load_inputs(source, revision)
    return final_fit(inputs.pool, inputs.parameters), inputs


def run_prospective(source: SourceLike = None, revision: str | None = None) -> dict[str, Any]:
    """The final fit (``fitted_model.json``'s structure), the 36 prospective predictions and their check against
    the release's sealed ``predictions.json``, and the memory model's predictions of the same targets
    (``memory_model``: calibrated on the whole pool; not part of the sealed comparison)."""
    from ..data.tables.reader import load_table
    from .folds import check_against_published, prospective
    from .physical import FORM_NOTE, prospective_physical

    fitted, inputs = run_final_fit(source, revision)
    rows, model = prospective(fitted, inputs.targets)
    published = inputs.source.read_json(PUBLISHED_PREDICTIONS) if inputs.source.has(PUBLISHED_PREDICTIONS) else None
    stages = load_table("stage_measurements", inputs.source, decode=True).to_pylist()
    targets = list(inputs.targets.rows)
    return {
        "fitted_model": {**model, "numerical_environment": numerical_environment()},
        "predictions": rows,
        "published_check": check_against_published(rows, published),
        "memory_model": {
            "form_note": FORM_NOTE,
            "predictions": prospective_physical(inputs.pool.rows, stages, inputs.metadata, targets),
        },
    }


@dataclass(frozen=True)
class EstimatorSpec:
    """An estimator named on the command line: ``[NAME=]MODULE:ATTR[,KEY=VALUE...]``."""

    name: str
    target: str  # module:attr or path/to/file.py:attr
    arguments: Mapping[str, object]


_SPEC = re.compile(r"(?:(?P<name>[^=:,]+)=)?(?P<target>.+?:[A-Za-z_][\w.]*)(?:,(?P<arguments>.*))?", re.DOTALL)
_INTEGER = re.compile(r"[+-]?\d+")


def parse_estimator(text: str) -> EstimatorSpec:
    """``[NAME=]MODULE:ATTR[,KEY=VALUE...]``: the class ``MODULE:ATTR`` instantiated with the keyword arguments,
    each value typed as ``--setting`` types a cell (an integer, else a finite number, else ``True``/``False``, else
    text); the name defaults to ``ATTR``, followed by the arguments in parentheses when there are any."""
    match = _SPEC.fullmatch(text.strip())
    if match is None:
        raise InputError(f"estimator {quote(text)} must have the form [NAME=]MODULE:ATTR[,KEY=VALUE...]")
    arguments: dict[str, object] = {}
    for pair in filter(None, (match["arguments"] or "").split(",")):
        key, equals, value = pair.partition("=")
        key = key.strip()
        if not equals or not key.isidentifier():
            raise InputError(f"estimator {quote(text)}: argument {quote(pair)} is not KEY=VALUE with a Python name")
        if key in arguments:
            raise InputError(f"estimator {quote(text)}: argument {quote(key)} is given twice")
        arguments[key] = typed_value(value)
    target = match["target"].strip()
    attr = target.rsplit(":", 1)[1]
    shown = ",".join(f"{k}={v}" for k, v in arguments.items())
    name = (match["name"] or "").strip() or (f"{attr}({shown})" if arguments else attr)
    return EstimatorSpec(name, target, arguments)


def typed_value(text: str) -> object:
    """A ``KEY=VALUE`` value as ``--setting`` types a cell: integer, finite number, boolean, else text."""
    value = text.strip()
    if _INTEGER.fullmatch(value):
        return int(value)
    with contextlib.suppress(ValueError):
        number = float(value)
        if math.isfinite(number):
            return number
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value


def load_estimator(estimator: object, name: str, *, timeout: float | None = DEFAULT_TIMEOUT) -> Estimator:
    """An estimator object, or the one a ``module:attr[,key=value...]`` spec (text or :class:`EstimatorSpec`)
    names (a class is instantiated with the spec's arguments, within ``timeout`` seconds)."""
    return _estimator(estimator, name, timeout)[0]


def _estimator(given: object, name: str, timeout: float | None) -> tuple[Estimator, dict[str, Any]]:
    """(the estimator, what it is: its spec or type and its arguments)."""
    from ..scoring.user import load_object

    if isinstance(given, str):
        given = parse_estimator(given)
    if isinstance(given, EstimatorSpec):
        loaded = load_object(given.target, "estimator", ("fit", "predict"), timeout=timeout, arguments=given.arguments)
        return cast("Estimator", loaded), {"estimator": given.target, "arguments": dict(given.arguments)}
    if not all(callable(getattr(given, m, None)) for m in ("fit", "predict")):
        raise InputError(f"estimator {name} has no fit and predict methods")
    kind = type(given)
    return cast("Estimator", given), {"estimator": f"{kind.__module__}.{kind.__qualname__}", "arguments": None}


def score_fold_predictions(
    configuration_ids: Sequence[str],
    predictions: Sequence[str],
    predicted_peaks_mib: Sequence[float | None] | Mapping[str, float | None] | None = None,
    *,
    fold: str = ALL_FOLDS,
    source: SourceLike = None,
    revision: str | None = None,
    intervals: IntervalsLike = None,
) -> dict[str, Any]:
    """Score a user's held-out predictions against the hidden fold labels, per fold, as the references are scored.

    ``fold`` is ``"all"`` (cover all 90 pool configurations) or one family (cover exactly its 30);
    ``predicted_peaks_mib`` is aligned with the ids or maps ids to peaks (an absent id has no peak); with
    ``intervals``, each fold's scores get their interval block.
    """
    from ..scoring.intervals import interval_options
    from .folds import fold_names, score_rows
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
    options = interval_options(intervals)
    truth = {r["configuration_id"]: r for r in inputs.pool.rows}
    scores, rows_by_fold = {}, {}
    for family in families:
        if fold not in (ALL_FOLDS, family):
            continue
        rows = [
            {
                "configuration_id": i,
                "method": "predictions",
                "predicted_state": s,
                "predicted_peak_mib": p,
                "startup_guard_changed_state": None,  # the metric's contract: reported, 0 for a user
            }
            for i, s, p in zip(ids, checked["predicted_state"], checked["predicted_peak_mib"])
            if family_of[i] == family
        ]
        rows.sort(key=lambda r: r["configuration_id"])
        scores[family] = score_rows(rows, truth, ["predictions"])["predictions"]
        rows_by_fold[family] = rows
    if options is None:
        return {"folds": scores}
    from .intervals import add_fold_score_intervals

    return add_fold_score_intervals({"folds": scores}, rows_by_fold, truth, options)


def _json_object(src: Source, relpath: str) -> dict[str, Any]:
    data = src.read_json(relpath)
    if not isinstance(data, dict):
        raise InputError(f"{relpath} is not a JSON object")
    return data
