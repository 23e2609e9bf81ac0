"""The registry against the real release: card configs, column order, and every value of every column.

The reference conversion here is written independently of the package with the standard csv and json modules, so
a value that does not fit its declared type, or that the reader converts differently, fails the test.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
import yaml

from rlvrambench_hf.data.schema.pins import OUTCOME_LABELS, UNRESOLVED
from rlvrambench_hf.data.schema.registry import DEFAULT_CONFIG, REGISTRY, card_configs
from rlvrambench_hf.data.tables.reader import load_table

ROWS = {
    "transfer_configurations": 98,
    "all_configurations": 212,
    "eligible_runs": 612,
    "recorded_attempts": 683,
    "stage_measurements": 3434,
    "transfer_queries": 400,
    "admission_candidates": 12,
    "larger_model_configurations": 12,
    "expanded_host_configurations": 6,
    "admission_attempts": 48,
    "configurations": 212,
    "outcomes": 212,
    "not_started_conditions": 6,
    "estimation_targets": 12,
    "expanded_host_targets": 6,
    "model_metadata": 4,
    "larger_model_processes": 36,
    "larger_model_pairs": 18,
    "larger_model_summary": 1,
    "larger_model_costs": 18,
    "larger_model_cost_totals": 1,
    "expanded_host_processes": 18,
    "expanded_host_pairs": 9,
    "expanded_host_summary": 1,
    "expanded_host_costs": 9,
    "expanded_host_cost_totals": 1,
    "admission_realized_work": 48,
    "admission_allocations": 48,
    "admission_validated_runs": 48,
    "admission_stage_measurements": 294,
    "admission_collection_summary": 1,
    "admission_slot_inventory": 48,
}
# Label names the protocol defines although this release holds no such value.
DEFINED_NOT_OBSERVED = {
    ("admission_attempts", "state"): {UNRESOLVED},
    ("expanded_host_pairs", "two_gpu_state"): {UNRESOLVED},
}
# A name has one kind everywhere: these columns hold whole seconds here but fractional seconds in other tables.
WHOLE_VALUES_OF_A_FLOAT_NAME = {("admission_validated_runs", "elapsed_seconds")}


FOLLOWUP_RECORDS = ("processes", "pairs", "summary", "costs", "cost_totals")
ADMISSION_RECORDS = (
    "realized_work",
    "allocations",
    "validated_runs",
    "stage_measurements",
    "collection_summary",
    "slot_inventory",
)


def card_yaml(snapshot: Path) -> dict:
    text = (snapshot / "README.md").read_text(encoding="utf-8")
    return yaml.safe_load(text.split("---")[1])


def test_registry_names_every_card_config_with_its_split_path_and_default(snapshot):
    card = card_yaml(snapshot)["configs"]
    expected = [(c["config_name"], c["data_files"][0]["split"], c["data_files"][0]["path"]) for c in card]
    assert [(s.name, s.split, s.path) for s in card_configs()] == expected
    assert len(expected) == 11
    assert [c["config_name"] for c in card if c.get("default")] == [DEFAULT_CONFIG]
    supporting = sorted(s.name for s in REGISTRY.values() if not s.card)
    assert supporting == sorted(
        [
            "configurations",
            "estimation_targets",
            "expanded_host_targets",
            "model_metadata",
            "not_started_conditions",
            "outcomes",
            *[f"{study}_{record}" for study in ("larger_model", "expanded_host") for record in FOLLOWUP_RECORDS],
            *[f"admission_{record}" for record in ADMISSION_RECORDS],
        ]
    )
    assert set(ROWS) == set(REGISTRY) - {"configuration_feasibility"}


def test_every_spec_has_keys_description_and_only_known_columns():
    for spec in REGISTRY.values():
        assert spec.description and len(spec.description.splitlines()) == 1
        assert set(spec.keys) <= set(spec.column_names), spec.name
        assert len(set(spec.column_names)) == len(spec.columns), spec.name
        for column in spec.label_columns:
            assert column.labels[:3] == OUTCOME_LABELS, (spec.name, column.name)


@pytest.mark.parametrize("name", [n for n in ROWS])
def test_header_order_and_row_count_match_the_file(snapshot, name):
    spec = REGISTRY[name]
    for record in raw_rows(snapshot, spec):
        assert list(record) == spec.column_names
    assert load_table(name, snapshot).num_rows == ROWS[name]


def raw_rows(snapshot: Path, spec) -> list[dict]:
    """The file's rows as text cells: CSV as written; JSON records with their values as a CSV of the release would
    write them (null blank, True/False, lists and mappings ;-joined, a mapping as key=value), the members of a nested
    object the registry names ``outer.inner`` as their own cells."""
    if spec.layout == "csv":
        with open(snapshot / spec.path, newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))
    data = json.loads((snapshot / spec.path).read_text(encoding="utf-8"))
    if spec.layout == "json_mapping":
        assert all(record[spec.keys[0]] == key for key, record in data.items())
        records = list(data.values())
    elif spec.layout == "json_records":
        records = data[spec.member] if spec.member else data
    else:
        assert spec.layout == "json_object"
        apart = {s.member for s in REGISTRY.values() if s.path == spec.path and s.member}
        records = [{k: v for k, v in data.items() if k not in apart}]
    rows = [json_cells(record, spec.column_names) for record in records]
    for row in rows:
        assert sorted(row) == sorted(spec.column_names), spec.name
    return [{name: row[name] for name in spec.column_names} for row in rows]


def json_cells(record: dict, names: list[str], prefix: str = "") -> dict[str, str]:
    def text(value) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return str(value)
        if isinstance(value, dict):
            return ";".join(f"{k}={v}" for k, v in value.items())
        return ";".join(map(str, value)) if isinstance(value, list) else str(value)

    cells = {}
    for key, value in record.items():
        name = prefix + key
        if isinstance(value, dict) and any(n.startswith(name + ".") for n in names):
            cells.update(json_cells(value, names, name + "."))
        else:
            cells[name] = text(value)
    return cells


def reference_value(text: str, kind: str, labels: tuple[str, ...]):
    """Independent conversion of one CSV cell; raises on a value outside the kind."""
    if text in ("", "nan"):
        return None
    if kind == "string":
        return text
    if kind.endswith("_list"):  # string_list: "a;b"; int64_list: "1,2"
        item, separator = {"string_list": ("string", ";"), "int64_list": ("int64", ",")}[kind]
        return [reference_value(v, item, ()) for v in text.split(separator)]
    if kind == "label":
        if text not in labels:
            raise ValueError(f"{text!r} not a label")
        return text
    if kind == "bool":
        return {"True": True, "False": False, "1": True, "0": False}[text]
    if kind == "int64":
        if not re.fullmatch(r"-?\d+", text):
            raise ValueError(f"{text!r} not an integer")
        return int(text)
    if kind == "float64":
        return float(text)
    raise AssertionError(kind)


@pytest.mark.parametrize("name", list(ROWS))
def test_every_value_of_every_column_fits_its_declared_type(snapshot, name):
    spec = REGISTRY[name]
    typed = load_table(name, snapshot, decode=True).to_pylist()
    raw = raw_rows(snapshot, spec)
    assert len(raw) == len(typed)
    for line, (raw_row, typed_row) in enumerate(zip(raw, typed), start=2):
        for column in spec.columns:
            expected = reference_value(raw_row[column.name], column.kind, column.labels)
            assert typed_row[column.name] == expected, (spec.path, line, column.name, raw_row[column.name])
            if expected is not None and column.kind in ("int64", "float64", "bool"):
                assert type(typed_row[column.name]) is {"int64": int, "float64": float, "bool": bool}[column.kind]


@pytest.mark.parametrize("name", list(ROWS))
def test_types_are_the_tightest_that_fit(snapshot, name):
    """No string column that is really numeric or boolean; label names are the values the column holds."""
    spec = REGISTRY[name]
    table = load_table(name, snapshot, decode=True)
    for column in spec.columns:
        values = [v for v in table.column(column.name).to_pylist() if v is not None]
        if column.kind == "string" and values and not column.name.endswith("_id"):
            assert not all(re.fullmatch(r"-?[\d.]+|True|False", v) for v in values), (name, column.name)
        if column.kind == "float64" and values:
            whole = all(v == int(v) for v in values)
            exempt = (name, column.name) in WHOLE_VALUES_OF_A_FLOAT_NAME
            assert not whole or exempt or _written_with_point(snapshot, spec, column.name), (name, column.name)
        if column.kind == "label":
            extra = set(column.labels[3:]) - DEFINED_NOT_OBSERVED.get((name, column.name), set())
            assert extra <= set(values), (name, column.name, extra - set(values))


def _written_with_point(snapshot: Path, spec, column: str) -> bool:
    """A float column may hold whole numbers only when the release writes them with a decimal point (JSON: as
    floating-point numbers)."""
    texts = [r[column] for r in raw_rows(snapshot, spec) if r[column] not in ("", "nan")]
    return all("." in t for t in texts)


def test_eligible_runs_types_and_blank_peaks(snapshot):
    table = load_table("eligible_runs", snapshot, decode=True)
    spec = REGISTRY["eligible_runs"]
    assert type(spec.features["observed_state"]).__name__ == "ClassLabel"
    assert spec.features["observed_state"].names == list(OUTCOME_LABELS)
    assert str(table.schema.field("completed_requested_work").type) == "bool"
    assert str(table.schema.field("requested_training_steps").type) == "int64"
    with open(snapshot / spec.path, newline="", encoding="utf-8") as handle:
        raw = list(csv.DictReader(handle))
    rows = table.to_pylist()
    blanks = [r["completed_run_peak_mib"] == "" for r in raw]
    assert sum(blanks) == 84
    for blank, row in zip(blanks, rows):
        if blank:
            assert row["completed_run_peak_mib"] is None and row["observed_state"] == "memory_failure"
        else:
            assert row["completed_run_peak_mib"] == row["observed_peak_mib"]
    assert sum(r["observed_state"] == "memory_failure" for r in rows) == 84


def test_blank_stays_distinct_from_zero(snapshot):
    attempts = load_table("recorded_attempts", snapshot).to_pydict()
    steps = attempts["last_completed_step_if_documented"]
    assert sorted(v for v in steps if v is not None) == [63, 77] and steps.count(None) == 681
    configurations = load_table("all_configurations", snapshot).to_pydict()
    assert configurations["save_freq"].count(None) == 150 and 0 not in configurations["save_freq"]
    assert configurations["val_before_train"].count(None) == 150
    not_started = load_table("not_started_conditions", snapshot).to_pydict()
    assert not_started["observed_peak_mib"] == [None] * 6 and not_started["attempted"] == [False] * 6
    lists = load_table("larger_model_configurations", snapshot).to_pydict()["eligible_seeds"]
    assert ["151", "152", "153"] in lists and None in lists
