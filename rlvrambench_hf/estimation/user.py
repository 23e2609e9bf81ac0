"""Your own estimator under the comparison's folds: the protocol, leak-free views and checked results.

An estimator is any object with ``fit(training)`` and ``predict(targets)``. ``fit`` receives the training fold as
a ``pandas.DataFrame`` (settings, the eight features, the coarse family and the outcomes); ``predict`` receives the
held-out targets' settings, features and family — no outcome, peak or label column — and returns either one label
per target (a sequence) or a mapping / DataFrame with ``predicted_state`` and optionally ``predicted_peak_mib``
(MiB; None or NaN for no peak). Errors inside it are one-line errors naming it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..data.schema.pins import OUTCOME_LABELS
from ..errors import InputError
from ..scoring.user import call_user
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


def estimator_run(estimator: Estimator, name: str) -> Callable[[Examples, Examples], dict[str, list]]:
    """A fold runner for :func:`~.folds.retrospective`: fit on the training view, predict the target view,
    check the result."""

    def run(training: Examples, test: Examples) -> dict[str, list]:
        call_user(estimator.fit, f"estimator {name}", "fit", training_view(training))
        result = call_user(estimator.predict, f"estimator {name}", "predict", target_view(test))
        return checked_predictions(result, len(test.rows), name)

    return run


def checked_predictions(result: Any, expected: int, name: str) -> dict[str, list]:
    """``{"predicted_state": [...], "predicted_peak_mib": [...]}`` from what ``predict`` returned, or a one-line
    error naming the estimator (wrong length, a label outside the three, a negative or infinite peak)."""
    if isinstance(result, Mapping) or hasattr(result, "columns"):
        if STATE not in result:
            raise InputError(f"estimator {name}: predict returned a table without a {STATE} column")
        states = list(result[STATE])
        peaks = list(result[PEAK]) if PEAK in result else [None] * len(states)
    elif isinstance(result, (str, bytes)) or not isinstance(result, Sequence) and not hasattr(result, "__len__"):
        raise InputError(f"estimator {name}: predict must return a sequence of labels, got {type(result).__name__}")
    else:
        states, peaks = list(result), [None] * len(result)
    if len(states) != expected or len(peaks) != expected:
        raise InputError(f"estimator {name}: predict returned {len(states)} labels for {expected} targets")
    unknown = sorted({repr(s) for s in states if s not in OUTCOME_LABELS})
    if unknown:
        raise InputError(
            f"estimator {name}: predict returned unknown label(s) {', '.join(unknown[:3])}; "
            f"allowed: {', '.join(OUTCOME_LABELS)}"
        )
    clean: list[float | None] = []
    for peak in peaks:
        if peak is None or (isinstance(peak, float) and math.isnan(peak)):
            clean.append(None)
            continue
        try:
            value = float(peak)
        except (TypeError, ValueError):
            raise InputError(f"estimator {name}: predicted peak {peak!r} is not a number") from None
        if not math.isfinite(value) or value < 0:
            raise InputError(f"estimator {name}: predicted peak {peak!r} is not a finite non-negative MiB value")
        clean.append(value)
    return {STATE: [str(s) for s in states], PEAK: clean}


def _frame(examples: Examples, *, keep_outcomes: bool) -> pd.DataFrame:
    import pandas as pd

    hidden = () if keep_outcomes else OUTCOME_COLUMNS
    records = [{k: v for k, v in row.items() if k not in hidden} for row in examples.rows]
    frame = pd.DataFrame.from_records(records)
    for j, feature in enumerate(FEATURE_NAMES):
        frame[feature] = examples.features[:, j] if len(records) else []
    return frame
