"""The transfer tasks on the mini release's five queries: scoring keys, alignment, scores per scope, the reference
rules and leak-free task inputs. Expected figures are counted by hand from :mod:`miniworld`."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from rlvrambench_hf.errors import InputError, SchemaError, UnknownConfigError
from rlvrambench_hf.transfer import (
    TRACKS,
    align_predictions,
    cached_scoring_key,
    load_transfer_tables,
    predictions_csv,
    reference_predictions,
    reference_scores,
    score_lists,
    score_predictions,
    scoring_key,
    task_inputs,
)

import miniworld as world

pytestmark = pytest.mark.unit

W, A, F = world.W, world.A, world.F
IDS = [q[0] for q in world.QUERIES]


@pytest.fixture(scope="module")
def tables(shared_mini):
    return load_transfer_tables(shared_mini.root, settings=True)


@pytest.fixture(scope="module")
def key(tables):
    return scoring_key(tables["queries"], tables["outcomes"])


def test_the_key_holds_each_query_target_label_and_source_cost(key):
    assert key.query_ids.to_pylist() == IDS and len(key) == 5
    assert key.observed.tolist() == [0, 2, 2, 0, 2]  # targets b, d, d, b, d
    assert key.tracks == list(TRACKS)  # all four, in the documented order
    assert sorted(key.source_eligible.tolist()) == [3, 3] and sorted(key.source_attempts.tolist()) == [3, 4]


def test_the_source_label_rule_scored_by_hand(tables, key):
    rule = reference_predictions(tables["queries"], tables["outcomes"], "source_label")
    assert rule.column("predicted_state").to_pylist() == [W, A, W, A, A]  # sources a, c, a, c, c
    scores = score_predictions(key, rule.column("query_id"), rule.column("predicted_state"))
    overall = scores["overall"]
    assert (overall["queries"], overall["correct_three_state"], overall["approved"]) == (5, 1, 2)
    assert (overall["approved_within_margin"], overall["approved_memory_failure"]) == (1, 1)
    assert overall["within_margin_recall"] == 0.5 and overall["within_margin_approval_precision"] == 0.5
    assert overall["approval_rate_on_above_margin_targets"] is None  # no above-margin target
    assert (overall["distinct_source_configurations"], overall["distinct_target_configurations"]) == (2, 2)
    assert (overall["eligible_source_processes"], overall["recorded_source_attempts"]) == (6, 4 + 3)


def test_per_track_and_per_task_scopes(tables, key):
    scores = score_predictions(key, IDS, [W, F, F, A, W])
    assert list(scores["per_track"]) == list(TRACKS)
    model = scores["per_track"]["model_transfer"]
    assert (model["queries"], model["tasks"], model["correct_three_state"]) == (2, 1, 1)
    assert model["macro_task_three_state_accuracy"] == 0.5
    assert scores["per_track"]["gpu_count_transfer"]["correct_three_state"] == 1
    assert scores["per_track"]["horizon_transfer"]["approved"] == 0
    assert list(scores["per_task"]) == ["task-1", "task-2", "task-3", "task-4"]
    task = scores["per_task"]["task-1"]
    assert task["track"] == "model_transfer" and task["distinct_target_configurations"] == 2
    assert (task["eligible_source_processes"], task["recorded_source_attempts"]) == (6, 7)
    assert scores["overall"]["correct_three_state"] == 3 and scores["selected_track"] == "all"


@pytest.mark.parametrize(
    ("rule", "approved", "correct", "recall"), [("always_approve", 5, 2, 1.0), ("always_reject", 0, 3, 0.0)]
)
def test_the_constant_rules(tables, key, rule, approved, correct, recall):
    predictions = reference_predictions(tables["queries"], tables["outcomes"], rule)
    overall = score_predictions(key, predictions.column("query_id"), predictions.column("predicted_state"))["overall"]
    assert (overall["approved"], overall["correct_three_state"], overall["within_margin_recall"]) == (
        approved,
        correct,
        recall,
    )


def test_one_track_selects_its_queries(tables, shared_mini):
    key = scoring_key(tables["queries"], tables["outcomes"], "model_transfer")
    assert key.query_ids.to_pylist() == ["query-1", "query-5"]
    scores = score_lists(["query-5", "query-1"], [F, W], track="model_transfer", source=shared_mini.root)
    assert scores["overall"]["correct_three_state"] == 2 and list(scores["per_track"]) == ["model_transfer"]
    with pytest.raises(UnknownConfigError, match="unknown track 'model'"):
        scoring_key(tables["queries"], tables["outcomes"], "model")


def test_rows_in_any_order_with_spaces_around_cells(key):
    aligned = align_predictions(
        key, ["query-3 ", " query-1", "query-2", "query-5", "query-4"], [F, W, A, W, "\twithin_margin"]
    )
    assert aligned.tolist() == [0, 1, 2, 0, 0]


@pytest.mark.parametrize(
    ("ids", "states", "message"),
    [
        (IDS, [W, W, W, W, "Within_Margin"], r"predicted_state: 1 value\(s\) outside"),
        (IDS[:4], [W] * 4, r"must cover exactly the 5 selected queries: 1 missing query id\(s\) \(e.g. 'query-5'\)"),
        (IDS + ["query-1"], [W] * 6, r"1 duplicated query id\(s\) \(e.g. 'query-1'\)"),
        (
            IDS[:4] + ["query-9"],
            [W] * 5,
            r"1 unexpected query id\(s\) not among the selected queries \(e.g. 'query-9'\)",
        ),
        (IDS[:4] + [" "], [W] * 5, r"1 row\(s\) have an empty query_id"),
        (IDS, [W] * 4, "5 query ids but 4 predicted labels"),
        ([], [], "no predictions"),
        (IDS[:4] + [None], [W] * 5, r"1 missing \(None\) value"),
    ],
)
def test_bad_prediction_rows_are_one_line(key, ids, states, message):
    with pytest.raises(InputError, match=message):
        align_predictions(key, ids, states)


def test_the_key_refuses_what_it_cannot_score(tables):
    queries, outcomes = tables["queries"], tables["outcomes"]
    twice = pa.concat_tables([queries, queries.slice(0, 1)])
    with pytest.raises(SchemaError, match="query_id is not unique"):
        scoring_key(twice, outcomes)
    moved = queries.set_column(2, "track", pa.array(["model_transfer"] * 4 + ["horizon_transfer"]))
    with pytest.raises(SchemaError, match="task task-1 spans more than one track"):
        scoring_key(moved, outcomes)
    unlabelled = outcomes.set_column(
        outcomes.schema.get_field_index("observed_state"), "observed_state", pa.array(["not_repeated"] * len(outcomes))
    )
    with pytest.raises(SchemaError, match="target configurations without a three-state label"):
        scoring_key(queries, unlabelled)
    without_a = outcomes.filter(pc.not_equal(outcomes.column("configuration_id"), "cfg-a"))
    with pytest.raises(SchemaError, match=r"source configurations have no row in outcomes \(e.g. 'cfg-a'\)"):
        scoring_key(queries, without_a)


def test_task_inputs_carry_sources_and_settings_never_target_outcomes(tables):
    inputs = task_inputs(tables["queries"], tables["outcomes"], tables["configurations"])
    assert [t["task_id"] for t in inputs["tasks"]] == ["task-1", "task-2", "task-3", "task-4"]
    first = inputs["tasks"][0]
    assert [s["configuration_id"] for s in first["sources"]] == ["cfg-a", "cfg-c"]
    assert first["sources"][0]["outcome"]["observed_state"] == W
    assert first["source_case_ids"] == ["case-1"] and first["target_case_ids"] == ["case-2"]
    assert [q["query_id"] for q in first["queries"]] == ["query-1", "query-5"]
    target = first["queries"][0]["target"]
    assert target["configuration_id"] == "cfg-b" and target["case_id"] == "case-2"
    hidden = set(tables["outcomes"].column_names) - {"configuration_id"}
    assert not hidden & set(target) and "training_seed" not in target
    assert inputs["labels"] == [W, A, F] and inputs["prediction_columns"] == ["query_id", "predicted_state"]


def test_task_inputs_refuse_a_target_inside_its_sources_cases(tables):
    queries = tables["queries"]
    inside = queries.set_column(4, "target_configuration_id", pa.array(["cfg-c"] + ["cfg-d"] * 4))
    with pytest.raises(SchemaError, match="query query-1: its target lies inside its task's source cases"):
        task_inputs(inside, tables["outcomes"], tables["configurations"])


def test_predictions_csv_and_the_reference_scores_of_a_source(tables, shared_mini):
    rule = reference_predictions(tables["queries"], tables["outcomes"], "always_reject", track="horizon_transfer")
    assert predictions_csv(rule) == "query_id,predicted_state\nquery-4,memory_failure\n"
    assert reference_scores("always_reject", shared_mini.root)["overall"]["correct_three_state"] == 3
    with pytest.raises(UnknownConfigError, match="unknown rule 'copy'"):
        reference_predictions(tables["queries"], tables["outcomes"], "copy")


def test_the_cached_key_is_built_once_per_source(shared_mini):
    first = cached_scoring_key(shared_mini.root)
    assert cached_scoring_key(shared_mini.root) is first
    assert cached_scoring_key(shared_mini.root, track="model_transfer") is not first
