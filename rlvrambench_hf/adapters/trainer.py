"""``compute_metrics`` for ``transformers.Trainer``: logits (or label indices) of the evaluation rows in, the
benchmark's headline transfer figures (or, on request, every number of the score file) out as a flat mapping.

The factory takes the query id of each evaluation row, in row order, once; each call turns the predictions into
labels (the argmax over the three labels in :data:`~rlvrambench_hf.data.schema.pins.OUTCOME_LABELS` order, or
the indices themselves) and scores them against the hidden labels fetched as the metric fetches them (cached per
process). The package does not import transformers: anything with a ``predictions`` attribute (an
``EvalPrediction``) or a ``(predictions, label_ids)`` pair is accepted; ``label_ids`` are not used.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from ..data.schema.pins import OUTCOME_LABELS
from ..data.sources.resolve import SourceLike
from ..errors import InputError, quote
from ..scoring.flat import FlatScores, flat_scores, headline_scores, prefixed
from ..scoring.intervals import IntervalsLike, interval_options


def label_codes(predictions: Any, rows: int) -> np.ndarray:
    """Label indices from logits ``(rows, 3)`` or indices ``(rows,)``; anything else is a one-line error."""
    if isinstance(predictions, (tuple, list)) and predictions and not np.isscalar(predictions[0]):
        predictions = predictions[0]  # a model with several outputs: the first holds the logits
    array = np.asarray(predictions)
    if array.ndim == 2 and array.shape[1] == len(OUTCOME_LABELS):
        if not np.issubdtype(array.dtype, np.number):
            raise InputError(f"logits must be numbers, not {array.dtype}")
        if not np.isfinite(array).all():
            raise InputError(f"logits hold {int((~np.isfinite(array)).sum())} NaN or infinite value(s)")
        codes = array.argmax(axis=1)
    elif array.ndim == 1 and np.issubdtype(array.dtype, np.integer):
        codes = array
        bad = (codes < 0) | (codes >= len(OUTCOME_LABELS))
        if bad.any():
            raise InputError(
                f"label indices must be 0, 1 or 2 ({', '.join(OUTCOME_LABELS)}); got {quote(codes[bad][0])}"
            )
    else:
        raise InputError(
            f"predictions of shape {array.shape} ({array.dtype}): expected logits of shape (rows, 3) or integer "
            "label indices of shape (rows,)"
        )
    if len(codes) != rows:
        raise InputError(f"{len(codes)} prediction rows but {rows} query ids were given to trainer_metrics")
    return cast("np.ndarray", codes)


#: The two views of :func:`trainer_metrics`: the card's headline figures, or every number of the score file.
VIEWS = ("headline", "full")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def partial_prefix(partial: bool | str) -> str:
    """The mark every key of a partial score carries: ``partial/`` or, for a named subset, ``partial-NAME/``."""
    if partial is False:
        return ""
    if partial is True:
        return "partial/"
    if isinstance(partial, str) and _NAME.fullmatch(partial):
        return f"partial-{partial}/"
    raise InputError(
        f"partial must be False, True or a subset name (letters, digits, '.', '_', '-'), not {quote(partial)}"
    )


def trainer_metrics(
    query_ids: Sequence[str],
    *,
    track: str = "all",
    source: SourceLike = None,
    revision: str | None = None,
    intervals: IntervalsLike = None,
    view: str = "headline",
    partial: bool | str = False,
) -> Callable[..., FlatScores]:
    """A ``compute_metrics`` function for ``transformers.Trainer``: ``query_ids`` are the evaluation rows' query
    ids in row order, checked now.

    ``view="headline"`` (the default) logs the card's figures only: per track and overall, within-margin recall,
    approval precision, approved memory failures and approved above-margin targets (at most 20 keys,
    :func:`~rlvrambench_hf.scoring.flat.headline_scores`); ``view="full"`` logs every number of the score file
    (:func:`~rlvrambench_hf.scoring.flat.flat_scores`, with ``intervals`` the interval blocks too). The rows must
    cover the selected queries exactly, unless the caller says the evaluation set is a subset: ``partial=True`` (keys
    start ``partial/``) or a subset name (``partial="dev"``: keys start ``partial-dev/``); a partial score is never
    logged under a full score's name.
    Called as ``Trainer(batch_eval_metrics=True)`` calls it (``compute_result``), the batches are gathered and
    scored at the last one (an empty mapping before)."""
    from ..transfer.api import cached_scoring_key, subset_scoring_key
    from ..transfer.score import align_predictions

    if isinstance(query_ids, (str, bytes)) or not hasattr(query_ids, "__iter__"):
        raise InputError("trainer_metrics: query_ids must be a list of query ids, one per evaluation row")
    if view not in VIEWS:
        raise InputError(f"trainer_metrics: view must be one of {', '.join(VIEWS)}, not {quote(view)}")
    ids = [str(q) for q in query_ids]
    prefix = partial_prefix(partial)
    options = interval_options(intervals)
    if prefix:
        key = subset_scoring_key(ids, source, revision, track)
    else:
        key = cached_scoring_key(source, revision, track)
    align_predictions(key, ids, [OUTCOME_LABELS[0]] * len(ids), "query_ids")
    return _ComputeMetrics(key, ids, options, view, prefix)


class _ComputeMetrics:
    """The ``compute_metrics`` callable :func:`trainer_metrics` returns."""

    def __init__(self, key: Any, ids: list[str], options: Any, view: str, prefix: str) -> None:
        self.key, self.ids, self.options, self.view, self.prefix = key, ids, options, view, prefix
        self.batches: list[np.ndarray] = []

    def __call__(self, evaluation: Any, compute_result: bool | None = None) -> FlatScores:
        predictions = getattr(evaluation, "predictions", None)
        if predictions is None and isinstance(evaluation, (tuple, list)) and evaluation:
            predictions = evaluation[0]
        if predictions is None:
            raise InputError("compute_metrics takes an EvalPrediction (or a (predictions, label_ids) pair)")
        if compute_result is None:
            return self.shaped(predictions)
        self.batches.append(batch_codes(predictions))
        if not compute_result:
            return FlatScores()
        gathered = np.concatenate(self.batches)
        self.batches.clear()
        return self.shaped(gathered)

    def shaped(self, predictions: Any) -> FlatScores:
        from ..transfer.score import score_predictions

        states = [OUTCOME_LABELS[c] for c in label_codes(predictions, len(self.ids)).tolist()]
        scores = score_predictions(self.key, self.ids, states, intervals=self.options)
        if self.view == "full":
            return prefixed(flat_scores(scores), self.prefix)
        return headline_scores(scores, self.prefix)


def batch_codes(predictions: Any) -> np.ndarray:
    """One batch's label indices (``batch_eval_metrics``), checked as :func:`label_codes` checks a whole set."""
    if isinstance(predictions, (tuple, list)) and predictions and not np.isscalar(predictions[0]):
        predictions = predictions[0]
    array = np.asarray(predictions)
    return label_codes(array, len(array))
