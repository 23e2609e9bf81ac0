"""The fast unit layer: registry, typed reader, verification, scoring and releases on a tiny generated release.

Nothing here reads the real release copy; ``pytest -m unit`` runs these tests alone in a few seconds.
"""

from __future__ import annotations

import numpy as np
import pytest

from rlvrambench_hf import load_dataset, load_table
from rlvrambench_hf.data.schema.registry import REGISTRY, card_configs
from rlvrambench_hf.data.sources.resolve import open_source
from rlvrambench_hf.data.verify import ABSENT, FAILED, PASSED, verify_source
from rlvrambench_hf.errors import IntegrityError, SchemaError
from rlvrambench_hf.release.build import build_release
from rlvrambench_hf.release.diff import diff_releases, resolve_side
from rlvrambench_hf.release.verify import verify_release
from rlvrambench_hf.scoring.labels import Approvals, label_metrics, metrics_from_confusion
from rlvrambench_hf.transfer import score_predictions, scoring_key

from minirelease import MiniRelease, write_mini_release

pytestmark = pytest.mark.unit


@pytest.fixture
def mini(tmp_path) -> MiniRelease:
    return write_mini_release(tmp_path / "mini")


@pytest.mark.parametrize("config", list(REGISTRY))
def test_every_config_reads_back_exactly_what_was_written(mini, config):
    table = load_table(config, mini.root, decode=True)
    assert table.schema.names == REGISTRY[config].column_names
    assert table.to_pylist() == mini.rows[config]


def test_blanks_and_nan_are_null_and_every_kind_is_typed(mini):
    rows = load_table("eligible_runs", mini.root).to_pylist()
    assert rows[1]["failure_kind"] == "failure_kind-1" and rows[2]["failure_kind"] is None  # written "" or "nan"
    assert rows[1]["period"] == -1 and rows[0]["period"] == 7 and rows[2]["period"] is None
    assert rows[0]["completed_requested_work"] is True and rows[1]["completed_requested_work"] is False
    assert rows[0]["observed_state"] == 0 and rows[2]["observed_state"] == 2  # labels as class indices
    attempts = load_table("recorded_attempts", mini.root).to_pylist()
    assert attempts[0]["exclusion_reason"] == ["first", "second"] and attempts[2]["exclusion_reason"] is None


def test_verify_passes_then_tells_corrupted_from_absent(mini):
    assert {c.status for c in verify_source(open_source(mini.root))} == {PASSED}
    runs = mini.root / "benchmark" / "runs.csv"
    data = bytearray(runs.read_bytes())
    data[-2] ^= 1
    runs.write_bytes(bytes(data))
    (mini.root / "benchmark" / "not_started_conditions.csv").unlink()
    checks = {(c.kind, c.subject): c.status for c in verify_source(open_source(mini.root))}
    assert checks[("digest", "benchmark/runs.csv")] == FAILED
    assert checks[("digest", "benchmark/not_started_conditions.csv")] == ABSENT
    with pytest.raises(IntegrityError, match="runs.csv does not match its published SHA-256"):
        load_table("eligible_runs", mini.root)


def _rewrite(path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new, 1))


def test_schema_drift_and_values_outside_their_kind_are_refused_in_one_line(mini):
    path = mini.root / "tables" / "three-model-configurations.csv"  # not covered by a manifest
    original = path.read_text()
    path.write_text("".join(line + ",extra\n" for line in original.splitlines()))
    with pytest.raises(SchemaError, match="schema drift for config configuration_feasibility: unexpected column"):
        load_table("configuration_feasibility", mini.root)
    path.write_text(original)
    _rewrite(path, ",7,", ",7x,")
    with pytest.raises(SchemaError, match=r"column 'gpu_count', data row 1: value '7x' is not a valid int64"):
        load_table("configuration_feasibility", mini.root)


def test_transfer_scoring_on_the_mini_world(mini):
    queries = load_table("transfer_queries", mini.root)
    outcomes = load_table("outcomes", mini.root, decode=True)
    key = scoring_key(queries, outcomes)
    scores = score_predictions(key, ["query-2", "query-1"], ["within_margin", "within_margin"])
    overall = scores["overall"]
    assert (overall["approved"], overall["approved_within_margin"], overall["approved_memory_failure"]) == (2, 1, 1)
    assert overall["within_margin_recall"] == 1.0 and overall["within_margin_approval_precision"] == 0.5
    assert overall["approval_rate_on_above_margin_targets"] is None  # no above-margin target: null, never 0
    assert (overall["eligible_source_processes"], overall["recorded_source_attempts"]) == (6, 4 + 6)
    assert list(scores["per_track"]) == ["model_transfer", "gpu_count_transfer"]


def test_label_metrics_count_approvals_and_leave_zero_denominators_null():
    empty = metrics_from_confusion(np.zeros((3, 3), dtype=int))
    assert empty["approved"] == 0 and empty["three_state_accuracy"] is None and empty["within_margin_recall"] is None
    metrics = label_metrics(
        ["within_margin", "within_margin", "memory_failure"], ["within_margin", "memory_failure", "memory_failure"]
    )
    assert metrics["correct_three_state"] == 2 and metrics["memory_failure_among_approved"] == 0.5
    panel = Approvals.from_decisions(["within_margin", "unresolved", "above_margin"], [True, True, False])
    assert (panel.total, panel.of("unresolved"), panel.approval_rate("above_margin")) == (2, 1, 0.0)


def test_release_build_verify_and_diff_on_the_mini_release(mini, tmp_path):
    built = build_release(tmp_path / "release", "0.0.1", mini.root)
    assert [b.spec.name for b in built.built] == [s.name for s in card_configs()]  # all present, feasibility too
    assert verify_release(built.folder, croissant=False).problems == []
    _rewrite(mini.root / "tables" / "three-model-configurations.csv", "within_margin", "memory_failure")
    diff = diff_releases(resolve_side(str(built.folder)), resolve_side(str(mini.root)), ["configuration_feasibility"])
    (changed,) = diff.configs
    assert [(c.column, c.old, c.new) for c in changed.label_changes] == [
        ("observed_state", "within_margin", "memory_failure")
    ]


def test_load_dataset_from_the_mini_release(mini, tmp_path):
    queries = load_dataset("transfer_queries", "evaluation", source=mini.root, cache_dir=str(tmp_path / "cache"))
    assert queries.features == REGISTRY["transfer_queries"].features
    assert queries.to_list() == mini.rows["transfer_queries"]
