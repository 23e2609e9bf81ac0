"""Transfer tasks: predict a target configuration's label from a matched source's measurements.

Modules, from the hidden side to the faces: :mod:`.key` (the scoring key of the selected queries), :mod:`.score`
(aligning and scoring prediction rows), :mod:`.tasks` (leak-free task inputs and the reference rules) — all
pure — and :mod:`.api`, where they meet a source. The names below are imported on first use (scoring a
predictions file does not import the paired comparison of two).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

# The scoring names are bound here, not looked up lazily: ``score`` is also the name of a submodule, which importing
# it (as evaluate does) would otherwise leave in this namespace instead of the function.
from .score import align_predictions, read_predictions, score, score_predictions

if TYPE_CHECKING:
    from ..scoring.labels import label_metrics
    from .api import cached_scoring_key, compare_lists, load_transfer_tables, reference_scores, score_lists
    from .compare import compare_predictions, readings
    from .key import ALL_TRACKS, PREDICTION_COLUMNS, PROTOCOL_VERSION, TRACKS, ScoringKey, check_track, scoring_key
    from .tasks import RULES, check_rule, predictions_csv, reference_predictions, task_inputs

#: Where each public name lives (imported when first asked for, PEP 562).
_LAZY = {
    "label_metrics": "..scoring.labels",
    "cached_scoring_key": ".api",
    "compare_lists": ".api",
    "load_transfer_tables": ".api",
    "reference_scores": ".api",
    "score_lists": ".api",
    "compare_predictions": ".compare",
    "readings": ".compare",
    "ALL_TRACKS": ".key",
    "PREDICTION_COLUMNS": ".key",
    "PROTOCOL_VERSION": ".key",
    "TRACKS": ".key",
    "ScoringKey": ".key",
    "check_track": ".key",
    "scoring_key": ".key",
    "RULES": ".tasks",
    "check_rule": ".tasks",
    "predictions_csv": ".tasks",
    "reference_predictions": ".tasks",
    "task_inputs": ".tasks",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


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
