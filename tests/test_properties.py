"""Property tests (hypothesis) of the transfer scoring core over the real query ids.

The reference below is a deliberately plain re-statement of the metric definitions (loops and dicts), written
without looking at the core's vectorised code.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvrambench_hf.data.schema.pins import OUTCOME_LABELS
from rlvrambench_hf.data.tables.reader import load_table
from rlvrambench_hf.errors import InputError
from rlvrambench_hf.transfer import read_predictions, score_lists

WM, AM, MF = OUTCOME_LABELS


@pytest.fixture(scope="module")
def truth(snapshot):
    queries = load_table("transfer_queries", snapshot).to_pydict()
    outcomes = load_table("outcomes", snapshot, decode=True).to_pydict()
    label_of = dict(zip(outcomes["configuration_id"], outcomes["observed_state"]))
    return {q: label_of[t] for q, t in zip(queries["query_id"], queries["target_configuration_id"])}


def rate(numerator: int, denominator: int):
    return None if denominator == 0 else numerator / denominator


def reference(predicted: dict[str, str], truth: dict[str, str]) -> dict:
    counts = {p: {o: 0 for o in OUTCOME_LABELS} for p in OUTCOME_LABELS}
    for query, label in predicted.items():
        counts[label][truth[query]] += 1
    approved = sum(counts[WM].values())
    targets = {o: sum(counts[p][o] for p in OUTCOME_LABELS) for o in OUTCOME_LABELS}
    correct = sum(counts[o][o] for o in OUTCOME_LABELS)
    rejected_wm = counts[AM][WM] + counts[MF][WM]
    return {
        "queries": len(predicted),
        "correct_three_state": correct,
        "three_state_accuracy": rate(correct, len(predicted)),
        "approved": approved,
        "approved_within_margin": counts[WM][WM],
        "approved_memory_failure": counts[WM][MF],
        "approved_above_margin": counts[WM][AM],
        "rejected_within_margin": rejected_wm,
        "target_within_margin": targets[WM],
        "target_above_margin": targets[AM],
        "target_memory_failure": targets[MF],
        "memory_failure_among_approved": rate(counts[WM][MF], approved),
        "above_margin_among_approved": rate(counts[WM][AM], approved),
        "approval_rate_on_memory_failure_targets": rate(counts[WM][MF], targets[MF]),
        "approval_rate_on_above_margin_targets": rate(counts[WM][AM], targets[AM]),
        "rejection_rate_on_within_margin_targets": rate(rejected_wm, targets[WM]),
        "within_margin_recall": rate(counts[WM][WM], targets[WM]),
        "within_margin_approval_precision": rate(counts[WM][WM], approved),
        "confusion_matrix_predicted_rows_observed_columns": counts,
    }


def close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) < 1e-12


labels = st.sampled_from(OUTCOME_LABELS)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_core_agrees_with_the_plain_reference_and_ignores_row_order(snapshot, truth, data):
    ids = sorted(truth)
    predicted = {q: data.draw(labels) for q in ids}
    scores = score_lists(list(predicted), list(predicted.values()), source=snapshot)
    expected = reference(predicted, truth)
    overall = scores["overall"]
    for name, value in expected.items():
        if isinstance(value, float) or value is None:
            assert close(overall[name], value), name
        else:
            assert overall[name] == value, name
    cells = overall["confusion_matrix_predicted_rows_observed_columns"]
    assert sum(sum(row.values()) for row in cells.values()) == len(ids)
    order = list(predicted)
    random.Random(data.draw(st.integers(0, 2**32))).shuffle(order)
    assert score_lists(order, [predicted[q] for q in order], source=snapshot) == scores


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_each_track_is_scored_like_the_reference_and_macro_is_exact(snapshot, truth, data):
    queries = load_table("transfer_queries", snapshot).to_pydict()
    track = data.draw(st.sampled_from(sorted(set(queries["track"]))))
    selected = [q for q, t in zip(queries["query_id"], queries["track"]) if t == track]
    task_of = dict(zip(queries["query_id"], queries["task_id"]))
    predicted = {q: data.draw(labels) for q in selected}
    scores = score_lists(list(predicted), list(predicted.values()), track=track, source=snapshot)
    block = scores["per_track"][track]
    expected = reference(predicted, truth)
    assert block["correct_three_state"] == expected["correct_three_state"]
    assert (
        block["confusion_matrix_predicted_rows_observed_columns"]
        == expected["confusion_matrix_predicted_rows_observed_columns"]
    )
    tasks = sorted({task_of[q] for q in selected})
    accuracies = [
        Fraction(
            sum(predicted[q] == truth[q] for q in selected if task_of[q] == t), sum(task_of[q] == t for q in selected)
        )
        for t in tasks
    ]
    assert block["macro_task_three_state_accuracy"] == float(sum(accuracies) / len(accuracies))


csv_text = st.one_of(
    st.text(max_size=200),
    st.lists(st.tuples(st.text(max_size=30), st.text(max_size=20)), max_size=5).map(
        lambda rows: "query_id,predicted_state\n" + "\n".join(f"{a},{b}" for a, b in rows)
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=csv_text, encoding=st.sampled_from(["utf-8", "utf-8-sig", "latin-1"]))
def test_reader_returns_a_table_or_the_documented_error(tmp_path, text, encoding):
    path = tmp_path / "predictions.csv"
    try:
        path.write_bytes(text.encode(encoding))
    except UnicodeEncodeError:
        return
    try:
        query_ids, states = read_predictions(path)
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    assert len(query_ids) == len(states) > 0
