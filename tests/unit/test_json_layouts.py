"""The JSON layouts beside the ``{key: record}`` mapping — a list of records in a member of the file's object, one
record, nested objects as ``outer.inner`` columns, two entries sharing one file — and the ``int64_list`` kind, on the
mini release's panel records (read back exactly as written by ``tests/unit/test_typed_reading.py``)."""

from __future__ import annotations

import csv
import json

import pyarrow as pa
import pytest

from rlvrambench_hf import load_table
from rlvrambench_hf.data.schema.kinds import INT64_LIST, KINDS
from rlvrambench_hf.data.schema.registry import get_spec
from rlvrambench_hf.data.schema.spec import JSON_RECORDS, Column, ConfigSpec, columns
from rlvrambench_hf.data.tables.jsonfile import record_members
from rlvrambench_hf.data.tables.reader import cast_column, read_typed_file
from rlvrambench_hf.errors import SchemaError

pytestmark = pytest.mark.unit

COSTS, TOTALS, SUMMARY = "larger_model_costs", "larger_model_cost_totals", "larger_model_summary"
COLLECTION, INVENTORY = "admission_collection_summary", "admission_slot_inventory"


def edited(mini, config: str, edit) -> pa.Table:
    """``config`` read after ``edit`` changed the JSON data of its file (the file is read by path)."""
    path = mini.path(config)
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    return read_typed_file(path, get_spec(config))


def test_two_entries_share_one_file_each_reading_its_own_part(shared_mini):
    raw = json.loads(shared_mini.path(COSTS).read_text())
    assert get_spec(COSTS).path == get_spec(TOTALS).path and record_members(get_spec(COSTS).path) == {"allocations"}
    costs = load_table(COSTS, shared_mini.root)
    assert costs.num_rows == len(raw["allocations"]) == 11
    assert costs.column("job_id").to_pylist() == [a["job_id"] for a in raw["allocations"]]
    (totals,) = load_table(TOTALS, shared_mini.root).to_pylist()  # every member but the list of allocations
    assert totals["whole_allocation_time.known_gpu_seconds"] == raw["whole_allocation_time"]["known_gpu_seconds"]
    assert totals["whole_allocation_time.unknown_records"] == 1 and totals["scope"] == raw["scope"]
    (collection,) = load_table(COLLECTION, shared_mini.root, decode=True).to_pylist()
    assert "slot_inventory" not in collection and collection["attempt_states.within_margin"] == 10
    assert load_table(INVENTORY, shared_mini.root).num_rows == 16


def test_nested_objects_are_outer_inner_columns(shared_mini):
    raw = json.loads(shared_mini.path(COSTS).read_text())["allocations"][0]["raw_record_provenance"]
    first = load_table(COSTS, shared_mini.root).to_pylist()[0]
    assert first["raw_record_provenance.batch.line_number"] == raw["batch"]["line_number"]
    assert first["raw_record_provenance.outer.sha256"] == raw["outer"]["sha256"]
    assert first["raw_record_provenance.format_fields"] == raw["format_fields"] == ["first", "second"]
    assert get_spec(COSTS).column("raw_record_provenance.batch.line_number").kind == "int64"


def test_the_members_of_a_record_are_a_set(mini):
    before = load_table(COSTS, mini.root)
    reordered = edited(
        mini, COSTS, lambda d: d.update(allocations=[dict(reversed(r.items())) for r in d["allocations"]])
    )
    assert reordered.equals(before)


@pytest.mark.parametrize(
    ("config", "edit", "message"),
    [
        (
            COSTS,
            lambda d: d["allocations"][1].pop("pair_id"),
            r"allocations #2: schema drift .* missing column\(s\) pair_id",
        ),
        (
            COSTS,
            lambda d: d["allocations"][0]["raw_record_provenance"]["batch"].pop("line"),
            r"allocations #1: schema drift for config larger_model_costs: missing column\(s\) "
            r"raw_record_provenance\.batch\.line",
        ),
        (SUMMARY, lambda d: d.update(extra=1), r"summary.json: record: schema drift .* unexpected column\(s\) extra"),
        (
            COSTS,
            lambda d: d.update(allocations={"a": 1}),
            "expected its member 'allocations' to be a JSON list of records",
        ),
        (INVENTORY, lambda d: d["slot_inventory"].append(3), "expected its member 'slot_inventory' to be a JSON list"),
    ],
)
def test_a_record_that_differs_from_the_registry_is_one_line(mini, config, edit, message):
    with pytest.raises(SchemaError, match=message) as caught:
        edited(mini, config, edit)
    assert "\n" not in str(caught.value) and caught.value.config == config


@pytest.mark.parametrize(
    ("config", "content", "message"),
    [
        (COSTS, "[]", "expected a JSON object with a member 'allocations' holding a list of records"),
        (SUMMARY, "[{}]", r"expected a JSON object \(one record\)"),
        (SUMMARY, "{oops", "is not valid JSON \\(Expecting property name"),
    ],
)
def test_a_file_that_is_not_its_layout_is_one_line(tmp_path, config, content, message):
    path = tmp_path / "file.json"
    path.write_text(content)
    with pytest.raises(SchemaError, match=message):
        read_typed_file(path, get_spec(config))


def test_a_list_of_records_can_be_the_whole_file(tmp_path):
    spec = ConfigSpec(
        "slots", "planned", "slots.json", "test table", ("slot_id",), columns("slot_id status"), layout=JSON_RECORDS
    )
    path = tmp_path / "slots.json"
    path.write_text(json.dumps([{"status": "done", "slot_id": "s1"}, {"slot_id": "s2", "status": None}]))
    assert read_typed_file(path, spec).to_pylist() == [
        {"slot_id": "s1", "status": "done"},
        {"slot_id": "s2", "status": None},
    ]
    path.write_text(json.dumps({"slots": []}))
    with pytest.raises(SchemaError, match="expected its file to be a JSON list of records"):
        read_typed_file(path, spec)


def test_json_values_go_through_the_kinds_as_csv_cells_do(mini):
    (summary,) = edited(mini, SUMMARY, lambda d: d.update(pair_errors={})).to_pylist()
    assert summary["pair_errors"] is None  # an empty object is no value, never an empty list
    (summary,) = edited(mini, SUMMARY, lambda d: d.update(pair_errors={"est-gsm8k-c1-s151": "lost"})).to_pylist()
    assert summary["pair_errors"] == ["est-gsm8k-c1-s151=lost"]
    with pytest.raises(SchemaError, match=r"column 'planned_pairs', data row 1: value '12.5' is not a valid int64"):
        edited(mini, SUMMARY, lambda d: d.update(planned_pairs=12.5))
    with pytest.raises(SchemaError, match=r"column 'allocation_gpu_count', data row 3: value 'True' is not a valid"):
        edited(mini, COSTS, lambda d: d["allocations"][2].update(allocation_gpu_count=True))


@pytest.mark.parametrize(
    ("texts", "typed"),
    [(["1,2,3", "-1", "", "nan"], [[1, 2, 3], [-1], None, None]), (["0", "10,20"], [[0], [10, 20]])],
)
def test_int64_lists_are_comma_separated_step_numbers(texts, typed):
    column = Column("steps", "int64_list", "test column")
    cast = cast_column(pa.chunked_array([pa.array(texts)]), column, "inline")
    assert cast.to_pylist() == typed and cast.type == pa.list_(pa.int64()) == KINDS["int64_list"].arrow_type
    written = INT64_LIST.release_text(cast).to_pylist()
    assert written == [None if t in ("", "nan") else t for t in texts]  # written back as the release writes it


@pytest.mark.parametrize("bad", ["1;2", "1, 2", "1.0", "a", "1,"])
def test_an_int64_list_cell_that_is_not_one_is_refused(bad):
    column = Column("steps", "int64_list", "test column")
    with pytest.raises(SchemaError, match=f"column 'steps', data row 2: value {bad!r} is not a valid int64_list"):
        cast_column(pa.chunked_array([pa.array(["1", bad])]), column, "inline")


def test_the_validated_runs_hold_their_step_lists_in_quoted_csv_cells(shared_mini):
    path = shared_mini.path("admission_validated_runs")
    with open(path, newline="", encoding="utf-8") as handle:
        cells = [row["phase_steps_rollout"] for row in csv.DictReader(handle)]
    assert '"1,2,3,4,5"' in path.read_text() and cells[0] == "1,2,3,4,5"
    runs = load_table("admission_validated_runs", shared_mini.root).to_pylist()
    assert runs[0]["phase_steps_rollout"] == [1, 2, 3, 4, 5] and runs[0]["phase_steps_initializing"] == [0]
    failed = next(r for r in runs if r["failure_kind"] == "rollout_init_memory")
    assert failed["phase_steps_rollout"] is None  # the phase never ran: null, not an empty list
    assert get_spec("admission_validated_runs").features["phase_steps_rollout"].feature.dtype == "int64"
