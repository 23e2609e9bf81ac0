"""Where the follow-up studies meet files and sources: a user's predictions file, a study's table and its records."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from ..data.sources.base import Source
from ..data.sources.resolve import SourceLike, open_source
from ..data.tables.reader import load_table
from ..errors import MissingFileError
from ..scoring.intervals import IntervalsLike, interval_options
from ..scoring.predictions import STDIN, WHITESPACE, read_prediction_file
from .core import (
    PEAK_COLUMN,
    PREDICTION_COLUMNS,
    STUDIES,
    USER_METHOD,
    MethodPredictions,
    frozen_predictions,
    score_panel,
    study_config,
    validate_predictions,
)
from .intervals import add_followup_intervals
from .panel import (
    PREFLIGHT_FILE,
    PREFLIGHT_GPU_HOURS,
    cost_facts,
    record_config,
    reference_predictions,
    slot_facts,
)


def read_predictions(path: str | os.PathLike[str], configuration_ids: Sequence[str]) -> MethodPredictions:
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


def study_rows(study: str, source: SourceLike = None, revision: str | None = None) -> list[dict[str, Any]]:
    """The decoded rows of ``study``'s config, in file order."""
    return cast("list[dict[str, Any]]", load_table(study_config(study), source, revision, decode=True).to_pylist())


def score_study(
    study: str,
    source: SourceLike = None,
    revision: str | None = None,
    *,
    predictions: str | os.PathLike[str] | MethodPredictions | None = None,
    intervals: IntervalsLike = None,
) -> dict[str, Any]:
    """Score the three frozen methods of ``study``, the always-failure reference and, if given, a user's predictions
    (a file or an object), after the study's seals are checked; the panel's slot facts and costs (from its result
    records, where the release has them) come beside the scores; with ``intervals``, every method's figures get
    their block (:mod:`.intervals`)."""
    from ..data.schema.seals import SEALS_OF_CONFIG
    from ..data.sealed import check_seals

    options = interval_options(intervals)
    config = study_config(study)
    src = open_source(source, revision)
    check_seals(src, SEALS_OF_CONFIG.get(config, ()))
    rows = study_rows(config, src)
    methods = {**frozen_predictions(rows), **reference_predictions(rows)}
    if predictions is not None:
        ids = [r["configuration_id"] for r in rows]
        if not isinstance(predictions, MethodPredictions):
            predictions = read_predictions(predictions, ids)
        methods[USER_METHOD] = predictions
    scores = score_panel(rows, methods)
    if options is not None:
        scores = add_followup_intervals(scores, rows, methods, options)
    return {**scores, **panel_facts(next(k for k, v in STUDIES.items() if v == config), src, scores)}


def preflight_fact(source: Source) -> dict[str, Any]:
    """The expanded-host follow-up's separate device preflight (0.08 GPU-hours on the card): whether this copy of
    the release carries the file that records it."""
    present = source.has(PREFLIGHT_FILE)
    note = (
        f"device preflight: recorded in {PREFLIGHT_FILE}, outside the study's allocations; not added to its costs"
        if present
        else f"device preflight ({PREFLIGHT_GPU_HOURS} GPU-hours on the card): not in this copy of the release, "
        f"{PREFLIGHT_FILE} is absent"
    )
    return {"card_gpu_hours": PREFLIGHT_GPU_HOURS, "file": PREFLIGHT_FILE, "file_present": present, "note": note}


def panel_facts(study: str, source: Source, scores: dict[str, Any]) -> dict[str, Any]:
    """``slots`` and ``costs`` of ``study`` from its result records (None for a record the release lacks)."""
    records = {}
    for record in ("processes", "summary", "costs", "cost_totals"):
        try:
            records[record] = load_table(record_config(study, record), source, decode=True).to_pylist()
        except MissingFileError:
            records[record] = None
    processes, summary, costs, totals = (records[r] for r in ("processes", "summary", "costs", "cost_totals"))
    return {
        "slots": None if processes is None else slot_facts(processes, scores, summary[0] if summary else None, costs),
        **({"preflight": preflight_fact(source)} if study == "expanded_host" else {}),
        "costs": None
        if costs is None or processes is None
        else cost_facts(costs, processes, totals[0] if totals else None),
    }
