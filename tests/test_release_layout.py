"""A built release reads right in every engine: DuckDB, Polars, pandas and pyarrow see label names and nulls where
``datasets`` sees the card's ClassLabel, from a folder and through the Hub protocol (``HfFileSystem`` at a tag of an
olah-served repository); and ``release verify`` checks that layout column by column."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from rlvrambench_hf.data.schema.card import read_front_matter
from rlvrambench_hf.data.schema.registry import get_spec
from rlvrambench_hf.data.tables.reader import load_table
from rlvrambench_hf.release.build import BuildResult, build_release
from rlvrambench_hf.release.layout import digest_file, parquet_path
from rlvrambench_hf.release.mirror import publish_mirror
from rlvrambench_hf.release.verify import verify_release

from rangeproxy import RangeProxy

duckdb = pytest.importorskip("duckdb")
pl = pytest.importorskip("polars")

ENGINES_REPO = "kobzaond/RLVRAMBench-engines-test"


@pytest.fixture(scope="module")
def release(snapshot, tmp_path_factory) -> BuildResult:
    return build_release(tmp_path_factory.mktemp("layout") / "rel", "1.1.0", snapshot)


def _typed(snapshot: Path, name: str) -> pa.Table:
    """The package's typed table of a config, labels decoded to their names."""
    return load_table(name, snapshot, decode=True)


def _assert_columns_equal(found: dict[str, list], expected: pa.Table, where: str) -> None:
    assert list(found) == expected.column_names, where
    for name in expected.column_names:
        assert found[name] == expected.column(name).to_pylist(), f"{where}: column {name}"


def test_duckdb_reads_names_and_nulls(release, snapshot):
    con = duckdb.connect()
    for built in release.built:
        path, spec = release.folder / built.path, built.spec
        relation = con.sql(f"SELECT * FROM read_parquet('{path}')")
        types = dict(zip(relation.columns, (str(t) for t in relation.types)))
        assert {c.name: types[c.name] for c in spec.label_columns} == {c.name: "VARCHAR" for c in spec.label_columns}
        rows = relation.fetchall()
        found = {name: [row[i] for row in rows] for i, name in enumerate(relation.columns)}
        _assert_columns_equal(found, _typed(snapshot, spec.name), f"duckdb {spec.name}")
    runs = release.folder / parquet_path(get_spec("eligible_runs"))
    counts = con.sql(f"SELECT observed_state, count(*) FROM '{runs}' GROUP BY ALL ORDER BY 2 DESC").fetchall()
    assert counts == [("within_margin", 440), ("above_margin", 88), ("memory_failure", 84)]
    assert con.sql(f"SELECT count(*) FROM '{runs}' WHERE completed_run_peak_mib IS NULL").fetchall() == [(84,)]


def test_polars_reads_names_and_nulls(release, snapshot):
    for built in release.built:
        frame = pl.read_parquet(release.folder / built.path)
        spec = built.spec
        assert all(frame.schema[c.name] == pl.String for c in spec.label_columns), spec.name
        found = {name: frame.get_column(name).to_list() for name in frame.columns}
        _assert_columns_equal(found, _typed(snapshot, spec.name), f"polars {spec.name}")
    runs = pl.read_parquet(release.folder / parquet_path(get_spec("eligible_runs")))
    assert runs.get_column("completed_run_peak_mib").null_count() == 84
    assert set(runs.get_column("observed_state").unique()) == {"within_margin", "above_margin", "memory_failure"}


def test_pyarrow_and_pandas_read_names_and_nulls(release, snapshot):
    for built in release.built:
        table = pq.read_table(release.folder / built.path)
        assert table.equals(_typed(snapshot, built.spec.name)), built.spec.name
    frame = pq.read_table(release.folder / parquet_path(get_spec("eligible_runs"))).to_pandas()
    assert frame["observed_state"].value_counts().to_dict() == {
        "within_margin": 440,
        "above_margin": 88,
        "memory_failure": 84,
    }
    assert int(frame["completed_run_peak_mib"].isna().sum()) == 84


def test_label_columns_are_dictionary_encoded_and_unique_keys_are_not(release):
    metadata = pq.ParquetFile(release.folder / parquet_path(get_spec("eligible_runs"))).metadata
    columns = metadata.schema.names
    encodings = {columns[i]: metadata.row_group(0).column(i).encodings for i in range(len(columns))}
    assert "RLE_DICTIONARY" in encodings["observed_state"]
    assert "RLE_DICTIONARY" not in encodings["run_id"]  # every value distinct: a dictionary would not pay


def test_datasets_reads_the_card_features_and_reports_the_card_sizes(release):
    import datasets

    card = read_front_matter((release.folder / "README.md").read_text(), "card")
    stated = {info["config_name"]: info for info in card["dataset_info"]}
    for built in release.built:
        spec = built.spec
        builder = datasets.load_dataset_builder(str(release.folder), spec.name)
        builder.download_and_prepare()
        assert builder.as_dataset(split=spec.split).features == spec.features
        (split,) = stated[spec.name]["splits"]
        assert builder.info.splits[spec.split].num_bytes == split["num_bytes"] == built.num_bytes, spec.name


def test_a_null_label_stays_null_in_every_engine(snapshot, tmp_path):
    import datasets

    source = tmp_path / "src"
    shutil.copytree(snapshot, source)
    runs = source / "benchmark" / "runs.csv"
    lines = runs.read_text().split("\n")
    column = lines[0].split(",").index("observed_state")
    cells = lines[1].split(",")
    run_id, cells[column] = cells[0], ""
    lines[1] = ",".join(cells)
    runs.write_text("\n".join(lines))
    manifest_path = source / "benchmark" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"]["runs.csv"] = digest_file(runs).as_json()
    manifest_path.write_text(json.dumps(manifest))
    folder = build_release(tmp_path / "rel", "1.1.0", source).folder
    assert verify_release(folder, croissant=False).problems == []
    path = folder / parquet_path(get_spec("eligible_runs"))
    assert duckdb.sql(f"SELECT observed_state FROM '{path}' WHERE run_id = '{run_id}'").fetchall() == [(None,)]
    assert pl.read_parquet(path).get_column("observed_state").null_count() == 1
    loaded = datasets.load_dataset(str(folder), "eligible_runs", split="measured")
    assert loaded.features["observed_state"] == get_spec("eligible_runs").features["observed_state"]
    assert loaded[0]["observed_state"] is None and loaded[1]["observed_state"] is not None
    stream = datasets.load_dataset(str(folder), "eligible_runs", split="measured", streaming=True)
    assert next(iter(stream))["observed_state"] is None


# ---------------------------------------------------------------- verify checks the layout column by column


def _tamper(release: BuildResult, tmp_path: Path, config: str, column: str, values: list) -> tuple[Path, str]:
    """A copy of the release whose Parquet file of ``config`` has ``values`` in ``column`` (digest refreshed)."""
    folder = tmp_path / "copy"
    shutil.copytree(release.folder, folder)
    rel = parquet_path(get_spec(config))
    table = pq.read_table(folder / rel)
    i = table.schema.get_field_index(column)
    table = table.set_column(i, column, pa.array(values, type=table.schema.field(column).type))
    pq.write_table(table, folder / rel)
    record = json.loads((folder / "release.json").read_text())
    record["files"][rel] = digest_file(folder / rel).as_json()
    (folder / "release.json").write_text(json.dumps(record, indent=2))
    return folder, rel


def _column(release: BuildResult, config: str, column: str) -> list:
    return pq.read_table(release.folder / parquet_path(get_spec(config))).column(column).to_pylist()


def test_verify_refuses_a_label_outside_the_class_names(release, tmp_path):
    values = _column(release, "eligible_runs", "observed_state")
    values[3] = "fits"
    folder, rel = _tamper(release, tmp_path, "eligible_runs", "observed_state", values)
    problems = verify_release(folder, croissant=False).problems
    assert f"{rel}: column observed_state: 1 value(s) outside its class names, first 'fits'" in problems


def test_verify_refuses_nulls_that_the_typed_table_does_not_have_and_the_reverse(release, tmp_path):
    values = _column(release, "eligible_runs", "observed_state")
    values[0] = None
    folder, rel = _tamper(release, tmp_path, "eligible_runs", "observed_state", values)
    problems = verify_release(folder, croissant=False).problems
    assert f"{rel}: column observed_state: null in 1 row(s) where the typed benchmark/runs.csv has a value" in problems
    peaks = [0.0 if v is None else v for v in _column(release, "eligible_runs", "completed_run_peak_mib")]
    folder, rel = _tamper(release, tmp_path / "b", "eligible_runs", "completed_run_peak_mib", peaks)
    problems = verify_release(folder, croissant=False).problems
    assert (
        f"{rel}: column completed_run_peak_mib: a value in 84 row(s) where the typed benchmark/runs.csv has null"
        in problems
    )


def test_verify_compares_every_column_with_the_typed_table(release, tmp_path):
    seeds = _column(release, "eligible_runs", "training_seed")
    seeds[5] += 1
    folder, rel = _tamper(release, tmp_path, "eligible_runs", "training_seed", seeds)
    problems = verify_release(folder, croissant=False).problems
    assert f"{rel}: column training_seed: 1 value(s) differ from the typed benchmark/runs.csv" in problems
    reasons = _column(release, "recorded_attempts", "exclusion_reason")
    first = next(i for i, v in enumerate(reasons) if v)
    reasons[first] = list(reversed(reasons[first])) + ["extra"]
    folder, rel = _tamper(release, tmp_path / "b", "recorded_attempts", "exclusion_reason", reasons)
    problems = verify_release(folder, croissant=False).problems
    assert f"{rel}: column exclusion_reason: 1 value(s) differ from the typed benchmark/attempts.csv" in problems


def test_verify_names_a_release_that_stores_class_indices(release, tmp_path):
    """The layout before labels were stored as names: int64 class indices with the features embedded."""
    folder = tmp_path / "copy"
    shutil.copytree(release.folder, folder)
    spec = get_spec("admission_candidates")
    rel = parquet_path(spec)
    indices = load_table(spec.name, folder)
    pq.write_table(indices.replace_schema_metadata(spec.features.arrow_schema.metadata), folder / rel)
    record = json.loads((folder / "release.json").read_text())
    record["files"][rel] = digest_file(folder / rel).as_json()
    (folder / "release.json").write_text(json.dumps(record))
    problems = verify_release(folder, croissant=False).problems
    assert f"{rel}: embeds datasets features in its schema metadata; the card's dataset_info states them" in problems
    for column in ("evaluation_state", "screen_state", "source_state"):
        assert f"{rel}: column {column} is int64, the release stores class names as text" in problems


# ---------------------------------------------------------------- through the Hub protocol


@pytest.fixture(scope="module")
def served(hub, snapshot, release) -> str:
    """The build published as tag v1.1.0 of an olah-served repository."""
    hub.add_repo(ENGINES_REPO, snapshot)
    publish_mirror(release.folder, hub.repo_path(ENGINES_REPO), "v1.1.0")
    return "v1.1.0"


def test_hf_file_system_reads_the_tag_in_every_engine(hub, served, release):
    from huggingface_hub import HfFileSystem

    proxy = RangeProxy(hub.endpoint)  # olah ignores Range; the Hub honours it, and Parquet readers need it
    try:
        fs = HfFileSystem(endpoint=proxy.endpoint, skip_instance_cache=True)
        for built in release.built:
            spec = built.spec
            expected = load_table(spec.name, ENGINES_REPO, served, decode=True)  # the package, at the tag
            path = f"datasets/{ENGINES_REPO}@{served}/{built.path}"
            assert pq.read_table(path, filesystem=fs).equals(expected), spec.name
            with fs.open(path, "rb") as handle:
                frame = pl.read_parquet(handle)
            found = {name: frame.get_column(name).to_list() for name in frame.columns}
            _assert_columns_equal(found, expected, f"polars over HfFileSystem {spec.name}")
            with fs.open(path, "rb") as handle:  # DuckDB's own hf:// needs its httpfs extension (a download)
                relation = duckdb.read_parquet(handle)
                rows = relation.fetchall()
            found = {name: [row[i] for row in rows] for i, name in enumerate(relation.columns)}
            _assert_columns_equal(found, expected, f"duckdb over HfFileSystem {spec.name}")
    finally:
        proxy.close()


def test_label_counts_agree_between_engines_and_datasets(release):
    import datasets

    runs = release.folder / parquet_path(get_spec("eligible_runs"))
    by_duckdb = dict(duckdb.sql(f"SELECT observed_state, count(*) FROM '{runs}' GROUP BY ALL").fetchall())
    loaded = datasets.load_dataset(str(release.folder), "eligible_runs", split="measured")
    names = loaded.features["observed_state"].names
    indices = pa.array(loaded["observed_state"])
    by_datasets = {names[i]: pc.sum(pc.equal(indices, i)).as_py() for i in range(len(names))}
    assert by_duckdb == by_datasets
