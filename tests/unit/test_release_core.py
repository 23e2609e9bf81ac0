"""Releases from the mini release: build, read back, verify, diff; and ``verify`` of a source (digests, counts,
keys) beside the relation checks of ``tests/test_relations.py``."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import datasets
import pyarrow.parquet as pq
import pytest

from rlvrambench_hf import load_table
from rlvrambench_hf.data.schema.card import read_front_matter
from rlvrambench_hf.data.schema.registry import card_configs, get_spec
from rlvrambench_hf.data.sources.resolve import open_source
from rlvrambench_hf.data.verify import ABSENT, FAILED, PASSED, verify_source
from rlvrambench_hf.errors import InputError
from rlvrambench_hf.release.build import build_release
from rlvrambench_hf.release.diff import diff_releases, diff_tables, resolve_side
from rlvrambench_hf.release.layout import check_version, parquet_path
from rlvrambench_hf.release.verify import VerificationFailed, check_release, verify_release

from minirelease import SUMMARY, rewrite_table, seal

pytestmark = pytest.mark.unit

WHEN = datetime(2026, 1, 1, tzinfo=UTC)
CARD = [s.name for s in card_configs()]


@pytest.fixture(scope="module")
def built(shared_mini, tmp_path_factory):
    return build_release(tmp_path_factory.mktemp("release") / "release", "0.1.0", shared_mini.root, built_at=WHEN)


def test_every_card_config_is_built_and_the_release_verifies(built):
    assert [b.spec.name for b in built.built] == CARD and built.absent == []
    assert verify_release(built.folder, croissant=False).problems == []
    assert check_release(built.folder, croissant=False).configs == CARD


@pytest.mark.parametrize("config", CARD)
def test_the_parquet_files_hold_the_rows_with_label_names_and_the_card_their_features(shared_mini, built, config):
    spec = get_spec(config)
    table = pq.read_table(built.folder / parquet_path(spec))
    assert table.schema.metadata is None  # the card's dataset_info, not the file, states the features
    assert table.equals(load_table(config, shared_mini.root, decode=True).cast(table.schema))
    assert table.to_pylist() == shared_mini.rows[config]
    meta = read_front_matter((built.folder / "README.md").read_text(), "card")
    (info,) = [i for i in meta["dataset_info"] if i["config_name"] == config]
    (parsed,) = datasets.info.DatasetInfosDict.from_dataset_card_data({"dataset_info": [info]}).values()
    assert parsed.features == spec.features


def test_the_card_states_the_configs_and_their_row_counts(shared_mini, built):
    meta = read_front_matter((built.folder / "README.md").read_text(), "card")
    assert [c["config_name"] for c in meta["configs"]] == CARD
    counts = {i["config_name"]: i["splits"][0]["num_examples"] for i in meta["dataset_info"]}
    assert counts == {name: len(shared_mini.rows[name]) for name in CARD}
    record = json.loads((built.folder / "release.json").read_text())
    assert record["built_at"] == "2026-01-01T00:00:00Z" and record["absent_configs"] == {}


def test_the_build_is_deterministic(shared_mini, built, tmp_path):
    again = build_release(tmp_path / "again", "0.1.0", shared_mini.root, built_at=WHEN)
    for path in sorted(built.folder.rglob("*")):
        if path.is_file():
            assert (again.folder / path.relative_to(built.folder)).read_bytes() == path.read_bytes(), path


def test_a_config_whose_file_is_absent_is_left_out_and_named(mini, tmp_path):
    mini.path("configuration_feasibility").unlink()
    result = build_release(tmp_path / "release", "0.2.0", mini.root)
    assert [s.name for s in result.absent] == ["configuration_feasibility"]
    assert (
        "`configuration_feasibility` (`tables/three-model-configurations.csv`)"
        in (result.folder / "README.md").read_text()
    )
    assert verify_release(result.folder, croissant=False).problems == []


def test_verify_finds_a_corrupted_parquet_file_and_an_extra_file(built, tmp_path):
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(built.folder, folder)
    path = folder / parquet_path(get_spec("eligible_runs"))
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    (folder / "notes.txt").write_text("mine")
    problems = verify_release(folder, croissant=False).problems
    assert (
        f"{parquet_path(get_spec('eligible_runs'))}: present but corrupted (SHA-256 or size differs from release.json)"
        in problems
    )
    assert "notes.txt: in the folder but not listed in release.json" in problems
    with pytest.raises(VerificationFailed, match="failed verification: .* more problem"):
        check_release(folder, croissant=False)


def test_the_build_refuses_a_folder_that_is_not_a_previous_build(shared_mini, built, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("x")
    with pytest.raises(InputError, match="is not empty"):
        build_release(mine, "0.1.0", shared_mini.root)
    with pytest.raises(InputError, match="is not a previous release build"):
        build_release(mine, "0.1.0", shared_mini.root, overwrite=True)
    assert (mine / "keep.txt").read_text() == "x"


@pytest.mark.parametrize(("given", "expected"), [("1.2.3", "1.2.3"), ("v0.1.0", "0.1.0")])
def test_versions(given, expected):
    assert check_version(given) == expected


@pytest.mark.parametrize("bad", ["1.2", "01.2.3", "1.2.3-rc1", "latest"])
def test_bad_versions(bad):
    with pytest.raises(InputError, match="is not of the form X.Y.Z"):
        check_version(bad)


def test_diff_names_a_label_change_and_added_and_removed_rows(mini, built):
    rows = mini.rows["transfer_configurations"]
    rows[0]["observed_state"] = "memory_failure"
    rows.pop()  # cfg-d removed
    rewrite_table(mini, "transfer_configurations")
    mini.rows["transfer_queries"].append(dict(mini.rows["transfer_queries"][0], query_id="query-6"))
    rewrite_table(mini, "transfer_queries")
    diff = diff_releases(
        resolve_side(str(built.folder)), resolve_side(str(mini.root)), ["transfer_configurations", "transfer_queries"]
    )
    configurations, queries = diff.configs
    assert configurations.status == "changed" and configurations.removed == [{"configuration_id": "cfg-d"}]
    assert [(c.key, c.column, c.old, c.new) for c in configurations.label_changes] == [
        ({"configuration_id": "cfg-a"}, "observed_state", "within_margin", "memory_failure")
    ]
    assert queries.added == [{"query_id": "query-6"}] and queries.changed_rows == 0
    assert diff.changed and diff.as_json()["configs"][1]["added"] == [{"query_id": "query-6"}]


def test_diff_of_a_release_with_itself_and_of_absent_configs(shared_mini, built):
    same = diff_releases(resolve_side(str(built.folder)), resolve_side(str(shared_mini.root)))
    assert not same.changed and {c.status for c in same.configs} == {"unchanged"}
    spec = get_spec("transfer_queries")
    assert diff_tables(spec, None, None).status == "absent"
    assert diff_tables(spec, None, load_table("transfer_queries", shared_mini.root, decode=True)).status == "added"


def test_verify_source_passes_on_the_mini_release(shared_mini):
    checks = verify_source(open_source(shared_mini.root))
    assert {c.kind for c in checks} == {"digest", "seal", "rows", "keys", "relation", "figure"}
    assert {c.status for c in checks if c.kind not in ("seal", "figure")} == {PASSED}
    assert FAILED not in {c.status for c in checks if c.kind == "figure"}  # the card's figures, counted
    # code, data and outputs not carried
    absent = {c.subject.split(": ")[1] for c in checks if c.status == ABSENT and c.kind == "seal"}
    assert {c.status for c in checks if c.kind == "seal"} == {PASSED, ABSENT} and absent == {
        "data/gsm8k/train.parquet",
        "data/math/train.parquet",
        "memory_tuner/estimation_baselines.py",
        "memory_tuner/run_host_capacity.py",
        "decision_benchmark.py",
        "benchmark/estimation/fitted_model.json",
        "benchmark/estimation/predictions.json",
        "benchmark/estimation/retrospective.json",
    }
    rows = {c.subject: c.detail for c in checks if c.kind == "rows"}
    assert rows["transfer_queries"] == "5 rows; summary.json queries = 5"
    keys = {c.subject: c.detail for c in checks if c.kind == "keys"}
    assert keys["admission_collection_summary"] == "1 record(s), one expected"
    assert keys["larger_model_costs"] == "11 rows, job_id unique"


def test_verify_source_names_a_count_that_disagrees_with_the_summary(mini):
    mini.documents[SUMMARY]["queries"] = 6
    seal(mini)
    failed = {c.subject: c.detail for c in verify_source(open_source(mini.root)) if c.status == FAILED}
    assert failed == {"transfer_queries": "5 rows; summary.json queries = 6"}


def test_verify_source_names_duplicated_keys_and_absent_files(mini):
    stages = mini.rows["stage_measurements"]
    stages.append(dict(stages[0]))
    rewrite_table(mini, "stage_measurements")
    mini.path("not_started_conditions").unlink()
    checks = {(c.kind, c.subject): c for c in verify_source(open_source(mini.root))}
    keys = checks[("keys", "stage_measurements")]
    assert keys.status == FAILED and keys.detail.startswith("run_id+stage: 0 null and 1 duplicated key(s)")
    assert checks[("digest", "benchmark/not_started_conditions.csv")].status == ABSENT
    assert checks[("rows", "not_started_conditions")].status == ABSENT


def test_verify_source_tells_a_corrupted_file_from_an_absent_one(mini):
    path = mini.path("eligible_runs")
    data = bytearray(path.read_bytes())
    data[-2] ^= 1
    path.write_bytes(bytes(data))
    mini.path("admission_candidates").unlink()
    checks = {(c.kind, c.subject): c for c in verify_source(open_source(mini.root))}
    assert checks[("digest", "benchmark/runs.csv")].status == FAILED
    assert checks[("digest", "benchmark/runs.csv")].detail == "SHA-256 differs from the manifest"
    assert checks[("digest", "benchmark/decision/results/candidate_results.csv")].status == ABSENT
