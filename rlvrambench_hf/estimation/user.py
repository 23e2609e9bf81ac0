"""Your own estimator under the comparison's folds: the protocol, leak-free views and checked results.

An estimator is any object with ``fit(training)`` and ``predict(targets)``. ``fit`` receives the training fold as
a ``pandas.DataFrame`` (settings, the eight features, the coarse family, the outcomes, the model's architecture and
the measured evidence: runs by seed with their stage peaks, failure stage and kind); ``predict`` receives the
held-out targets' settings, features, family and architecture — no outcome, peak, label, run or stage column —
and returns either one label per target (a sequence, read by position) or a mapping / DataFrame / Series with
``predicted_state`` and optionally ``predicted_peak_mib`` (MiB; None or NaN for no peak), matched to the targets by
``configuration_id`` when it carries them. A ``context`` second parameter receives an :class:`EstimatorContext`.
Each call runs under a time limit (:mod:`rlvrambench_hf.scoring.bounded`: in a child process for an estimator
named by ``module:attr``), and what ``predict`` returns is checked there, before anything is made of it; a failure
is one line naming the estimator, the call and the fold.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from ..data.schema.pins import OUTCOME_LABELS
from ..errors import InputError, quote, summary
from ..scoring.bounded import DEFAULT_TIMEOUT, PARAMETERS, UserObject, parameters_of
from ..scoring.user import isolation_for
from .evidence import EVIDENCE_COLUMNS, Evidence
from .features import FEATURE_NAMES
from .references import Examples

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: Columns the targets never carry: outcomes, peaks, labels and the evidence behind them.
OUTCOME_COLUMNS: tuple[str, ...] = (
    "observed_state",
    "eligible_processes",
    "distinct_seeds",
    "completed_eligible_processes",
    "within_margin_processes",
    "above_margin_processes",
    "memory_failure_processes",
    "max_completed_run_peak_mib",
    "mean_completed_run_peak_mib",
    "recorded_attempts",
    "documented_completed_attempts",
    "excluded_attempts",
    "label_scope",
    "completed",
    *EVIDENCE_COLUMNS,
)
FAMILY_COLUMN = "model_family_coarse"
ID, STATE, PEAK = "configuration_id", "predicted_state", "predicted_peak_mib"


class Estimator(Protocol):
    """What an estimator provides."""

    def fit(self, training: pd.DataFrame) -> object: ...

    def predict(self, targets: pd.DataFrame) -> Any: ...


@dataclass(frozen=True)
class EstimatorContext:
    """What an estimator may know about the comparison it is scored in, passed to ``fit`` and ``predict`` when
    they declare a second parameter named ``context``: the release (``source``: a folder or a Hub repository id,
    ``revision`` and ``commit`` for a Hub release, else None), the fold (the held-out family) and the families
    it trains on. Never read from the environment."""

    source: str | None
    revision: str | None
    commit: str | None
    fold: str
    training_families: tuple[str, ...]


def training_view(examples: Examples, evidence: Evidence | None = None) -> pd.DataFrame:
    """The training fold as a user sees it: every setting and outcome column, the features and the family; with
    ``evidence``, the architecture of each configuration's model and its measured evidence (runs with stage
    peaks, seed peaks, stage peaks, failure stage and kind: :data:`~.evidence.EVIDENCE_COLUMNS`), each row from
    its own configuration only."""
    return _frame(examples, keep_outcomes=True, evidence=evidence)


def target_view(examples: Examples, evidence: Evidence | None = None) -> pd.DataFrame:
    """Targets as a user sees them: settings, features, family and (with ``evidence``) the architecture only —
    no outcome, peak, label, run or stage column."""
    return _frame(examples, keep_outcomes=False, evidence=evidence)


def bind_estimator(estimator: Estimator, name: str, *, timeout: float | None = DEFAULT_TIMEOUT) -> UserObject:
    """``estimator`` behind its time limit (a context manager: closing it ends its child process, if any)."""
    return UserObject(estimator, f"estimator {name}", timeout=timeout, isolation=isolation_for(estimator))


def takes_context(estimator: object, method: str) -> bool:
    """Whether ``estimator.method`` declares ``context`` as its second parameter (a ``context`` elsewhere is a
    one-line error saying where it must be)."""
    return context_declared(parameters_of(getattr(estimator, method)), method)


def context_declared(parameters: Sequence[tuple[str, str]], method: str) -> bool:
    """:func:`takes_context` over the (name, kind name) parameters of ``method``, wherever they were read."""
    names = [name for name, _ in parameters]
    if "context" not in names:
        return False
    if names.index("context") != 1 or parameters[1][1] not in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD"):
        raise InputError(f"{method}'s context must be its second parameter: def {method}(self, data, context=None)")
    return True


def estimator_run(
    estimator: UserObject,
    name: str,
    evidence: Evidence | None = None,
    release: Mapping[str, str | None] | None = None,
) -> Callable[[Examples, Examples], dict[str, list[Any]]]:
    """A fold runner for :func:`~.folds.retrospective`: fit on the training view, predict the target view,
    check the result and match it to the targets (``estimator`` from :func:`bind_estimator`; ``release`` the
    source's identity, given to an estimator that takes a :class:`EstimatorContext`)."""
    with_context = {  # read where the estimator lives: its own process, for one loaded from a spec
        m: context_declared(estimator.call(PARAMETERS, m, where="reading its parameters", accept=list), m)
        for m in ("fit", "predict")
    }

    def run(training: Examples, test: Examples) -> dict[str, list[Any]]:
        families = sorted({str(r.get(FAMILY_COLUMN)) for r in test.rows})
        where = f"fold {', '.join(families)}"
        context = EstimatorContext(
            (release or {}).get("source"),
            (release or {}).get("revision"),
            (release or {}).get("commit"),
            ", ".join(families),
            tuple(sorted({str(r.get(FAMILY_COLUMN)) for r in training.rows})),
        )
        fit_args = (context,) if with_context["fit"] else ()
        estimator.call("fit", training_view(training, evidence), *fit_args, where=where)
        check = partial(checked_predictions, expected=test.ids, name=name)
        predict_args = (context,) if with_context["predict"] else ()
        result: dict[str, list[Any]] = estimator.call(
            "predict", target_view(test, evidence), *predict_args, where=where, accept=check
        )
        return result

    return run


#: The largest peak (MiB) a prediction may give: far beyond any device, not beyond reason.
PEAK_LIMIT_MIB = 1e9


def checked_predictions(result: Any, expected: int | Sequence[str], name: str) -> dict[str, list[Any]]:
    """``{"predicted_state": [...], "predicted_peak_mib": [...]}`` in the targets' order from what ``predict``
    returned (plain text and floats), or a one-line error naming the estimator (wrong length, a label outside the
    three, a peak that is not a finite number of MiB from 0 to :data:`PEAK_LIMIT_MIB`).

    With ``expected`` the targets' ids, a table with a ``configuration_id`` column, or a pandas result indexed by
    ids (or by the target view's own row labels, in any order), is matched to the targets by id: a missing,
    duplicated or foreign id is a one-line error naming the first few. A bare sequence is taken in the targets'
    order (positionally)."""
    ids = None if isinstance(expected, int) else list(expected)
    count = expected if isinstance(expected, int) else len(expected)
    kind = type(result)  # attributes read from the class: a pandas object's own lookup would hash its labels
    if isinstance(result, Mapping) or hasattr(kind, "columns"):
        if STATE not in result:
            raise InputError(f"estimator {name}: predict returned a table without a {STATE} column")
        states = _column(result, STATE, name)
        peaks = _column(result, PEAK, name) if PEAK in result else [None] * len(states)
        keys = _column(result, ID, name) if ID in result else _index_keys(result, len(states))
    elif hasattr(kind, "index") and hasattr(kind, "dtype") and not isinstance(result, Sequence):
        states = list(result)  # a pandas Series of labels
        peaks = [None] * len(states)
        keys = _index_keys(result, len(states))
    elif isinstance(result, (str, bytes)) or not isinstance(result, Sequence) and not hasattr(result, "__len__"):
        raise InputError(f"estimator {name}: predict must return a sequence of labels, got {quote(result)}")
    else:
        states = list(result)
        peaks = [None] * len(states)
        keys = None
    if len(states) != count or len(peaks) != count:
        raise InputError(f"estimator {name}: predict returned {len(states)} labels for {count} targets")
    if keys is not None and ids is not None:
        order = _matched(keys, ids, name)
        states, peaks = [states[i] for i in order], [peaks[i] for i in order]
    labels = [_label(s) for s in states]
    unknown = [s for s, label in zip(states, labels) if label is None]
    if unknown:
        raise InputError(
            f"estimator {name}: predict returned unknown label(s) {summary(unknown)}; "
            f"allowed: {', '.join(OUTCOME_LABELS)}"
        )
    return {STATE: labels, PEAK: [_peak(p, name) for p in peaks]}


def _index_keys(result: Any, count: int) -> list[Any] | None:
    """The ids a pandas result's index carries: its text labels (ids), or its integer row labels as positions
    of the target view (whose index is 0 … n−1); None for the target view's own order or no index."""
    index = getattr(result, "index", None)
    if index is None or isinstance(result, Mapping):
        return None
    labels = list(index)
    plain = [_plain(x) for x in labels]
    if plain == list(range(count)) and all(type(x) is int for x in plain):
        return None
    if plain and all(type(x) is int for x in plain):
        return [_Position(x) for x in plain]  # type: ignore[arg-type]
    return labels


def _plain(value: object) -> str | int | None:
    """``value`` as plain text or a plain integer, read without running its class's code (None: neither)."""
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int.__index__(value)
    if type(value).__module__ == "numpy" and getattr(getattr(value, "dtype", None), "kind", "") in ("i", "u"):
        return int(value)  # type: ignore[call-overload,no-any-return]
    return None


class _Position(int):
    """A row label of the target view (its position), as opposed to a configuration id."""


def _matched(keys: Sequence[object], ids: Sequence[str], name: str) -> list[int]:
    """For each target id, the position of its prediction in ``keys``; a missing, duplicated or foreign key is a
    one-line error (keys compared as plain text or positions, never by their own class's code)."""
    positions = bool(keys) and isinstance(keys[0], _Position)
    wanted: list[object] = [_Position(i) for i in range(len(ids))] if positions else list(ids)
    where: dict[object, int] = {}
    duplicated, foreign = [], []
    known = set(wanted)
    for i, key in enumerate(keys):
        plain = _plain(key)
        if positions and isinstance(key, _Position):
            plain = key
        elif positions or not isinstance(plain, str):
            plain = None
        if plain is None or plain not in known:
            foreign.append(key)
        elif plain in where:
            duplicated.append(key)
        else:
            where[plain] = i
    missing = [w for w in wanted if w not in where]
    if foreign or duplicated or missing:
        parts = [
            f"{label} {summary(values)}"
            for label, values in (("foreign", foreign), ("duplicated", duplicated), ("missing", missing))
            if values
        ]
        raise InputError(
            f"estimator {name}: predict's {ID} values do not match the {len(ids)} targets: {'; '.join(parts)}"
        )
    return [where[w] for w in wanted]


def _column(result: Any, key: str, name: str) -> list[Any]:
    values = result[key]
    if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__iter__"):
        raise InputError(f"estimator {name}: predict's {key} is {quote(values)}, not a sequence of values")
    return list(values)


def _label(value: object) -> str | None:
    """The package's own label text that ``value`` equals (compared without running its class's code)."""
    if not isinstance(value, str):
        return None
    return next((label for label in OUTCOME_LABELS if str.__eq__(value, label) is True), None)


def _peak(peak: object, name: str) -> float | None:
    if peak is None or (isinstance(peak, float) and math.isnan(peak)):
        return None
    if isinstance(peak, bool) or not isinstance(peak, (int, float, str)) and not hasattr(peak, "__float__"):
        raise InputError(f"estimator {name}: predicted peak {quote(peak)} is not a number")
    try:
        value = float(peak)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"estimator {name}: predicted peak {quote(peak)} is not a number") from None
    if math.isnan(value):
        return None
    if not math.isfinite(value) or not 0 <= value <= PEAK_LIMIT_MIB:
        raise InputError(
            f"estimator {name}: predicted peak {quote(peak)} is not a finite non-negative MiB value "
            f"(at most {PEAK_LIMIT_MIB:g})"
        )
    return value


def _frame(examples: Examples, *, keep_outcomes: bool, evidence: Evidence | None) -> pd.DataFrame:
    import pandas as pd

    hidden = () if keep_outcomes else OUTCOME_COLUMNS
    records = []
    for row in examples.rows:
        record = {k: v for k, v in row.items() if k not in hidden}
        if evidence is not None:
            record.update(evidence.architecture_of(row))
            if keep_outcomes:
                record.update(evidence.columns(row))
        records.append(record)
    frame = pd.DataFrame.from_records(records)
    for j, feature in enumerate(FEATURE_NAMES):
        frame[feature] = examples.features[:, j] if len(records) else []
    return frame
