"""Your own estimator under the comparison's folds: the protocol, leak-free views and checked results.

An estimator is any object with ``fit(training)`` and ``predict(targets)``. ``fit`` receives the training fold as
a ``pandas.DataFrame`` (settings, the eight features, the coarse family and the outcomes); ``predict`` receives the
held-out targets' settings, features and family — no outcome, peak or label column — and returns either one label
per target (a sequence) or a mapping / DataFrame with ``predicted_state`` and optionally ``predicted_peak_mib``
(MiB; None or NaN for no peak). Each call runs under a time limit (:mod:`rlvrambench_hf.scoring.bounded`: in a
child process for an estimator named by ``module:attr``), and what ``predict`` returns is checked there, before
anything is made of it; a failure is one line naming the estimator, the call and the fold.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from ..data.schema.pins import OUTCOME_LABELS
from ..errors import InputError, quote, summary
from ..scoring.bounded import DEFAULT_TIMEOUT, UserObject
from ..scoring.user import isolation_for
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
)
FAMILY_COLUMN = "model_family_coarse"
STATE, PEAK = "predicted_state", "predicted_peak_mib"


class Estimator(Protocol):
    """What an estimator provides."""

    def fit(self, training: pd.DataFrame) -> object: ...

    def predict(self, targets: pd.DataFrame) -> Any: ...


def training_view(examples: Examples) -> pd.DataFrame:
    """The training fold as a user sees it: every setting and outcome column, the features and the family."""
    return _frame(examples, keep_outcomes=True)


def target_view(examples: Examples) -> pd.DataFrame:
    """Targets as a user sees them: settings, features and family only (no outcome, peak or label)."""
    return _frame(examples, keep_outcomes=False)


def bind_estimator(estimator: Estimator, name: str, *, timeout: float | None = DEFAULT_TIMEOUT) -> UserObject:
    """``estimator`` behind its time limit (a context manager: closing it ends its child process, if any)."""
    return UserObject(estimator, f"estimator {name}", timeout=timeout, isolation=isolation_for(estimator))


def estimator_run(estimator: UserObject, name: str) -> Callable[[Examples, Examples], dict[str, list]]:
    """A fold runner for :func:`~.folds.retrospective`: fit on the training view, predict the target view,
    check the result (``estimator`` from :func:`bind_estimator`)."""

    def run(training: Examples, test: Examples) -> dict[str, list]:
        families = sorted({str(r.get(FAMILY_COLUMN)) for r in test.rows})
        where = f"fold {', '.join(families)}"
        estimator.call("fit", training_view(training), where=where)
        check = partial(checked_predictions, expected=len(test.rows), name=name)
        result: dict[str, list] = estimator.call("predict", target_view(test), where=where, accept=check)
        return result

    return run


#: The largest peak (MiB) a prediction may give: far beyond any device, not beyond reason.
PEAK_LIMIT_MIB = 1e9


def checked_predictions(result: Any, expected: int, name: str) -> dict[str, list]:
    """``{"predicted_state": [...], "predicted_peak_mib": [...]}`` from what ``predict`` returned (plain text and
    floats), or a one-line error naming the estimator (wrong length, a label outside the three, a peak that is not
    a finite number of MiB from 0 to :data:`PEAK_LIMIT_MIB`)."""
    if isinstance(result, Mapping) or hasattr(result, "columns"):
        if STATE not in result:
            raise InputError(f"estimator {name}: predict returned a table without a {STATE} column")
        states = _column(result, STATE, name)
        peaks = _column(result, PEAK, name) if PEAK in result else [None] * len(states)
    elif isinstance(result, (str, bytes)) or not isinstance(result, Sequence) and not hasattr(result, "__len__"):
        raise InputError(f"estimator {name}: predict must return a sequence of labels, got {quote(result)}")
    else:
        states = list(result)
        peaks = [None] * len(states)
    if len(states) != expected or len(peaks) != expected:
        raise InputError(f"estimator {name}: predict returned {len(states)} labels for {expected} targets")
    labels = [_label(s) for s in states]
    unknown = [s for s, label in zip(states, labels) if label is None]
    if unknown:
        raise InputError(
            f"estimator {name}: predict returned unknown label(s) {summary(unknown)}; "
            f"allowed: {', '.join(OUTCOME_LABELS)}"
        )
    return {STATE: labels, PEAK: [_peak(p, name) for p in peaks]}


def _column(result: Any, key: str, name: str) -> list:
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


def _frame(examples: Examples, *, keep_outcomes: bool) -> pd.DataFrame:
    import pandas as pd

    hidden = () if keep_outcomes else OUTCOME_COLUMNS
    records = [{k: v for k, v in row.items() if k not in hidden} for row in examples.rows]
    frame = pd.DataFrame.from_records(records)
    for j, feature in enumerate(FEATURE_NAMES):
        frame[feature] = examples.features[:, j] if len(records) else []
    return frame
