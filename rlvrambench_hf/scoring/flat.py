"""A flat view of any score file, for training loops and their loggers: ``{"overall/within_margin_recall": 0.94}``.

``transformers.Trainer(compute_metrics=...)``, TensorBoard and W&B take a flat mapping of numbers. The view keeps
every number of the nested file under its path joined by ``/``; the ``per_track`` and ``per_task`` levels are
dropped, so a track's figures read ``gpu_count_transfer/approved_memory_failure`` beside
``overall/approved_memory_failure``. A null (a rate with a zero denominator) is left out, never turned into 0,
and counted: :attr:`FlatScores.left_out` names the paths. Strings, booleans and empty containers carry no number
and are skipped. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import SchemaError, quote

#: The figures the card asks to report, per track and overall: the training-loop view logs only these.
HEADLINE = (
    "within_margin_recall",
    "within_margin_approval_precision",
    "approved_memory_failure",
    "approved_above_margin",
)
#: Levels of a score file whose children are named well enough to stand at the top (tracks, task ids).
TRANSPARENT = frozenset({"per_track", "per_task"})
SEPARATOR = "/"


class FlatScores(dict[str, Any]):
    """The flat view: path → number; :attr:`left_out` lists the paths whose value was null."""

    left_out: tuple[str, ...] = ()

    @property
    def nulls(self) -> int:
        """How many null values were left out."""
        return len(self.left_out)


def flat_scores(scores: Mapping[str, Any]) -> FlatScores:
    """Every number of ``scores`` (a transfer, admission, estimation or follow-up score file, nested) under its
    ``/``-joined path; nulls left out and listed in ``left_out``."""
    if not isinstance(scores, Mapping):
        raise SchemaError(f"flat_scores takes a score file (a mapping), not {type(scores).__name__}")
    flat = FlatScores()
    left_out = []
    for path, value in _leaves(scores, ()):
        key = SEPARATOR.join(path)
        if value is None:
            left_out.append(key)
            continue
        if key in flat:
            raise SchemaError(f"score file has two numbers at {quote(key)}")
        flat[key] = value
    flat.left_out = tuple(left_out)
    return flat


def _leaves(value: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    if value is None:
        yield path, None
    elif isinstance(value, bool) or isinstance(value, str):
        return
    elif isinstance(value, (int, float)):
        if isinstance(value, int) or math.isfinite(value):
            yield path, value
    elif isinstance(value, Mapping):
        for key, child in value.items():
            name = str(key)
            yield from _leaves(child, path if name in TRANSPARENT and not path else (*path, name))
    elif isinstance(value, (list, tuple)):
        for index, child in enumerate(value):
            yield from _leaves(child, (*path, str(index)))


def headline_scores(scores: Mapping[str, Any], prefix: str = "") -> FlatScores:
    """The headline of a transfer score file for a training loop's logger: per track present and overall, the
    figures of :data:`HEADLINE` (recall, approval precision, approved memory failures, approved above-margin
    targets) under ``{prefix}{scope}/{figure}``, at most 20 numbers; a null is left out and listed in
    ``left_out``, as in :func:`flat_scores`."""
    if not isinstance(scores, Mapping) or not isinstance(scores.get("overall"), Mapping):
        raise SchemaError("headline_scores takes a transfer score file (with overall and per_track)")
    scopes = {**dict(scores.get("per_track") or {}), "overall": scores["overall"]}
    flat = FlatScores()
    left_out = []
    for scope, figures in scopes.items():
        for name in HEADLINE:
            key = f"{prefix}{scope}{SEPARATOR}{name}"
            value = figures.get(name)
            if value is None:
                left_out.append(key)
            else:
                flat[key] = value
    flat.left_out = tuple(left_out)
    return flat


def prefixed(flat: FlatScores, prefix: str) -> FlatScores:
    """``flat`` with ``prefix`` before every key (and every left-out path)."""
    out = FlatScores((prefix + key, value) for key, value in flat.items())
    out.left_out = tuple(prefix + key for key in flat.left_out)
    return out
