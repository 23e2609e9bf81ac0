"""The follow-up studies: scoring the frozen estimator panels of the larger-model and expanded-host studies.

:mod:`.core` is pure (panels, metrics, validation of predictions); :mod:`.api` reads files and sources.
"""

from .api import read_predictions, score_study, study_rows
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

__all__ = [
    "FROZEN_METHODS",
    "STUDIES",
    "USER_METHOD",
    "MethodPredictions",
    "frozen_predictions",
    "peak_metrics",
    "read_predictions",
    "score_panel",
    "score_study",
    "study_config",
    "study_rows",
    "validate_predictions",
]
