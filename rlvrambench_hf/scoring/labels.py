"""The benchmark's label metrics, written once: approvals, approval errors, recall and precision.

Approval means predicting (or deciding) ``within_margin``. :class:`Approvals` holds, per observed label, how many
targets there are and how many of them were approved; every rate is computed from it, and a rate whose
denominator is 0 is ``None`` (JSON null), never 0. :func:`metrics_from_confusion` gives the three-label metrics
of one scope as the transfer score file, the estimator comparison and the follow-up studies report them; the
admission panel reads the same :class:`Approvals` from its decisions.

Labels are coded by their position in :data:`~rlvrambench_hf.data.schema.pins.OUTCOME_LABELS`
(0 within margin, 1 above margin, 2 memory failure).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..arrow import arrow_strings, numpy_ints
from ..data.schema.pins import OUTCOME_LABELS
from ..errors import InputError, summary

WITHIN_MARGIN, ABOVE_MARGIN, MEMORY_FAILURE = OUTCOME_LABELS
#: The label whose prediction approves a target.
APPROVAL_LABEL = WITHIN_MARGIN
WITHIN, ABOVE, FAILURE = range(3)


def rate(numerator: int, denominator: int) -> float | None:
    """``numerator / denominator``, or None when the denominator is 0."""
    return numerator / denominator if denominator else None


@dataclass(frozen=True)
class Approvals:
    """Targets and approved targets per observed label (labels beyond the three, e.g. ``unresolved``, allowed)."""

    targets: Mapping[str, int]
    approved: Mapping[str, int]

    @classmethod
    def from_decisions(cls, states: Sequence[str], approved: Sequence[bool]) -> Approvals:
        """From each target's observed label and whether it was approved."""
        targets: dict[str, int] = dict.fromkeys(OUTCOME_LABELS, 0)
        hits: dict[str, int] = dict.fromkeys(OUTCOME_LABELS, 0)
        for state, yes in zip(states, approved, strict=True):
            targets[state] = targets.get(state, 0) + 1
            hits[state] = hits.get(state, 0) + int(yes)
        return cls(targets, hits)

    @property
    def total(self) -> int:
        """Approved targets, whatever their label."""
        return sum(self.approved.values())

    def target(self, label: str) -> int:
        return self.targets.get(label, 0)

    def of(self, label: str) -> int:
        """Approved targets observed as ``label``."""
        return self.approved.get(label, 0)

    def among_approved(self, label: str) -> float | None:
        """Share of the approvals that went to ``label`` targets."""
        return rate(self.of(label), self.total)

    def approval_rate(self, label: str) -> float | None:
        """Share of the ``label`` targets that were approved."""
        return rate(self.of(label), self.target(label))

    @property
    def within_margin_recall(self) -> float | None:
        return self.approval_rate(WITHIN_MARGIN)

    @property
    def within_margin_approval_precision(self) -> float | None:
        return self.among_approved(WITHIN_MARGIN)


def metrics_from_confusion(confusion: np.ndarray) -> dict[str, Any]:
    """The label metrics of one scope from its 3x3 confusion matrix (predicted rows, observed columns)."""
    c = [[int(v) for v in row] for row in confusion]
    queries = sum(map(sum, c))
    correct = c[WITHIN][WITHIN] + c[ABOVE][ABOVE] + c[FAILURE][FAILURE]
    counts = Approvals(
        targets={o: c[0][j] + c[1][j] + c[2][j] for j, o in enumerate(OUTCOME_LABELS)},
        approved={o: c[WITHIN][j] for j, o in enumerate(OUTCOME_LABELS)},
    )
    rejected_within = counts.target(WITHIN_MARGIN) - counts.of(WITHIN_MARGIN)
    return {
        "correct_three_state": correct,
        "three_state_accuracy": rate(correct, queries),
        "approved": counts.total,
        "approved_memory_failure": counts.of(MEMORY_FAILURE),
        "approved_above_margin": counts.of(ABOVE_MARGIN),
        "rejected_within_margin": rejected_within,
        "target_within_margin": counts.target(WITHIN_MARGIN),
        "target_above_margin": counts.target(ABOVE_MARGIN),
        "target_memory_failure": counts.target(MEMORY_FAILURE),
        "memory_failure_among_approved": counts.among_approved(MEMORY_FAILURE),
        "above_margin_among_approved": counts.among_approved(ABOVE_MARGIN),
        "approval_rate_on_memory_failure_targets": counts.approval_rate(MEMORY_FAILURE),
        "approval_rate_on_above_margin_targets": counts.approval_rate(ABOVE_MARGIN),
        "rejection_rate_on_within_margin_targets": rate(rejected_within, counts.target(WITHIN_MARGIN)),
        "confusion_matrix_predicted_rows_observed_columns": {
            p: {o: c[i][j] for j, o in enumerate(OUTCOME_LABELS)} for i, p in enumerate(OUTCOME_LABELS)
        },
        "approved_within_margin": counts.of(WITHIN_MARGIN),
        "within_margin_recall": counts.within_margin_recall,
        "within_margin_approval_precision": counts.within_margin_approval_precision,
    }


@cache
def label_array() -> pa.Array:
    """The three labels as an arrow array (the value set of label lookups)."""
    return arrow_strings(OUTCOME_LABELS)


def encode_labels(values: Sequence[str] | pa.Array, what: str, codes: pa.Array | None = None) -> np.ndarray:
    """Label codes (int8) of ``values``; a one-line :class:`InputError` names the values outside the three.
    ``codes`` is ``index_in(values, labels)`` when the caller has it already."""
    array = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else arrow_strings(values)
    if codes is None:
        codes = pc.index_in(array, value_set=label_array())
    if codes.null_count:
        bad = pc.filter(array, pc.is_null(codes))
        examples = summary(bad.slice(0, 3).to_pylist())
        raise InputError(
            f"{what}: {len(bad)} value(s) outside {', '.join(OUTCOME_LABELS)} (e.g. {examples}); labels are lower case"
        )
    return numpy_ints(codes).astype(np.int8)


def confusion_matrix(predicted: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """3x3 counts, predicted rows and observed columns, of two aligned label-code arrays."""
    return np.bincount(predicted.astype(np.intp) * 3 + observed, minlength=9).reshape(3, 3)


def label_metrics(predicted: Sequence[str], observed: Sequence[str]) -> dict[str, Any]:
    """The label metrics of one scope from aligned predicted and observed labels (see
    :func:`metrics_from_confusion`)."""
    if len(predicted) != len(observed):
        raise InputError(f"label_metrics: {len(predicted)} predicted labels but {len(observed)} observed labels")
    return metrics_from_confusion(
        confusion_matrix(encode_labels(predicted, "predicted labels"), encode_labels(observed, "observed labels"))
    )
