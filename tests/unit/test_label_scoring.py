"""The one label-metrics function and the estimator scores built on it, on hand-made confusions and peaks."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from rlvrambench_hf.errors import InputError
from rlvrambench_hf.scoring.estimators import estimator_scores, peak_error_statistics, state_from_peak
from rlvrambench_hf.scoring.labels import (
    Approvals,
    confusion_matrix,
    encode_labels,
    label_metrics,
    metrics_from_confusion,
    rate,
)

pytestmark = pytest.mark.unit

W, A, F = "within_margin", "above_margin", "memory_failure"
RATES = (
    "three_state_accuracy",
    "memory_failure_among_approved",
    "above_margin_among_approved",
    "approval_rate_on_memory_failure_targets",
    "approval_rate_on_above_margin_targets",
    "rejection_rate_on_within_margin_targets",
    "within_margin_recall",
    "within_margin_approval_precision",
)


def test_every_metric_of_a_hand_made_confusion():
    # predicted rows W, A, F; observed columns W, A, F
    confusion = np.array([[5, 2, 1], [1, 3, 0], [0, 1, 4]])
    m = metrics_from_confusion(confusion)
    assert m["correct_three_state"] == 12 and m["three_state_accuracy"] == 12 / 17
    assert (m["approved"], m["approved_within_margin"], m["approved_above_margin"], m["approved_memory_failure"]) == (
        8,
        5,
        2,
        1,
    )
    assert (m["target_within_margin"], m["target_above_margin"], m["target_memory_failure"]) == (6, 6, 5)
    assert m["rejected_within_margin"] == 1 and m["rejection_rate_on_within_margin_targets"] == 1 / 6
    assert m["within_margin_recall"] == 5 / 6 and m["within_margin_approval_precision"] == 5 / 8
    assert m["memory_failure_among_approved"] == 1 / 8 and m["above_margin_among_approved"] == 2 / 8
    assert m["approval_rate_on_memory_failure_targets"] == 1 / 5 and m["approval_rate_on_above_margin_targets"] == 2 / 6
    assert m["confusion_matrix_predicted_rows_observed_columns"][W] == {W: 5, A: 2, F: 1}
    assert m["confusion_matrix_predicted_rows_observed_columns"][F][A] == 1


def test_zero_denominators_are_null_never_zero():
    m = metrics_from_confusion(np.zeros((3, 3), dtype=int))
    assert {k: m[k] for k in RATES} == dict.fromkeys(RATES)
    assert m["approved"] == 0 and m["correct_three_state"] == 0
    only_failures = metrics_from_confusion(np.array([[0, 0, 0], [0, 0, 0], [0, 0, 3]]))
    assert only_failures["within_margin_recall"] is None and only_failures["three_state_accuracy"] == 1.0
    assert only_failures["approval_rate_on_memory_failure_targets"] == 0.0


def test_label_metrics_of_aligned_lists_equal_the_confusion_route():
    predicted = [W, W, A, F, W, F]
    observed = [W, F, A, F, A, W]
    by_lists = label_metrics(predicted, observed)
    codes = {W: 0, A: 1, F: 2}
    by_matrix = metrics_from_confusion(
        confusion_matrix(np.array([codes[p] for p in predicted]), np.array([codes[o] for o in observed]))
    )
    assert by_lists == by_matrix
    assert by_lists["approved"] == 3 and by_lists["approved_memory_failure"] == 1


def test_confusion_matrix_counts_predicted_rows_and_observed_columns():
    assert confusion_matrix(np.array([0, 0, 2]), np.array([1, 0, 2])).tolist() == [[1, 1, 0], [0, 0, 0], [0, 0, 1]]


@pytest.mark.parametrize("bad", ["Within_Margin", "within-margin", "", "unresolved"])
def test_labels_outside_the_three_are_one_line(bad):
    with pytest.raises(InputError, match=r"predicted labels: 1 value\(s\) outside within_margin, above_margin"):
        label_metrics([W, bad], [W, W])


def test_encode_labels_takes_arrow_arrays_and_lists():
    assert encode_labels(pa.array([F, W]), "x").tolist() == [2, 0]
    assert encode_labels([A], "x").dtype == np.int8


def test_lengths_must_agree():
    with pytest.raises(InputError, match="2 predicted labels but 1 observed labels"):
        label_metrics([W, W], [W])


def test_approvals_from_decisions_keep_labels_beyond_the_three():
    panel = Approvals.from_decisions([W, "unresolved", A, W, F], [True, True, False, False, True])
    assert panel.total == 3 and panel.of("unresolved") == 1 and panel.target(W) == 2
    assert panel.within_margin_recall == 0.5 and panel.within_margin_approval_precision == 1 / 3
    assert panel.approval_rate(A) == 0.0 and panel.among_approved(F) == 1 / 3
    assert Approvals.from_decisions([], []).within_margin_recall is None


def test_rate_is_null_on_a_zero_denominator():
    assert rate(0, 0) is None and rate(0, 2) == 0.0 and rate(3, 4) == 0.75


@pytest.mark.parametrize(
    ("peak", "state"),
    [(38912.0, W), (38912.5, A), (40960.0, A), (40960.01, F), (0.0, W)],
)
def test_state_from_peak_uses_strict_inequalities(peak, state):
    assert state_from_peak(peak, 40960, 38912) == state


def test_peak_errors_use_only_targets_with_both_peaks():
    stats = peak_error_statistics([100.0, None, 300.0, 50.0], [150.0, 10.0, 200.0, None])
    assert stats == {
        "completed_peak_prediction_coverage": 2,
        "completed_peak_mae_mib": 75.0,
        "completed_peak_mean_signed_error_mib": 25.0,
        "completed_peak_worst_underestimate_mib": 50.0,
    }
    assert peak_error_statistics([None], [1.0])["completed_peak_mae_mib"] is None
    assert peak_error_statistics([5.0], [1.0])["completed_peak_worst_underestimate_mib"] == 0.0
    with pytest.raises(InputError, match="2 predicted peaks but 1 observed peaks"):
        peak_error_statistics([1.0, 2.0], [1.0])


def test_estimator_scores_add_counts_peaks_and_guard_changes():
    scores = estimator_scores(
        ["c1", "c2", "c2"],
        [W, F, W],
        [W, F, A],
        predicted_peaks_mib=[100.0, None, 40000.0],
        observed_peaks_mib=[120.0, None, 39000.0],
        guard_changed=[False, True, None],
    )
    assert (scores["queries"], scores["distinct_target_configurations"]) == (3, 2)
    assert scores["correct_three_state"] == 2 and scores["approved_above_margin"] == 1
    assert scores["completed_peak_prediction_coverage"] == 2 and scores["completed_peak_mae_mib"] == 510.0
    assert scores["startup_guard_changed_states"] == 1
    plain = estimator_scores(["c1"], [W], [W])
    assert plain["completed_peak_prediction_coverage"] == 0 and plain["startup_guard_changed_states"] == 0
