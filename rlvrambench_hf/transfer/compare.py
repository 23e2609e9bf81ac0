"""Paired comparison of two sets of transfer predictions on the same queries (``rlvrambench compare A B``).

Both are scored on the same resampled target configurations (:mod:`.intervals` says why targets are the unit);
overall and per track, each reported metric gets A − B with its paired bootstrap interval and a one-line reading
(:mod:`rlvrambench_hf.scoring.compare`). Single tasks have too few targets for a paired statement and are left to
the score files. Pure.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..scoring.compare import Design, Side, compare_scope
from ..scoring.intervals import BOOTSTRAP, MIN_UNITS, RANGE, IntervalOptions, resample_weights, settings
from .intervals import UNIT, WHY_TARGETS, scope_draws, scopes_of, unit_cells, units_in
from .key import ALL_TRACKS, ScoringKey
from .score import score

WARNING = (
    "a difference per metric, never one combined number: read recall beside the approval errors, per track; "
    "an interval that includes 0 does not show a difference"
)


def compare_predictions(
    key: ScoringKey,
    predicted: tuple[np.ndarray, np.ndarray],
    names: tuple[str, str],
    options: IntervalOptions,
    *,
    marginal: bool = False,
) -> dict[str, Any]:
    """The comparison of two aligned label-code arrays on ``key``: overall (when every track is selected) and per
    track, per metric; with ``marginal``, each side's own interval too."""
    (a, b), (name_a, name_b) = predicted, names
    scores = score(key, a), score(key, b)
    cells = unit_cells(key, a), unit_cells(key, b)
    weights = resample_weights(cells[0].shape[0], options)
    task_base = 1 + len(key.tracks)
    out: dict[str, Any] = {}
    for scope in scopes_of(key):
        if scope.level == "per_task" or (scope.level == "overall" and key.track != ALL_TRACKS):
            continue  # tasks: too few targets each; one selected track: its scope is the whole
        present = units_in(cells[0], scope)
        enough = len(present) >= MIN_UNITS
        chosen = weights if enough else present
        points = [s["overall"] if scope.level == "overall" else s["per_track"][scope.name] for s in scores]
        sides = [Side(n, p, scope_draws(c, chosen, scope, task_base)) for n, p, c in zip(names, points, cells)]
        design = Design(UNIT, len(present), BOOTSTRAP if enough else RANGE, options.level)
        out[scope.name] = compare_scope(sides[0], sides[1], design, marginal=marginal)
    return {
        "a": name_a,
        "b": name_b,
        "selected_track": key.track,
        "difference": "a - b",
        "warning": WARNING,
        "interval_settings": settings(options, UNIT, WHY_TARGETS),
        "scopes": out,
    }


def readings(comparison: dict[str, Any]) -> list[str]:
    """Every reading of a comparison, as ``scope: sentence`` lines."""
    return [
        f"{scope}: {entry['reading']}"
        for scope, block in comparison["scopes"].items()
        for entry in block["metrics"].values()
    ]
