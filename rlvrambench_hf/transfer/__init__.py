"""Transfer tasks: predict a target configuration's label from a matched source's measurements.

Modules, from the hidden side to the faces: :mod:`.key` (the scoring key of the selected queries), :mod:`.score`
(aligning and scoring prediction rows), :mod:`.tasks` (leak-free task inputs and the reference rules) — all
pure — and :mod:`.api`, where they meet a source.
"""

from ..scoring.labels import label_metrics
from .api import cached_scoring_key, compare_lists, load_transfer_tables, reference_scores, score_lists
from .compare import compare_predictions, readings
from .key import ALL_TRACKS, PREDICTION_COLUMNS, PROTOCOL_VERSION, TRACKS, ScoringKey, check_track, scoring_key
from .score import align_predictions, read_predictions, score, score_predictions
from .tasks import RULES, check_rule, predictions_csv, reference_predictions, task_inputs

__all__ = [
    "ALL_TRACKS",
    "PREDICTION_COLUMNS",
    "PROTOCOL_VERSION",
    "RULES",
    "TRACKS",
    "ScoringKey",
    "align_predictions",
    "cached_scoring_key",
    "check_rule",
    "check_track",
    "compare_lists",
    "compare_predictions",
    "label_metrics",
    "load_transfer_tables",
    "predictions_csv",
    "read_predictions",
    "readings",
    "reference_predictions",
    "reference_scores",
    "score",
    "score_lists",
    "score_predictions",
    "scoring_key",
    "task_inputs",
]
