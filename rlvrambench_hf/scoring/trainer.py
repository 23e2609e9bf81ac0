"""``compute_metrics`` for ``transformers.Trainer``: logits (or label indices) of the evaluation rows in, the
benchmark's transfer scores out as a flat mapping of numbers.

The factory takes the query id of each evaluation row, in row order, once; each call turns the predictions into
labels (the argmax over the three labels in :data:`~rlvrambench_hf.data.schema.pins.OUTCOME_LABELS` order, or
the indices themselves) and scores them against the hidden labels fetched as the metric fetches them (cached per
process). The package does not import transformers: anything with a ``predictions`` attribute (an
``EvalPrediction``) or a ``(predictions, label_ids)`` pair is accepted; ``label_ids`` are not used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..data.schema.pins import OUTCOME_LABELS
from ..data.sources.resolve import SourceLike
from ..errors import InputError, quote
from .flat import FlatScores, flat_scores
from .intervals import IntervalsLike, interval_options


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
    return codes


def trainer_metrics(
    query_ids: Sequence[str],
    *,
    track: str = "all",
    source: SourceLike = None,
    revision: str | None = None,
    intervals: IntervalsLike = None,
) -> Callable[[Any], FlatScores]:
    """A ``compute_metrics`` function for ``transformers.Trainer``: ``query_ids`` are the evaluation rows' query
    ids in row order (checked now against the selected queries); each call returns :func:`flat_scores` of the
    transfer score file (with ``intervals``, the interval blocks flattened too)."""
    from ..transfer.api import cached_scoring_key, score_lists

    if isinstance(query_ids, (str, bytes)) or not hasattr(query_ids, "__iter__"):
        raise InputError("trainer_metrics: query_ids must be a list of query ids, one per evaluation row")
    ids = [str(q) for q in query_ids]
    options = interval_options(intervals)
    from ..transfer.score import align_predictions

    align_predictions(cached_scoring_key(source, revision, track), ids, [OUTCOME_LABELS[0]] * len(ids), "query_ids")

    def compute_metrics(evaluation: Any) -> FlatScores:
        predictions = getattr(evaluation, "predictions", None)
        if predictions is None and isinstance(evaluation, (tuple, list)) and evaluation:
            predictions = evaluation[0]
        if predictions is None:
            raise InputError("compute_metrics takes an EvalPrediction (or a (predictions, label_ids) pair)")
        states = [OUTCOME_LABELS[c] for c in label_codes(predictions, len(ids)).tolist()]
        scores = score_lists(ids, states, track=track, source=source, revision=revision, intervals=options)
        return flat_scores(scores)

    return compute_metrics
