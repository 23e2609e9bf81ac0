"""Typed reading and casting on the mini release: every kind, nulls, labels, lists, the JSON-mapping layout, and
one-line SchemaErrors naming the file, column and row of a bad cell."""

from __future__ import annotations

import csv
import json

import pyarrow as pa
import pytest

from rlvrambench_hf import load_table
from rlvrambench_hf.data.schema.kinds import KINDS
from rlvrambench_hf.data.schema.pins import OUTCOME_LABELS
from rlvrambench_hf.data.schema.registry import REGISTRY, get_spec
from rlvrambench_hf.data.schema.spec import Column
from rlvrambench_hf.data.tables.reader import (
    cast_column,
    decode_labels,
    read_typed_file,
    text_cell,
    typed_records,
)
from rlvrambench_hf.errors import IntegrityError, MissingFileError, SchemaError, UnknownConfigError

from minirelease import rewrite_table

pytestmark = pytest.mark.unit


def cells(path, column: str) -> list[str]:
    """The raw text of one column of a CSV file, read with the standard library."""
    with open(path, newline="", encoding="utf-8") as handle:
        return [row[column] for row in csv.DictReader(handle)]


def set_cell(path, row: int, column: str, text: str) -> None:
    """Write ``text`` into one cell of a CSV file (data row ``row``, 0-based), everything else unchanged."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    rows[row + 1][rows[0].index(column)] = text
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)


@pytest.mark.parametrize("config", list(REGISTRY))
def test_every_config_reads_back_exactly_what_was_written(shared_mini, config):
    table = load_table(config, shared_mini.root, decode=True)
    assert table.schema.names == REGISTRY[config].column_names
    assert table.to_pylist() == shared_mini.rows[config]


@pytest.mark.parametrize("config", list(REGISTRY))
def test_undecoded_tables_have_the_registry_arrow_schema_and_label_indices(shared_mini, config):
    spec = REGISTRY[config]
    table = load_table(config, shared_mini.root)
    assert table.schema == spec.arrow_schema == spec.features.arrow_schema.remove_metadata()  # what the stream declares
    for column in spec.label_columns:
        written = [r[column.name] for r in shared_mini.rows[config]]
        assert table.column(column.name).to_pylist() == [None if v is None else column.labels.index(v) for v in written]


def test_blank_and_nan_cells_are_null_never_zero_or_empty(shared_mini):
    path = shared_mini.path("outcomes")
    peaks = cells(path, "max_completed_run_peak_mib")
    assert peaks[3] == "nan" and peaks[2] == "39500.0"  # cfg-d failed: no peak
    condition = cells(shared_mini.path("configurations"), "condition")
    assert condition[4] == "" and condition[5] == "nan"
    outcomes = load_table("outcomes", shared_mini.root).to_pylist()
    assert outcomes[3]["max_completed_run_peak_mib"] is None and outcomes[0]["max_completed_run_peak_mib"] == 30000.0
    settings = load_table("configurations", shared_mini.root).to_pylist()
    assert settings[4]["condition"] is None and settings[5]["condition"] is None


def test_every_kind_has_its_type_on_a_generated_row(shared_mini):
    rows = load_table("not_started_conditions", shared_mini.root).to_pylist()
    assert rows[0]["training_seed"] == 7 and rows[1]["training_seed"] == -1 and rows[2]["training_seed"] is None
    assert rows[0]["observed_peak_mib"] == 1024.5 and rows[1]["observed_peak_mib"] == 2049.0
    assert rows[0]["attempted"] is True and rows[1]["attempted"] is False and rows[2]["attempted"] is None
    assert rows[0]["condition"] == "condition-0" and rows[2]["condition"] is None
    assert rows[2]["job_id"] == "job_id-2"  # identifiers are never left blank
    assert [r["outcome"] for r in rows] == [0, 1, 2]  # class indices of within_margin, above_margin, memory_failure
    attempts = load_table("recorded_attempts", shared_mini.root).to_pylist()
    excluded = next(r for r in attempts if r["attempt_id"] == "att-excluded")
    assert (
        excluded["exclusion_reason"] == ["setup_failure", "no_trial_record"] and attempts[0]["exclusion_reason"] is None
    )


def test_label_columns_carry_their_extra_names_after_the_three(shared_mini):
    spec = get_spec("recorded_attempts")
    names = spec.column("recorded_outcome").labels
    assert names[:3] == OUTCOME_LABELS and "no_trial_record" in names
    decoded = load_table("recorded_attempts", shared_mini.root, decode=True)
    assert decoded.column("recorded_outcome").to_pylist()[3] == "no_trial_record"
    assert load_table("recorded_attempts", shared_mini.root).column("recorded_outcome")[3].as_py() == names.index(
        "no_trial_record"
    )


def test_decode_labels_turns_indices_into_names_and_keeps_nulls():
    spec = get_spec("admission_candidates")
    typed = typed_records([{"screen_state": "above_margin", "source_state": "within_margin"}, {}], spec.columns, "x")
    assert typed.schema == spec.arrow_schema
    assert typed.column("screen_state").to_pylist() == [1, None]
    decoded = decode_labels(typed, spec)
    assert decoded.column("screen_state").to_pylist() == ["above_margin", None]
    assert decoded.column("source_state").to_pylist() == ["within_margin", None]


def test_the_json_mapping_layout_reads_lists_booleans_and_integers(shared_mini):
    rows = load_table("model_metadata", shared_mini.root).to_pylist()
    raw = json.loads(shared_mini.path("model_metadata").read_text())
    assert [r["model_id"] for r in rows] == list(raw)
    first = rows[0]
    assert isinstance(first["floating_checkpoint_elements"], int) and first["tie_word_embeddings"] is True
    assert first["shard_header_sha256"] == raw[first["model_id"]]["shard_header_sha256"]
    assert len(first["shard_header_sha256"]) == 2


def test_a_json_record_under_another_key_is_refused(mini):
    path = mini.path("model_metadata")
    data = json.loads(path.read_text())
    first = next(iter(data))
    data["someone/else"] = data.pop(first)
    path.write_text(json.dumps(data))
    with pytest.raises(SchemaError, match=rf"record 'someone/else' has model_id {first!r}"):
        read_typed_file(path, get_spec("model_metadata"))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "expected a JSON object mapping each model_id to a record"),
        ('{"m": 1}', "expected a JSON object mapping each model_id to a record"),
        ("{not json", "is not valid JSON \\(Expecting property name"),
        ('{"m": {"model_id": "m"}}', "schema drift for config model_metadata: missing column"),
    ],
)
def test_a_json_mapping_that_is_not_one_is_one_line(tmp_path, content, message):
    path = tmp_path / "model_metadata.json"
    path.write_text(content)
    with pytest.raises(SchemaError, match=message) as caught:
        read_typed_file(path, get_spec("model_metadata"))
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("config", "row", "column", "bad", "what"),
    [
        ("outcomes", 1, "eligible_processes", "3x", "is not a valid int64"),
        ("outcomes", 0, "max_completed_run_peak_mib", "30,000", "is not a valid float64"),
        ("configurations", 6, "parameter_offload", "yes", "is not a valid bool"),
        ("outcomes", 2, "observed_state", "Within_Margin", "is not one of its labels"),
        ("eligible_runs", 4, "training_seed", "1.0", "is not a valid int64"),
        ("outcomes", 3, "recorded_attempts", " 3", "is not a valid int64"),
    ],
)
def test_a_cell_outside_its_kind_names_file_column_and_row(mini, config, row, column, bad, what):
    path = mini.path(config)
    set_cell(path, row, column, bad)
    with pytest.raises(SchemaError) as caught:
        read_typed_file(path, get_spec(config))
    error = caught.value
    assert str(error).startswith(
        f"{get_spec(config).path}: column {column!r}, data row {row + 1}: value {bad!r} {what}"
    )
    assert (error.path, error.column) == (get_spec(config).path, column) and "\n" not in str(error)


def test_every_bad_value_of_a_column_is_counted(mini):
    path = mini.path("outcomes")
    set_cell(path, 4, "distinct_seeds", "three")
    set_cell(path, 9, "distinct_seeds", "3.5")
    with pytest.raises(SchemaError, match=r"data row 5: value 'three' is not a valid int64 \(2 such values\)"):
        read_typed_file(path, get_spec("outcomes"))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda header: header + ["extra"], r"unexpected column\(s\) extra"),
        (lambda header: header[:-1], r"missing column\(s\) target_case_id"),
        (lambda header: [header[1], header[0], *header[2:]], "are not in the registry's order"),
    ],
    ids=["extra", "missing", "reordered"],
)
def test_schema_drift_is_refused_in_one_line(mini, edit, message):
    path = mini.path("transfer_queries")  # covered by no manifest check here: read by path
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    header = edit(rows[0])
    width = len(header)
    with open(path, "w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows([header] + [(r + [""])[:width] for r in rows[1:]])
    with pytest.raises(SchemaError, match=message):
        read_typed_file(path, get_spec("transfer_queries"))


def test_quoted_cells_with_commas_and_quotes_round_trip(mini):
    row = mini.rows["transfer_configurations"][0]
    row["model_name"] = 'a "quoted", comma'
    rewrite_table(mini, "transfer_configurations")
    assert load_table("transfer_configurations", mini.root).column("model_name")[0].as_py() == 'a "quoted", comma'


def test_a_file_that_is_not_csv_is_a_schema_error(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(b'run_id,stage\n"unterminated,x\n')
    with pytest.raises(SchemaError, match="cannot be read as CSV"):
        read_typed_file(path, get_spec("stage_measurements"))


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, ""), (True, "True"), (False, "False"), (["a", "b"], "a;b"), ({"f": "x", "g": 2}, "f=x;g=2"), (0.1, "0.1")],
)
def test_text_cell_writes_json_values_as_the_release_csv_does(value, expected):
    assert text_cell(value) == expected


@pytest.mark.parametrize(
    ("kind", "texts", "typed"),
    [
        ("int64", ["-3", "", "nan", "12"], [-3, None, None, 12]),
        ("float64", ["1.5", "2", ".5", "1e3"], [1.5, 2.0, 0.5, 1000.0]),
        ("bool", ["True", "False", "1", "0"], [True, False, True, False]),
        ("string_list", ["a;b", "c", "", "d;"], [["a", "b"], ["c"], None, ["d", ""]]),
        ("string", ["x", "", "nan", "NaN"], ["x", None, None, "NaN"]),
    ],
)
def test_cast_column_per_kind(kind, texts, typed):
    column = Column("c", kind, "test column")
    assert cast_column(pa.chunked_array([pa.array(texts)]), column, "inline").to_pylist() == typed
    assert cast_column(pa.chunked_array([pa.array(texts)]), column, "inline").type == KINDS[kind].arrow_type


def test_unknown_config_and_absent_file_are_one_line_with_fields(mini):
    with pytest.raises(UnknownConfigError, match="unknown config 'nope'; known configs: admission_candidates"):
        load_table("nope", mini.root)
    mini.path("expanded_host_configurations").unlink()
    with pytest.raises(MissingFileError, match="config expanded_host_configurations: .* is not in this revision") as e:
        load_table("expanded_host_configurations", mini.root)
    assert e.value.config == "expanded_host_configurations"


def test_a_file_that_differs_from_its_manifest_digest_is_refused(mini):
    path = mini.path("eligible_runs")
    data = bytearray(path.read_bytes())
    data[-2] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(IntegrityError, match="runs.csv does not match its published SHA-256") as caught:
        load_table("eligible_runs", mini.root)
    assert caught.value.path == "benchmark/runs.csv"
