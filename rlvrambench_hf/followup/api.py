"""Where the follow-up studies meet files and sources: a user's predictions file and a study's table."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..data.sources.resolve import SourceLike
from ..data.tables.reader import load_table
from ..scoring.intervals import IntervalsLike, interval_options
from ..scoring.predictions import STDIN, WHITESPACE, read_prediction_file
from .core import (
    PEAK_COLUMN,
    PREDICTION_COLUMNS,
    USER_METHOD,
    MethodPredictions,
    frozen_predictions,
    score_panel,
    study_config,
    validate_predictions,
)
from .intervals import add_followup_intervals


def read_predictions(path: str | os.PathLike, configuration_ids: Sequence[str]) -> MethodPredictions:
    """Read ``configuration_id,predicted_state[,predicted_peak_mib]`` covering exactly ``configuration_ids``.

    The formats and file rules are those of every predictions file (:mod:`rlvrambench_hf.scoring.predictions`:
    CSV, JSON Lines, Parquet, compressed or not, ``-`` for standard input); labels are case-sensitive (lower
    case). A blank or missing peak means no peak prediction. Every problem is a one-line :class:`InputError`
    naming counts and example ids.
    """
    columns = read_prediction_file(path, PREDICTION_COLUMNS, (PEAK_COLUMN,))
    cells = {name: [v.strip(WHITESPACE) for v in values.to_pylist()] for name, values in columns.items()}
    rows = [dict(zip(cells, row)) for row in zip(*cells.values())]
    name = "from standard input" if os.fspath(path) == STDIN else Path(path).name
    return validate_predictions(rows, configuration_ids, name=name)


def study_rows(study: str, source: SourceLike = None, revision: str | None = None) -> list[dict]:
    """The decoded rows of ``study``'s config, in file order."""
    return load_table(study_config(study), source, revision, decode=True).to_pylist()


def score_study(
    study: str,
    source: SourceLike = None,
    revision: str | None = None,
    *,
    predictions: str | os.PathLike | MethodPredictions | None = None,
    intervals: IntervalsLike = None,
) -> dict:
    """Score the three frozen methods of ``study`` and, if given, a user's predictions (a file or an object); with
    ``intervals``, every method's figures get their block (:mod:`.intervals`)."""
    options = interval_options(intervals)
    rows = study_rows(study, source, revision)
    methods = frozen_predictions(rows)
    if predictions is not None:
        ids = [r["configuration_id"] for r in rows]
        if not isinstance(predictions, MethodPredictions):
            predictions = read_predictions(predictions, ids)
        methods[USER_METHOD] = predictions
    scores = score_panel(rows, methods)
    return scores if options is None else add_followup_intervals(scores, rows, methods, options)
