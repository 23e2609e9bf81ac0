"""Releases: build from the real snapshot, plain `datasets` loading, verify, diff, push plans, olah mirror."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from rlvrambench_hf.data.schema.card import read_front_matter
from rlvrambench_hf.data.schema.registry import DEFAULT_CONFIG, REGISTRY, card_configs, get_spec
from rlvrambench_hf.data.sources.base import sha256_file
from rlvrambench_hf.data.sources.resolve import open_source
from rlvrambench_hf.data.tables.reader import load_table
from rlvrambench_hf.errors import InputError, IntegrityError
from rlvrambench_hf.release.build import build_release
from rlvrambench_hf.release.croissant import validate_croissant
from rlvrambench_hf.release.diff import diff_releases, diff_tables, resolve_side
from rlvrambench_hf.release.layout import digest_file, folder_files, parquet_path
from rlvrambench_hf.release.mirror import publish_mirror
from rlvrambench_hf.release.parquet import release_schema
from rlvrambench_hf.release.push import RemoteFile, commit_operations, plan_push, push_release
from rlvrambench_hf.release.verify import verify_release

from conftest import cli_env, invoke, run_cli
from rangeproxy import RangeProxy

RELEASE_REPO = "kobzaond/RLVRAMBench-release-test"
ROWS = {
    "admission_candidates": 12,
    "transfer_configurations": 98,
    "all_configurations": 212,
    "eligible_runs": 612,
    "recorded_attempts": 683,
    "stage_measurements": 3434,
    "transfer_queries": 400,
    "admission_attempts": 48,
    "larger_model_configurations": 12,
    "expanded_host_configurations": 6,
}
BUILT = [s for s in card_configs() if s.name in ROWS]
ABSENT = "configuration_feasibility"


@pytest.fixture(scope="module")
def release(snapshot, tmp_path_factory) -> Path:
    """A release 1.1.0 built from the snapshot by the command line (read-only for the tests)."""
    out = tmp_path_factory.mktemp("release") / "rel"
    r = invoke("--source", str(snapshot), "release", "build", "--version", "1.1.0", "--output", str(out))
    assert r.returncode == 0, r.stderr
    assert "10 configs" in r.stdout and ABSENT in r.stdout
    return out


def _copy(folder: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "copy"
    shutil.copytree(folder, dest)
    return dest


def _refresh_digest(folder: Path, rel: str) -> None:
    """Record a deliberately edited file's new digest in release.json, so only the edit's own check fires."""
    record = json.loads((folder / "release.json").read_text())
    record["files"][rel] = digest_file(folder / rel).as_json()
    (folder / "release.json").write_text(json.dumps(record, indent=2))


# ---------------------------------------------------------------- build


def test_build_is_deterministic_apart_from_build_time(release, snapshot, tmp_path):
    later = datetime(2031, 1, 2, 3, 4, 5, tzinfo=UTC)
    again = build_release(tmp_path / "again", "1.1.0", snapshot, built_at=later)
    files = folder_files(release)
    assert folder_files(again.folder) == files
    different = [rel for rel in files if (release / rel).read_bytes() != (again.folder / rel).read_bytes()]
    assert different == ["release.json"]
    first, second = (json.loads((f / "release.json").read_text()) for f in (release, again.folder))
    assert second.pop("built_at") == "2031-01-02T03:04:05Z" != first.pop("built_at")
    assert first == second


def test_release_record_states_source_version_and_every_digest(release, snapshot):
    record = json.loads((release / "release.json").read_text())
    assert record["version"] == "1.1.0"
    assert record["source"] == {"source": str(snapshot), "revision": None, "commit": None}
    assert record["package"]["name"] == "rlvrambench-hf" and record["package"]["version"]
    assert record["source_release"] == json.loads((snapshot / "release.json").read_text())
    assert set(record["files"]) == set(folder_files(release)) - {"release.json"}
    for rel, entry in record["files"].items():
        assert entry == {"sha256": sha256_file(release / rel), "size_bytes": (release / rel).stat().st_size}
    assert {k: v["num_examples"] for k, v in record["configs"].items()} == ROWS
    assert record["absent_configs"] == {ABSENT: get_spec(ABSENT).path}


def test_original_files_stay_for_provenance(release, snapshot):
    for rel in folder_files(snapshot):
        if rel not in ("README.md", "release.json"):
            assert (release / rel).read_bytes() == (snapshot / rel).read_bytes(), rel


def test_card_yaml_is_generated_from_the_registry(release, snapshot):
    meta = read_front_matter((release / "README.md").read_text(), "card")
    original = read_front_matter((snapshot / "README.md").read_text(), "original card")
    for key in ("license", "pretty_name", "tags", "language"):
        assert meta[key] == original[key]
    original_splits = {c["config_name"]: c["data_files"][0]["split"] for c in original["configs"]}
    assert [c["config_name"] for c in meta["configs"]] == [s.name for s in BUILT]
    assert ABSENT not in {c["config_name"] for c in meta["configs"]}
    for entry in meta["configs"]:
        (files,) = entry["data_files"]
        assert files["split"] == original_splits[entry["config_name"]]
        assert files["path"].endswith(".parquet") and (release / files["path"]).is_file()
        assert entry.get("default", False) == (entry["config_name"] == DEFAULT_CONFIG)
    from datasets.info import DatasetInfosDict

    for info in meta["dataset_info"]:
        spec = get_spec(info["config_name"])
        (parsed,) = DatasetInfosDict.from_dataset_card_data({"dataset_info": [dict(info)]}).values()
        assert parsed.features == spec.features
        assert parsed.splits[spec.split].num_examples == ROWS[spec.name]
        assert parsed.splits[spec.split].num_bytes > 0
    body = (release / "README.md").read_text()
    assert "within_margin" in body and "memory_failure" in body and "@misc{" in body and ABSENT in body


def test_eval_yaml_declares_a_task_per_track_and_reported_metric(release):
    from rlvrambench_hf.release.evalresults import REPORTED_METRICS, split_task_id
    from rlvrambench_hf.transfer import TRACKS

    declared = yaml.safe_load((release / "eval.yaml").read_text(encoding="utf-8"))
    assert declared["name"] == "RLVRAMBench"
    tasks = declared["tasks"]
    assert len(tasks) == len(TRACKS) * len(REPORTED_METRICS) == 16
    assert {(t["config"], t["split"]) for t in tasks} == {("transfer_queries", "evaluation")}
    assert [split_task_id(t["id"]) for t in tasks] == [(k, m) for k in TRACKS for m in REPORTED_METRICS]
    record = json.loads((release / "release.json").read_text(encoding="utf-8"))
    assert record["files"]["eval.yaml"]["sha256"] == sha256_file(release / "eval.yaml")


def test_parquet_holds_label_names_and_leaves_the_features_to_the_card(release):
    for spec in BUILT:
        schema = pq.read_schema(release / parquet_path(spec))
        assert schema.metadata is None  # no datasets features of its own: the card's dataset_info states them
        assert schema == release_schema(spec)
        assert [schema.field(c.name).type for c in spec.label_columns] == [pa.string()] * len(spec.label_columns)


@pytest.mark.parametrize("spec", BUILT, ids=lambda s: s.name)
def test_plain_load_dataset_of_the_folder_is_typed(release, snapshot, spec):
    import datasets

    typed = load_table(spec.name, snapshot)
    ds = datasets.load_dataset(str(release), spec.name, split=spec.split)
    assert ds.features == spec.features
    assert ds.data.table.select(spec.column_names).cast(typed.schema).equals(typed)
    stream = datasets.load_dataset(str(release), spec.name, split=spec.split, streaming=True)
    assert stream.features == spec.features
    assert list(stream) == typed.to_pylist()


def test_croissant_validates_and_reads_typed_records(release):
    import mlcroissant as mlc

    assert validate_croissant(str(release / "croissant.json")) == []
    dataset = mlc.Dataset(jsonld=str(release / "croissant.json"))
    records = list(dataset.records("recorded_attempts"))
    assert len(records) == ROWS["recorded_attempts"]
    first = records[0]
    outcome = first["recorded_attempts/recorded_outcome"]
    assert outcome.decode() in get_spec("recorded_attempts").column("recorded_outcome").labels  # a name, as stored
    assert isinstance(first["recorded_attempts/evidence_files"], list)
    names = [
        r["recorded_attempts.recorded_outcome.labels/name"]
        for r in dataset.records("recorded_attempts.recorded_outcome.labels")
    ]
    assert names == list(get_spec("recorded_attempts").column("recorded_outcome").labels)
    document = json.loads((release / "croissant.json").read_text())
    assert {rs["@id"] for rs in document["recordSet"]} >= set(ROWS)


def test_build_refuses_bad_arguments_without_output(snapshot, tmp_path):
    out = tmp_path / "out"
    r = invoke("--source", str(snapshot), "release", "build", "--version", "1.1", "--output", str(out))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "X.Y.Z" in r.stderr
    assert not out.exists()
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine")
    r = invoke(
        "--source", str(snapshot), "release", "build", "--version", "1.1.0", "--output", str(occupied), "--overwrite"
    )
    assert r.returncode == 2 and "not a previous release build" in r.stderr
    assert [p.name for p in occupied.iterdir()] == ["notes.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["occupied"]  # no temporary build folder left behind


def test_build_overwrites_a_previous_build_only_when_asked(snapshot, tmp_path):
    out = tmp_path / "rel"
    build_release(out, "1.0.0", snapshot)
    with pytest.raises(InputError, match="not empty"):
        build_release(out, "1.1.0", snapshot)
    build_release(out, "v1.1.0", snapshot, overwrite=True)
    assert json.loads((out / "release.json").read_text())["version"] == "1.1.0"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rel"]


def test_build_refuses_a_source_file_that_fails_its_digest(snapshot, tmp_path):
    corrupted = tmp_path / "src"
    shutil.copytree(snapshot, corrupted)
    path = corrupted / "benchmark" / "runs.csv"
    path.write_bytes(path.read_bytes().replace(b"within_margin", b"above_margin", 1))
    r = invoke("--source", str(corrupted), "release", "build", "--version", "1.1.0", "--output", str(tmp_path / "out"))
    assert r.returncode == 2 and "runs.csv" in r.stderr and "digest" in r.stderr
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- verify


def test_verify_cli_passes_on_a_build(release):
    r = invoke("release", "verify", str(release))
    assert r.returncode == 0, r.stderr
    assert "verified: 69 files, 10 configs" in r.stdout


def test_verify_tells_absent_from_corrupted(release, tmp_path):
    folder = _copy(release, tmp_path)
    (folder / "BENCHMARK.md").unlink()
    with open(folder / "LICENSE", "ab") as handle:
        handle.write(b"\n")
    problems = verify_release(folder).problems
    assert problems == [
        "BENCHMARK.md: listed in release.json but absent",
        "LICENSE: present but corrupted (SHA-256 or size differs from release.json)",
    ]
    r = invoke("release", "verify", str(folder))
    assert r.returncode == 2
    assert r.stderr.splitlines()[-1].startswith("rlvrambench: error: release ")
    assert "BENCHMARK.md: listed in release.json but absent (and 1 more" in r.stderr
    assert [line.removeprefix("problem: ") for line in r.stdout.splitlines()] == problems  # the full list


def test_verify_checks_card_row_counts(release, tmp_path):
    folder = _copy(release, tmp_path)
    card = folder / "README.md"
    text = card.read_text()
    assert text.count("num_examples: 612") == 1
    card.write_text(text.replace("num_examples: 612", "num_examples: 611"))
    _refresh_digest(folder, "README.md")
    assert verify_release(folder, croissant=False).problems == [
        "card: eligible_runs/measured states 611 rows, the Parquet file has 612"
    ]


def test_verify_checks_card_features(release, tmp_path):
    folder = _copy(release, tmp_path)
    card = folder / "README.md"
    meta = read_front_matter(card.read_text(), "card")
    info = next(i for i in meta["dataset_info"] if i["config_name"] == "eligible_runs")
    column = next(f for f in info["features"] if f["name"] == "training_seed")
    column["dtype"] = "float64"
    body = card.read_text().split("\n---\n", 1)[1]
    card.write_text("---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n" + body)
    _refresh_digest(folder, "README.md")
    assert verify_release(folder, croissant=False).problems == [
        "card: dataset_info features of eligible_runs differ from the registry: column(s) training_seed"
    ]


def test_verify_checks_parquet_layout_and_rows(release, tmp_path):
    folder = _copy(release, tmp_path)
    spec = get_spec("stage_measurements")
    rel = parquet_path(spec)
    table = pq.read_table(folder / rel)
    pq.write_table(table.replace_schema_metadata(spec.features.arrow_schema.metadata), folder / rel)
    _refresh_digest(folder, rel)
    problems = verify_release(folder, croissant=False).problems
    assert problems[0] == f"{rel}: embeds datasets features in its schema metadata; the card's dataset_info states them"
    rel = parquet_path(get_spec("transfer_queries"))
    table = pq.read_table(folder / rel)
    pq.write_table(table.slice(1), folder / rel)
    _refresh_digest(folder, rel)
    problems = verify_release(folder, croissant=False).problems
    assert f"{rel}: 399 rows, release.json states 400" in problems
    assert f"{rel}: 399 rows, the typed benchmark/queries.csv has 400" in problems


def test_verify_checks_croissant(release, tmp_path):
    folder = _copy(release, tmp_path)
    path = folder / "croissant.json"
    document = json.loads(path.read_text())
    record_set = next(rs for rs in document["recordSet"] if rs["@id"] == "eligible_runs")
    record_set["field"][4]["dataType"] = "sc:Text"  # training_seed
    path.write_text(json.dumps(document))
    _refresh_digest(folder, "croissant.json")
    assert verify_release(folder, croissant=False).problems == [
        "croissant.json: differs from what the registry and Parquet files give"
    ]
    del document["recordSet"][0]["field"]  # invalid for mlcroissant too
    path.write_text(json.dumps(document))
    _refresh_digest(folder, "croissant.json")
    problems = verify_release(folder).problems
    assert any(p.startswith("croissant.json: mlcroissant:") for p in problems), problems


def test_verify_refuses_a_folder_that_is_not_a_build(snapshot, tmp_path):
    r = invoke("release", "verify", str(snapshot))
    assert r.returncode == 2 and "not written by `rlvrambench release build`" in r.stderr
    r = invoke("release", "verify", str(tmp_path / "missing"))
    assert r.returncode == 2 and "does not exist" in r.stderr


# ---------------------------------------------------------------- diff


def _edit_one_label(snapshot: Path, tmp_path: Path) -> tuple[Path, str]:
    """A copy of the snapshot where one configuration moves from within_margin to memory_failure."""
    edited = tmp_path / "edited-src"
    shutil.copytree(snapshot, edited)
    path = edited / "benchmark" / "configuration_results.csv"
    lines = path.read_text().split("\n")
    header = lines[0].split(",")
    state, key = header.index("observed_state"), header.index("configuration_id")
    for i, line in enumerate(lines[1:], start=1):
        cells = line.split(",")
        if len(cells) == len(header) and cells[state] == "within_margin":
            cells[state] = "memory_failure"
            lines[i] = ",".join(cells)
            configuration = cells[key]
            break
    path.write_text("\n".join(lines))
    manifest_path = edited / "benchmark" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"]["configuration_results.csv"] = digest_file(path).as_json()
    manifest_path.write_text(json.dumps(manifest, indent=2))
    return edited, configuration


def test_diff_reports_exactly_one_label_change(snapshot, tmp_path):
    edited, configuration = _edit_one_label(snapshot, tmp_path)
    build = build_release(tmp_path / "rel", "1.1.1", edited)
    r = invoke("release", "diff", str(snapshot), str(build.folder), "--format", "json")
    assert r.returncode == 1, r.stderr  # they differ, as diff says
    report = json.loads(r.stdout)
    assert report["changed"] is True
    changed = [c for c in report["configs"] if c["status"] != "unchanged"]
    assert [(c["config"], c["status"]) for c in changed] == [("all_configurations", "changed"), (ABSENT, "absent")]
    (config,) = [c for c in changed if c["status"] == "changed"]
    assert (
        config["changes"]
        == config["label_changes"]
        == [
            {
                "key": {"configuration_id": configuration},
                "column": "observed_state",
                "old": "within_margin",
                "new": "memory_failure",
            }
        ]
    )
    assert config["added"] == config["removed"] == [] and config["changed_rows"] == 1
    text = invoke("release", "diff", str(snapshot), str(build.folder)).stdout
    assert "label changes" in text
    (line,) = [row for row in text.splitlines() if configuration in row and row.startswith("all_configurations")]
    assert line.split() == ["all_configurations", configuration, "observed_state", "within_margin", "memory_failure"]
    (origin,) = [row.split() for row in text.splitlines() if row.startswith(configuration)]  # the metric's view
    assert origin[1:] == ["label", "outcomes.observed_state", "within_margin", "memory_failure", "all_configurations"]


def test_diff_of_identical_releases_is_empty(release, snapshot, tmp_path):
    result = diff_releases(open_source(snapshot), open_source(release))
    assert not result.changed
    assert {c.config: c.status for c in result.configs} == {
        **{n: "unchanged" for n in REGISTRY if n != ABSENT},
        ABSENT: "absent",
    }
    out = tmp_path / "diff.json"
    r = invoke("release", "diff", str(snapshot), str(release), "--output", str(out))
    assert r.returncode == 0 and "no differences" in r.stdout
    assert json.loads(out.read_text())["changed"] is False


def test_diff_tables_counts_added_removed_and_changed_rows(snapshot):
    spec = get_spec("admission_candidates")
    table = load_table(spec.name, snapshot, decode=True)
    new = table.slice(1)  # first row removed
    screen = new.column_names.index("screen_state")
    states = new.column("screen_state").to_pylist()
    states[0] = "memory_failure" if states[0] != "memory_failure" else "within_margin"
    import pyarrow as pa

    new = new.set_column(screen, "screen_state", pa.array(states))
    extra = table.slice(0, 1).set_column(
        table.column_names.index("candidate_id"), "candidate_id", pa.array(["new-candidate"])
    )
    new = pa.concat_tables([new, extra])
    result = diff_tables(spec, table, new)
    assert result.status == "changed"
    assert result.removed == [{"candidate_id": table.column("candidate_id")[0].as_py()}]
    assert result.added == [{"candidate_id": "new-candidate"}]
    assert result.changed_rows == 1 and result.changed_columns == {"screen_state": 1}
    assert [c.column for c in result.label_changes] == ["screen_state"]
    assert diff_tables(spec, None, table).status == "added"
    assert diff_tables(spec, table, None).status == "removed"


def test_diff_refuses_an_unreadable_side(snapshot, tmp_path):
    r = invoke("--source", str(snapshot), "release", "diff", str(snapshot), "v9")
    assert r.returncode == 2 and "neither a folder nor REPO_ID@REVISION" in r.stderr


# ---------------------------------------------------------------- push (no network needed)


def test_plan_compares_by_content(release):
    def blob(rel):
        from rlvrambench_hf.release.layout import git_blob_sha1

        path = release / rel
        return RemoteFile(rel, path.stat().st_size, git_blob_sha1(path))

    rel_parquet = parquet_path(get_spec("eligible_runs"))
    remote = {
        "LICENSE": blob("LICENSE"),
        "README.md": RemoteFile("README.md", 10, "0" * 40),
        rel_parquet: RemoteFile(
            rel_parquet, (release / rel_parquet).stat().st_size, "f" * 40, sha256_file(release / rel_parquet)
        ),  # an LFS file: compared by SHA-256
        "old/file.csv": RemoteFile("old/file.csv", 3, "1" * 40),
        ".gitattributes": RemoteFile(".gitattributes", 3, "2" * 40),
    }
    plan = plan_push(release, remote, repo_id="org/name", revision="main", remote_commit="abc")
    assert plan.unchanged == sorted(["LICENSE", rel_parquet])
    assert plan.replace == ["README.md"]
    assert plan.delete == ["old/file.csv"]  # .gitattributes is kept
    assert set(plan.add) == set(folder_files(release)) - {"LICENSE", rel_parquet, "README.md"}


def test_commit_operations_carry_out_the_plan(release):
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    plan = plan_push(
        release,
        {"gone.txt": RemoteFile("gone.txt", 1, "1" * 40)},
        repo_id="org/name",
        revision="main",
        remote_commit=None,
    )
    ops = commit_operations(plan, release)
    adds = [op for op in ops if isinstance(op, CommitOperationAdd)]
    deletes = [op for op in ops if isinstance(op, CommitOperationDelete)]
    assert len(adds) + len(deletes) == len(ops)
    assert [op.path_in_repo for op in adds] == folder_files(release)
    assert all(Path(op.path_or_fileobj) == release / op.path_in_repo for op in adds)
    assert [op.path_in_repo for op in deletes] == ["gone.txt"]


def test_push_without_token_fails_with_one_line(release, hf_home):
    r = run_cli(
        "release",
        "push",
        str(release),
        "--repo-id",
        RELEASE_REPO,
        env=cli_env(HF_HOME=str(hf_home), HF_TOKEN=None, HF_TOKEN_PATH=None),
    )
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "no Hugging Face token found" in r.stderr


def test_push_refuses_a_release_that_fails_verification(release, tmp_path):
    folder = _copy(release, tmp_path)
    (folder / "LICENSE").write_text("changed")
    with pytest.raises(IntegrityError, match="LICENSE: present but corrupted"):
        push_release(folder, RELEASE_REPO, dry_run=True)


# ---------------------------------------------------------------- through a Hub (olah)


@pytest.fixture(scope="module")
def mirror(hub, snapshot, release):
    """A second mirror repository: the snapshot as its first commit, then release 1.1.0 published and tagged."""
    first = hub.add_repo(RELEASE_REPO, snapshot)
    r = invoke(
        "release", "publish-mirror", str(release), "--mirror", str(hub.repo_path(RELEASE_REPO)), "--tag", "v1.1.0"
    )
    assert r.returncode == 0, r.stderr
    assert "new commit" in r.stdout
    return first


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_publish_mirror_makes_one_commit_and_tag(hub, mirror, release):
    repo = hub.repo_path(RELEASE_REPO)
    assert _git(repo, "rev-parse", "main^") == mirror
    assert _git(repo, "rev-parse", "v1.1.0") == _git(repo, "rev-parse", "main")
    assert sorted(_git(repo, "ls-tree", "-r", "--name-only", "v1.1.0").splitlines()) == folder_files(release)
    assert _git(repo, "status", "--porcelain") == ""  # work tree follows the branch
    assert (repo / parquet_path(get_spec("eligible_runs"))).is_file()


def test_publish_mirror_refuses_an_existing_tag(hub, mirror, release):
    repo = hub.repo_path(RELEASE_REPO)
    before = _git(repo, "rev-parse", "main")
    with pytest.raises(InputError, match="tag v1.1.0 already exists"):
        publish_mirror(release, repo, "v1.1.0")
    assert _git(repo, "rev-parse", "main") == before


def test_publish_mirror_creates_a_new_repository(release, tmp_path):
    repo = tmp_path / "mirrors" / "datasets" / "org" / "fresh"
    result = publish_mirror(release, repo, "v1.1.0")
    assert result.previous is None and result.changed
    assert _git(repo, "rev-parse", "v1.1.0") == result.commit
    assert folder_files(repo) == folder_files(release)


@pytest.mark.parametrize("spec", BUILT, ids=lambda s: s.name)
def test_plain_load_dataset_through_the_hub_at_the_tag(mirror, snapshot, spec):
    import datasets

    typed = load_table(spec.name, snapshot)
    ds = datasets.load_dataset(RELEASE_REPO, spec.name, split=spec.split, revision="v1.1.0")
    assert ds.features == spec.features
    assert ds.data.table.select(spec.column_names).cast(typed.schema).equals(typed)
    assert load_table(spec.name, RELEASE_REPO, "v1.1.0").equals(typed)


STREAM_SCRIPT = """
import json, sys
import datasets
from rlvrambench_hf import get_spec, load_table
out = {}
for name in sys.argv[3:]:
    spec = get_spec(name)
    stream = datasets.load_dataset(sys.argv[1], name, split=spec.split, revision="v1.1.0", streaming=True)
    rows = list(stream)
    out[name] = [stream.features == spec.features, rows == load_table(name, sys.argv[2]).to_pylist(), len(rows)]
print(json.dumps(out))
"""


def test_streaming_through_the_hub_at_the_tag(mirror, hub, snapshot, hf_home):
    proxy = RangeProxy(hub.endpoint)
    try:
        done = subprocess.run(
            [sys.executable, "-c", STREAM_SCRIPT, RELEASE_REPO, str(snapshot), *ROWS],
            capture_output=True,
            text=True,
            timeout=600,
            env=cli_env(HF_ENDPOINT=proxy.endpoint, HF_HOME=str(hf_home)),
        )
    finally:
        proxy.close()
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {name: [True, True, rows] for name, rows in ROWS.items()}


def test_previous_revision_is_still_readable_as_it_was(mirror, snapshot):
    from huggingface_hub import HfApi, hf_hub_download

    files = HfApi().list_repo_files(RELEASE_REPO, repo_type="dataset", revision=mirror)
    assert sorted(files) == folder_files(snapshot)
    card = hf_hub_download(RELEASE_REPO, "README.md", repo_type="dataset", revision=mirror)
    assert Path(card).read_bytes() == (snapshot / "README.md").read_bytes()
    for spec in BUILT:
        assert load_table(spec.name, RELEASE_REPO, mirror).equals(load_table(spec.name, snapshot))
    assert not diff_releases(resolve_side(f"{RELEASE_REPO}@{mirror}"), resolve_side("v1.1.0", RELEASE_REPO)).changed


def test_metric_reads_the_tag(mirror, snapshot):
    evaluate = pytest.importorskip("evaluate")
    from rlvrambench_hf import transfer

    from hubserver import REPO_ROOT

    tables = transfer.load_transfer_tables(snapshot)
    predictions = transfer.reference_predictions(tables["queries"], tables["outcomes"], "source_label")
    ids, states = predictions.column("query_id").to_pylist(), predictions.column("predicted_state").to_pylist()
    metric = evaluate.load(str(REPO_ROOT / "metrics" / "rlvrambench"))
    at_tag = metric.compute(predictions=states, query_ids=ids, track="all", source=RELEASE_REPO, revision="v1.1.0")
    local = metric.compute(predictions=states, query_ids=ids, track="all", source=str(snapshot))
    assert at_tag == local


def test_push_dry_run_plans_against_the_mirror_and_changes_nothing(hub, mirror, release, hf_home):
    repo = hub.repo_path(RELEASE_REPO)
    refs = _git(repo, "show-ref")
    r = run_cli(
        "release",
        "push",
        str(release),
        "--repo-id",
        RELEASE_REPO,
        "--revision",
        mirror,
        "--dry-run",
        "--json",
        env=cli_env(HF_HOME=str(hf_home), HF_TOKEN=None),
    )
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout[: r.stdout.rindex("}") + 1])
    assert plan["remote_commit"] == mirror
    generated = {"croissant.json", "eval.yaml"} | {parquet_path(s) for s in BUILT}
    assert set(plan["add"]) == generated
    assert plan["replace"] == ["README.md", "release.json"]
    assert plan["delete"] == []
    assert set(plan["unchanged"]) == set(folder_files(release)) - generated - {"README.md", "release.json"}
    assert "dry run: nothing was changed" in r.stdout
    r = run_cli(
        "release",
        "push",
        str(release),
        "--repo-id",
        RELEASE_REPO,
        "--revision",
        "v1.1.0",
        "--dry-run",
        env=cli_env(HF_HOME=str(hf_home), HF_TOKEN=None),
    )
    assert r.returncode == 0, r.stderr
    assert "0 to add, 0 to replace, 0 to delete, 69 unchanged" in r.stdout
    assert _git(repo, "show-ref") == refs


def test_push_dry_run_refuses_an_existing_tag(mirror, release):
    with pytest.raises(InputError, match="tag v1.1.0 already exists"):
        push_release(release, RELEASE_REPO, tag="v1.1.0", dry_run=True)
