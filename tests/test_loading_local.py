"""Loading from a local copy: typed datasets, integrity, schema drift, missing files and the data CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import rlvrambench_hf
from rlvrambench_hf import load_dataset
from rlvrambench_hf.data.schema.registry import REGISTRY, card_configs
from rlvrambench_hf.data.tables.reader import load_table
from rlvrambench_hf.errors import IntegrityError, MissingFileError, SchemaError, SourceError, UnknownConfigError

from conftest import invoke
from test_registry import ROWS


@pytest.fixture
def release_copy(snapshot: Path, tmp_path: Path) -> Path:
    """A writable copy of the release that a test may damage."""
    return Path(shutil.copytree(snapshot, tmp_path / "release"))


def flip_byte(path: Path, offset: int = 200) -> None:
    data = bytearray(path.read_bytes())
    data[offset] = ord("7") if data[offset] != ord("7") else ord("8")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", [n for n in ROWS if REGISTRY[n].card])
def test_load_dataset_is_typed_like_the_registry(snapshot, tmp_path, name):
    spec = REGISTRY[name]
    dataset = load_dataset(name, spec.split, source=snapshot, cache_dir=str(tmp_path))
    assert dataset.features == spec.features
    assert dataset.num_rows == ROWS[name]
    assert dataset.data.table.select(spec.column_names).equals(load_table(name, snapshot))
    whole = load_dataset(name, source=snapshot, cache_dir=str(tmp_path))
    assert list(whole) == [spec.split]


def test_streaming_yields_the_same_rows(snapshot, tmp_path):
    streamed = load_dataset("stage_measurements", "measured", source=snapshot, streaming=True)
    assert streamed.features == REGISTRY["stage_measurements"].features
    rows = list(streamed)
    assert rows == load_dataset("stage_measurements", "measured", source=snapshot, cache_dir=str(tmp_path)).to_list()


def test_unknown_config_and_split_are_refused(snapshot):
    with pytest.raises(UnknownConfigError, match="unknown config 'runs'"):
        load_dataset("runs", source=snapshot)
    with pytest.raises(UnknownConfigError, match="no split 'train'.*'measured'"):
        load_dataset("eligible_runs", "train", source=snapshot)


def test_missing_config_file_names_the_file_and_revision(snapshot):
    with pytest.raises(
        MissingFileError,
        match=r"configuration_feasibility: tables/three-model-configurations.csv "
        r"is not in this revision",
    ):
        load_dataset("configuration_feasibility", source=snapshot)
    result = invoke("--source", str(snapshot), "show", "configuration_feasibility")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "three-model-configurations.csv" in result.stderr


def test_source_directory_must_exist_and_hold_a_card(tmp_path):
    with pytest.raises(SourceError, match="does not exist"):
        load_table("eligible_runs", tmp_path / "nowhere")
    with pytest.raises(SourceError, match="no dataset card"):
        load_table("eligible_runs", tmp_path)


def test_changed_byte_is_refused_by_load_and_verify_and_an_intact_copy_loads(release_copy, snapshot, tmp_path):
    flip_byte(release_copy / "benchmark" / "runs.csv")
    with pytest.raises(IntegrityError, match="benchmark/runs.csv does not match its published SHA-256"):
        load_dataset("eligible_runs", source=release_copy, cache_dir=str(tmp_path / "cache"))
    assert not list((tmp_path / "cache").rglob("*.arrow"))
    result = invoke("--source", str(release_copy), "verify")
    assert result.returncode == 2
    assert "benchmark/runs.csv" in result.stderr and "failed" in result.stdout
    intact = load_dataset("eligible_runs", "measured", source=snapshot, cache_dir=str(tmp_path / "cache"))
    assert intact.num_rows == 612


@pytest.mark.parametrize("entry", ["/etc/passwd", "../outside.csv", "sub/../../x.csv"])
def test_manifest_paths_must_stay_inside_the_release(release_copy, entry):
    manifest = release_copy / "benchmark" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["files"][entry] = {"sha256": "0" * 64, "size_bytes": 1}
    manifest.write_text(json.dumps(data))
    with pytest.raises(IntegrityError, match="unsafe path"):
        load_table("eligible_runs", release_copy)


def test_schema_drift_and_bad_values_name_the_file(release_copy):
    queries = release_copy / "benchmark" / "queries.csv"
    original = queries.read_text()
    (release_copy / "benchmark" / "manifest.json").write_text('{"files": {}}')  # digests would catch it first

    queries.write_text("\n".join(line + ",x" for line in original.splitlines()).replace(",x", ",extra", 1) + "\n")
    with pytest.raises(SchemaError, match="queries.csv: .*unexpected column"):
        load_table("transfer_queries", release_copy)
    header, rest = original.split("\n", 1)
    queries.write_text(header.rsplit(",", 1)[0] + "\n" + "\n".join(r.rsplit(",", 1)[0] for r in rest.splitlines()))
    with pytest.raises(SchemaError, match="missing column\\(s\\) target_case_id"):
        load_table("transfer_queries", release_copy)
    queries.write_text(original[: original.rindex(",")])
    with pytest.raises(SchemaError, match="queries.csv: cannot be read as CSV"):
        load_table("transfer_queries", release_copy)

    runs = release_copy / "benchmark" / "runs.csv"
    runs.write_text(runs.read_text().replace(",within_margin,", ",fits,", 1))
    with pytest.raises(SchemaError, match="observed_state.*'fits' is not one of its labels"):
        load_table("eligible_runs", release_copy)
    attempts = release_copy / "benchmark" / "attempts.csv"
    text = attempts.read_text().splitlines()
    cells = text[1].split(",")
    cells[6] = "yes"  # the eligible flag
    attempts.write_text("\n".join([text[0], ",".join(cells)] + text[2:]) + "\n")
    with pytest.raises(SchemaError, match=r"'eligible', data row 1: value 'yes' is not a valid bool"):
        load_table("recorded_attempts", release_copy)


def test_cli_configs_lists_eleven_with_ten_available(snapshot):
    result = invoke("--source", str(snapshot), "configs")
    assert result.returncode == 0, result.stderr
    lines = {line.split()[0]: line.split() for line in result.stdout.splitlines()[3:]}
    assert list(lines) == [spec.name for spec in card_configs()]
    for name, cells in lines.items():
        if name == "configuration_feasibility":
            assert cells[2:5] == ["10", "no", "Feasibility"]
        else:
            assert int(cells[2]) == ROWS[name] and cells[4] == "yes"


def test_cli_show_and_export(snapshot, tmp_path):
    shown = invoke("--source", str(snapshot), "show", "eligible_runs", "--limit", "2")
    assert shown.returncode == 0
    assert "observed_state            label" in shown.stdout and "completed_run_peak_mib    float64" in shown.stdout
    out = tmp_path / "runs.parquet"
    result = invoke("--source", str(snapshot), "export", "eligible_runs", "--format", "parquet", "--output", str(out))
    assert result.returncode == 0
    import datasets

    from_parquet = datasets.Dataset.from_parquet(str(out), cache_dir=str(tmp_path / "c"))
    assert from_parquet.features == REGISTRY["eligible_runs"].features
    assert pq.read_table(out).num_rows == 612
    csv_out = tmp_path / "runs.csv"
    assert (
        invoke(
            "--source", str(snapshot), "export", "eligible_runs", "--format", "csv", "--output", str(csv_out)
        ).returncode
        == 0
    )
    copy = tmp_path / "copy"
    shutil.copytree(snapshot, copy)
    shutil.copy(csv_out, copy / "benchmark" / "runs.csv")
    (copy / "benchmark" / "manifest.json").write_text('{"files": {}}')
    assert load_table("eligible_runs", copy).equals(load_table("eligible_runs", snapshot))
    made = invoke(
        "--source",
        str(snapshot),
        "export",
        "eligible_runs",
        "--format",
        "csv",
        "--output",
        str(tmp_path / "no" / "such" / "dir.csv"),
    )
    assert made.returncode == 0 and (tmp_path / "no" / "such" / "dir.csv").is_file()  # missing folders are made
    bad = invoke(
        "--source",
        str(snapshot),
        "export",
        "no_such_config",
        "--format",
        "csv",
        "--output",
        str(tmp_path / "new" / "x.csv"),
    )
    assert bad.returncode == 2 and "no_such_config" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "new").exists()  # a failed command creates no folder


def test_package_exports_the_loader():
    assert callable(rlvrambench_hf.load_dataset) and rlvrambench_hf.REGISTRY is REGISTRY


def test_demo_runs_the_main_job_on_the_real_data(snapshot):

    out = invoke("--source", str(snapshot), "demo")
    assert out.returncode == 0, out.stderr
    for config in ROWS:
        if REGISTRY[config].card:
            assert f"{config} ({REGISTRY[config].split}, {ROWS[config]} rows)" in out.stdout
    assert "gpu_count_transfer  36" in out.stdout and "direct_screen   3" in out.stdout
    assert "study larger_model: 6 of 12 configurations resolved" in out.stdout


def test_a_label_edited_in_outcomes_only_fails_verify_in_one_line(release_copy):
    """The hidden labels the metric scores against (outcomes.csv) must agree with the tables that repeat them."""
    import hashlib

    outcomes = release_copy / "benchmark" / "outcomes.csv"
    lines = outcomes.read_text(encoding="utf-8").splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    state = header.index("observed_state")
    row = next(i for i, line in enumerate(lines[1:], 1) if line.split(",")[state] == "within_margin")
    cells = lines[row].split(",")
    configuration, cells[state] = cells[0], "memory_failure"
    lines[row] = ",".join(cells)
    outcomes.write_text("".join(lines), encoding="utf-8")
    manifest_path = release_copy / "benchmark" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    entry = manifest["files"]["outcomes.csv"] if "files" in manifest else manifest["outcomes.csv"]
    entry.update(sha256=hashlib.sha256(outcomes.read_bytes()).hexdigest(), size_bytes=outcomes.stat().st_size)
    manifest_path.write_text(json.dumps(manifest, indent=2))

    done = invoke("--source", str(release_copy), "verify")
    assert done.returncode == 2
    failed = [line for line in done.stdout.splitlines() if " failed " in line]
    expected = (
        f"all_configurations (benchmark/configuration_results.csv), row configuration_id='{configuration}': has "
        "observed_state 'within_margin', but outcomes (benchmark/outcomes.csv) has observed_state 'memory_failure'"
    )
    relations = [line for line in failed if line.startswith("relation")]
    assert len(relations) == 1 and expected in relations[0], failed
    seals = [line for line in failed if line.startswith("seal")]  # the estimation seals record outcomes.csv
    assert len(seals) == 3 and all("benchmark/outcomes.csv has SHA-256" in line for line in seals)
    (error,) = done.stderr.strip().splitlines()
    assert error.endswith("(and 3 more failed check(s))")
