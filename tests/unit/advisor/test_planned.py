"""Plans in the dataset's vocabulary (``read_plans`` of a CSV, YAML, JSON or mappings) and their checks: types from
the registry, ranges, required settings, the workload and settings given beside them, the models the release knows,
the memory knobs, levels inferred — every refusal one line naming the file, the row and the setting as written."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from rlvrambench_hf.advisor import read_plans
from rlvrambench_hf.errors import InputError
from unit.advisor.given import PHI4, PLAN, plan

pytestmark = pytest.mark.unit


def write_csv(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def refused(planned: object, source: Path, **options: object) -> str:
    with pytest.raises(InputError) as caught:
        read_plans(planned, source=source, **options)
    message = str(caught.value)
    assert "\n" not in message and len(message) <= 500
    return message


def test_a_csv_of_plans_is_typed_by_the_registry_one_row_per_plan(shared_mini, tmp_path):
    path = write_csv(tmp_path / "plans.csv", [plan(), plan(gpu_count=4, free_cache_engine=False)])
    plans = read_plans(path, source=shared_mini.root)
    assert len(plans) == 2 and list(plans.origins) == [f"{path} row 1", f"{path} row 2"]
    second = plans.settings(1)
    assert (second["gpu_count"], second["free_cache_engine"], second["vllm_gpu_memory_utilization"]) == (4, False, 0.55)
    assert plans.table.schema.field("gpu_count").type == "int64"
    assert plans.table.schema.field("vllm_gpu_memory_utilization").type == "double"


@pytest.mark.parametrize("layout", ["mapping", "list", "configurations"])
def test_yaml_and_json_plans_in_every_layout_read_as_the_csv_does(shared_mini, tmp_path, layout):
    document = {"mapping": PLAN, "list": [PLAN], "configurations": {"configurations": [PLAN]}}[layout]
    as_yaml = tmp_path / "plan.yaml"
    as_yaml.write_text("\n".join(_yaml(document)) + "\n")
    as_json = tmp_path / "plan.json"
    as_json.write_text(json.dumps(document))
    from_csv = read_plans(write_csv(tmp_path / "plan.csv", [PLAN]), source=shared_mini.root).settings(0)
    assert read_plans(as_yaml, source=shared_mini.root).settings(0) == from_csv
    assert read_plans(as_json, source=shared_mini.root).settings(0) == from_csv


def _yaml(document: object) -> list[str]:
    import yaml

    return yaml.safe_dump(document, sort_keys=False).splitlines()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"gpu_count": "two"}, r"row 2: column 'gpu_count': 'two' is not an integer$"),
        ({"gpu_count": 0}, r"row 2: column 'gpu_count': 0 is not a positive count$"),
        ({"actor_micro_batch": 2.5}, r"row 2: column 'actor_micro_batch': '2.5' is not an integer$"),
        (
            {"vllm_gpu_memory_utilization": 1.2},
            r"row 2: column 'vllm_gpu_memory_utilization': 1.2 is not a fraction strictly between 0 and 1$",
        ),
        ({"vllm_gpu_memory_utilization": 0}, r"row 2: column 'vllm_gpu_memory_utilization': 0"),
        ({"max_prompt_length": -512}, r"row 2: column 'max_prompt_length': -512 is not a positive count$"),
        ({"free_cache_engine": "sometimes"}, r"row 2: column 'free_cache_engine': 'sometimes'"),
    ],
)
def test_a_bad_cell_is_one_line_naming_the_file_row_and_column(shared_mini, tmp_path, changes, message):
    path = write_csv(tmp_path / "plans.csv", [plan(), plan(**changes)])
    found = refused(path, shared_mini.root)
    assert found.startswith(f"{path} row 2: ") and re.search(message, found), found


def test_values_of_a_mapping_are_typed_from_their_text_and_refused_when_they_are_not_values(shared_mini):
    assert read_plans([plan(gpu_count="4", train_batch_size=32)], source=shared_mini.root).settings(0)["gpu_count"] == 4
    assert refused([plan(max_model_len=2**70)], shared_mini.root) == (
        "planned configurations: max_model_len: '1180591620717411303424' is an integer beyond int64"
    )
    assert "gpu_count: 'nan' is not an integer" in refused([plan(gpu_count=float("nan"))], shared_mini.root)


def test_a_setting_left_out_is_named_with_how_many_plans_miss_it(shared_mini, tmp_path):
    blank = plan()
    blank["rollout_n"] = ""
    path = write_csv(tmp_path / "plans.csv", [plan(), blank, blank])
    assert refused(path, shared_mini.root) == (
        f"plans: missing setting(s) column 'rollout_n' (2 of 3 plans, the first: {path} row 2)"
    )
    no_workload = {k: v for k, v in PLAN.items() if k != "workload_id"}
    assert refused([no_workload], shared_mini.root) == (
        "planned configurations: missing setting(s) workload_id (name the measured one it resembles with --workload: "
        "gsm8k, math, workload_id-0, workload_id-1, workload_id-2, workload_id-3)"  # the mini release's workloads
    )


def test_the_workload_and_settings_given_beside_fill_what_the_plans_leave_out_and_never_override_them(shared_mini):
    no_workload = {k: v for k, v in PLAN.items() if k not in ("workload_id", "gpu_count")}
    plans = read_plans([no_workload], workload="math", settings={"gpu_count": "4"}, source=shared_mini.root)
    assert (plans.settings(0)["workload_id"], plans.settings(0)["gpu_count"]) == ("math", 4)
    assert refused([plan()], shared_mini.root, workload="math") == (
        "planned configurations: workload_id: the plan gives 'gsm8k', not the 'math' asked for"
    )
    assert refused([plan()], shared_mini.root, settings={"colour": "red"}) == (
        "unknown setting(s) 'colour' (use the columns of benchmark/configurations.csv)"
    )
    assert refused([plan()], shared_mini.root, settings={"gpu_count": 0}).endswith("0 is not a positive count")


def test_an_unknown_column_is_refused_not_ignored(shared_mini, tmp_path):
    path = write_csv(tmp_path / "plans.csv", [{**plan(), "colour": "red"}])
    assert refused(path, shared_mini.root) == (
        f"{path}: unknown setting(s) 'colour' (use the columns of benchmark/configurations.csv)"
    )


def test_a_model_is_one_the_release_measured_or_a_hub_name(shared_mini):
    assert read_plans([plan(model_id=PHI4)], source=shared_mini.root).settings(0)["model_id"] == PHI4
    assert read_plans([plan(model_id="someone/new-model")], source=shared_mini.root).settings(0)["model_id"] == (
        "someone/new-model"
    )
    message = refused([plan(model_id="not a model!")], shared_mini.root)
    assert message.startswith("planned configurations: model_id: 'not a model!' is neither a model the release ")
    assert message.endswith("nor a folder here with a config.json, nor a Hub model repository name")


def test_memory_knobs_beside_the_settings_are_typed_as_knobs(shared_mini):
    plans = read_plans(
        [plan(gradient_checkpointing=False, layered_summon=True, lora_rank=32, rollout_engine="vllm"), plan()],
        source=shared_mini.root,
    )
    first = plans.settings(0)
    assert (first["gradient_checkpointing"], first["layered_summon"], first["lora_rank"]) == (False, True, 32)
    assert "gradient_checkpointing" not in plans.settings(1)  # not given: the model takes its default
    assert refused([plan(gradient_checkpointing="maybe")], shared_mini.root) == (
        "planned configurations: gradient_checkpointing: 'maybe' is not a bool (activation recomputation in the "
        "actor update)"
    )


@pytest.mark.parametrize(("knob", "value"), [("lora_rank", -3), ("nnodes", 0)])
def test_a_knob_outside_its_range_is_refused_in_one_line(shared_mini, knob, value):
    assert refused([plan(**{knob: value})], shared_mini.root).startswith(f"planned configurations: {knob}: {value}")


def test_an_unmeasured_workload_is_read_with_a_flag_and_a_measured_level_is_named(shared_mini):
    plans = read_plans([plan(workload_id="aime"), plan(max_response_length=512, max_model_len=1024)],
                       source=shared_mini.root)  # fmt: skip
    assert plans.row_flags(0)[0].startswith("workload aime was not measured (measured: gsm8k, math")
    # GSM8K's level c1 of the mini release: micro-batches 4 / 8, vLLM 0.6 of the device, 512 + 512 tokens
    level = read_plans([plan(vllm_gpu_memory_utilization=0.6, max_response_length=512, max_model_len=1024)],
                       source=shared_mini.root)  # fmt: skip
    assert level.settings(0)["configuration_level"] == "c1"
    assert "configuration_level" not in plans.settings(1)  # vLLM's 0.55 is no measured level


def test_a_column_nothing_was_given_in_is_typed_as_the_casts_type_it(monkeypatch):
    """Blank or null cells of a column are nulls of its type without the casts (a plan read from a launch file leaves
    a third of the settings so); the casts, run on the same cells, make the same table."""
    import pyarrow as pa

    from rlvrambench_hf.advisor.plan.plans import SETTINGS_CONFIG
    from rlvrambench_hf.advisor.read import checks
    from rlvrambench_hf.arrow import string_array
    from rlvrambench_hf.data.schema.registry import get_spec

    columns = get_spec(SETTINGS_CONFIG).columns
    where = checks.Where(lambda _: "plans", {})
    blank = pa.table({c.name: string_array(["", "", ""]) for c in columns})
    null = pa.table({c.name: pa.nulls(3, pa.string()) for c in columns})
    given = pa.table({c.name: string_array(["", " ", ""]) for c in columns})  # a space: cast, then null
    fast = [checks.typed_from_text(t, columns, where) for t in (blank, null, given)]
    monkeypatch.setattr(checks, "_blank", lambda text: False)
    cast = [checks.typed_from_text(t, columns, where) for t in (blank, null, given)]
    assert all(f.equals(c) and f.schema.equals(c.schema) for f, c in zip(fast, cast))
    assert all(fast[0].column(c.name).null_count == 3 for c in columns)
