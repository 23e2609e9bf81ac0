"""The follow-up studies: scoring the frozen estimator panels of the larger-model and expanded-host studies.

:mod:`.core` is pure (panels, metrics, validation of predictions), as is :mod:`.panel` (slot facts, costs, the
always-failure reference); :mod:`.api` reads files and sources.
"""

from .api import panel_facts, read_predictions, score_study, study_rows
from .core import (
    FROZEN_METHODS,
    STUDIES,
    USER_METHOD,
    MethodPredictions,
    frozen_predictions,
    peak_metrics,
    score_panel,
    study_config,
    validate_predictions,
)
from .panel import ALWAYS_FAILURE, cost_facts, reference_predictions, slot_facts

__all__ = [
    "ALWAYS_FAILURE",
    "FROZEN_METHODS",
    "STUDIES",
    "USER_METHOD",
    "MethodPredictions",
    "cost_facts",
    "frozen_predictions",
    "panel_facts",
    "peak_metrics",
    "read_predictions",
    "reference_predictions",
    "score_panel",
    "score_study",
    "slot_facts",
    "study_config",
    "study_rows",
    "validate_predictions",
]
