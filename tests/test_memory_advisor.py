"""The advisor on the per-phase model: the device as a parameter, the KV-cache floor, the JSON contract, what the
model does not cover, and every measured configuration answered from its measurement first."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvrambench_hf import advisor
from rlvrambench_hf.advisor.assess.context import load_context
from rlvrambench_hf.advisor.output.document import document
from rlvrambench_hf.advisor.plan.hardware import Hardware
from rlvrambench_hf.advisor.plan.plans import Plans
from rlvrambench_hf.data.schema.registry import get_spec
from rlvrambench_hf.data.tables.reader import load_table

SCHEMA = get_spec("configurations").arrow_schema
SEVERITY = {"within_margin": 0, "above_margin": 1, "memory_failure": 2}
QWEN7B = {
    "model_id": "Qwen/Qwen2.5-7B-Instruct", "workload_id": "gsm8k", "gpu_count": 1, "rollout_tp_size": 1,
    "actor_micro_batch": 8, "rollout_logprob_micro_batch": 4, "ref_logprob_micro_batch": 4,
    "vllm_gpu_memory_utilization": 0.2, "parameter_offload": False, "optimizer_offload": False,
    "free_cache_engine": True, "max_prompt_length": 1024, "max_response_length": 2048, "max_model_len": None,
    "max_num_seqs": 64, "rollout_n": 2, "train_batch_size": 32,
}  # fmt: skip
QWEN3B = {**QWEN7B, "model_id": "Qwen/Qwen2.5-3B-Instruct", "gpu_count": 2, "vllm_gpu_memory_utilization": 0.6,
          "max_model_len": 3072}  # fmt: skip


def plans(rows: list[dict], knobs: dict[str, pa.DataType] | None = None) -> Plans:
    names = [n for n in rows[0] if n in SCHEMA.names]
    table = pa.Table.from_pylist(
        [{k: r[k] for k in names} for r in rows], schema=pa.schema([SCHEMA.field(n) for n in names])
    )
    for name, kind in (knobs or {}).items():
        table = table.append_column(name, pa.array([r.get(name) for r in rows], kind))
    return Plans(table, ["test"] * len(rows))


@pytest.fixture(scope="module")
def context(snapshot):
    return load_context(snapshot)


def answer(context, rows, hardware=None, knobs=None):
    hardware = hardware or Hardware()
    return document(advisor.advise(plans(rows, knobs), context=context, hardware=hardware))["configurations"]


def test_qwen7b_on_an_80gb_h100_at_u02_fails_its_kv_floor_and_holds_it_with_max_model_len_4096(context):
    unset, capped = answer(context, [QWEN7B, {**QWEN7B, "max_model_len": 4096}], Hardware.of(None, None, "H100"))
    assert (unset["verdict"]["state"], unset["verdict"]["basis"]) == ("memory_failure", "floor")
    kv = next(f for f in unset["floors"] if f["check"] == "kv_cache_one_sequence")
    assert kv["holds"] is False and "1,792 MiB > " in kv["arithmetic"] and "= 1,786 MiB" in kv["arithmetic"]
    assert next(f for f in capped["floors"] if f["check"] == "kv_cache_one_sequence")["holds"] is True
    assert capped["verdict"]["basis"] == "predicted" and capped["verdict"]["sentence"].startswith("on H100 80GB")


def test_the_json_contract_of_a_plan(context):
    (entry,) = answer(context, [{**QWEN3B, "workload_id": "math"}], Hardware.of(None, None, "A100-80GB"))
    assert entry["device"] == {"name": "A100 80GB", "capacity_mib": 81920, "margin_mib": 77824, "measured": False}
    assert [p["phase"] for p in entry["phases"]] == [
        "initializing", "rollout", "reference_logprob", "actor_update", "weight_sync"
    ]  # fmt: skip
    for phase in entry["phases"]:
        assert phase["peak_mib"] == pytest.approx(sum(t["mib"] for t in phase["terms"]), abs=0.5)
        assert all(set(t) == {"term", "mib", "arithmetic"} and t["arithmetic"] for t in phase["terms"])
    assert entry["binding_phase"] in {p["phase"] for p in entry["phases"]} and entry["band_mib"] > 0


def test_verl_qwen3b_verdicts_never_worsen_as_capacity_grows(context):
    states = []
    for capacity in (40960, 49140, 81559, 143771):
        hardware = Hardware.of(capacity, None) if capacity != 40960 else Hardware()
        (entry,) = answer(context, [{**QWEN3B, "workload_id": "math", "train_batch_size": 48}], hardware)
        states.append(SEVERITY[entry["verdict"]["state"]])
    assert states == sorted(states, reverse=True) and states[-1] == 0


def test_what_the_model_does_not_cover_gets_no_verdict_even_when_measured(context):
    """No verdict, and no peak to read as fits or fails: no per-phase peaks, no fits block (an engine without
    terms); a stack the release did not measure is answered by its physics, never by the GRPO+LoRA record whose
    settings it shares."""
    rows = [{**QWEN3B, "rollout_engine": "trtllm"}, {**QWEN3B, "rollout_engine": "sglang"},
            {**QWEN3B, "lora_rank": 0}, {**QWEN3B, "strategy": "megatron"}]  # fmt: skip
    knobs = {"rollout_engine": pa.string(), "lora_rank": pa.int64(), "strategy": pa.string()}
    other, sglang, full, megatron = answer(context, rows, knobs=knobs)
    assert other["verdict"]["state"] is None and "not modelled" in other["verdict"]["sentence"]
    assert "trtllm" in other["verdict"]["sentence"]
    assert "MiB" not in other["verdict"]["sentence"].split("no verdict")[1]
    assert other["phases"] == [] and other["predicted_peak_mib"] is None and "fits" not in other
    assert other["not_modelled"]["reasons"] and other["binding_phase"] is None
    assert other["not_modelled"]["modelled_part_lower_bound_mib"] is None  # another engine: nothing to bound
    for entry in (sglang, full, megatron):
        assert entry["verdict"]["basis"] == "predicted", entry["verdict"]  # the record lacks the stack's terms
        assert entry["predicted_peak_mib"] and "not_modelled" not in entry
    terms = {t["term"]: t for p in full["phases"] if p["phase"] == "actor_update" for t in p["terms"]}
    assert terms["actor_optimizer_states"]["mib"] > 0 and "physics only" in terms["actor_gradients"]["arithmetic"]
    assert SEVERITY[full["verdict"]["state"]] >= SEVERITY["above_margin"]  # 16 B/param of a 3B on two 40 GB GPUs


def test_a_plan_whose_band_reaches_the_margin_is_near_the_limit_with_both_figures_and_a_way_back(context):
    """Its band's parts are named; the sentence gives the peak with its band against the margin and capacity and
    the change, in the user's keys, that keeps the peak and its band within the margin."""
    near, clear = answer(context, [{**QWEN3B, "vllm_gpu_memory_utilization": 0.72}, QWEN3B])
    assert near["verdict"]["state"] == "within_margin" and near["verdict"]["near_limit"] is True
    sentence = near["verdict"]["sentence"]
    assert "near the limit" in sentence and "spans the margin 38,912 MiB" in sentence
    assert "to buy the band back: actor_rollout_ref.rollout.gpu_memory_utilization=" in sentence
    assert [p["part"] for p in near["band"]["parts"]] == ["in_domain", "training_horizon"]
    assert near["band_mib"] == near["band"]["mib"] == pytest.approx(sum(p["mib"] for p in near["band"]["parts"]))
    assert clear["verdict"]["near_limit"] is False and "near the limit" not in clear["verdict"]["sentence"]


def test_every_configuration_is_answered_from_its_measurement_first(context, snapshot):
    table = load_table("configurations", snapshot, decode=True)
    outcomes = {r["configuration_id"]: r for r in load_table("outcomes", snapshot, decode=True).to_pylist()}
    from rlvrambench_hf.advisor.assess.answers import answer_plans
    from rlvrambench_hf.advisor.output.wording import sentence

    plans = Plans(table, ["configurations.csv"] * table.num_rows)
    answers = answer_plans(plans, context, wording=sentence)  # no Hub for 1.5B
    a = answers.assessment
    assert (a.basis == 0).all()  # 212 of 212: measured
    peak = a.model.peak
    ids = table.column("configuration_id").to_pylist()
    truth = np.array([outcomes[i]["max_completed_run_peak_mib"] or np.nan for i in ids])
    done = ~np.isnan(truth) & ~np.isnan(peak)
    mape = float(np.mean(np.abs(peak[done] - truth[done]) / truth[done]) * 100)
    print(f"in-sample: {done.sum()} completed configurations with a model peak, MAPE {mape:.2f} %")
    assert done.sum() > 140 and mape < 3.0, (done.sum(), mape)


def test_the_sweep_table_names_the_device_binding_phase_and_predicted_peak(context):
    from rlvrambench_hf.advisor.output.sweep import sweep_table

    rows = [{**QWEN3B, "workload_id": "math"}, {**QWEN3B, "workload_id": "math", "vllm_gpu_memory_utilization": 0.85}]
    table = sweep_table(advisor.advise(plans(rows), context=context, hardware=Hardware.of(None, None, "L40S")))
    assert table.column("device").to_pylist() == ["L40S", "L40S"]
    assert set(table.column("binding_phase").to_pylist()) <= {"rollout", "initializing", "actor_update", "weight_sync"}
    low, high = table.column("predicted_peak_mib").to_pylist()
    assert high - low == pytest.approx(0.25 * 46068, abs=1)  # vLLM's reservation, coefficient 1


def test_a_planned_csv_carries_memory_knobs(context, tmp_path, snapshot):
    from rlvrambench_hf.advisor.read.reader import read_plans
    from rlvrambench_hf.errors import InputError

    names = [k for k in QWEN3B if k != "max_model_len"] + ["max_model_len"]
    head = ",".join(names) + ",gradient_checkpointing,layered_summon,rollout_engine"
    row = ",".join(str({**QWEN3B, "workload_id": "math"}[k]) for k in names)
    path = tmp_path / "plans.csv"
    path.write_text(f"{head}\n{row},,,\n{row},false,TRUE,\n{row},,,TensorRT-LLM\n")
    plans_read = read_plans(path, kind="planned", source=snapshot)
    assert plans_read.table.column("gradient_checkpointing").to_pylist() == [None, False, None]
    base, knobs, engine = document(advisor.advise(plans_read, context=context))["configurations"]
    update = [{p["phase"]: p["peak_mib"] for p in e["phases"]} for e in (base, knobs)]
    assert update[1]["actor_update"] > update[0]["actor_update"] and update[1]["weight_sync"] < update[0]["weight_sync"]
    assert engine["verdict"]["state"] is None and "rollout_engine=tensorrt-llm" in engine["verdict"]["sentence"]
    path.write_text(f"{head}\n{row},maybe,,\n")
    with pytest.raises(InputError, match="row 1: gradient_checkpointing: 'maybe' is not a bool"):
        read_plans(path, kind="planned", source=snapshot)


@settings(max_examples=25, deadline=None)
@given(
    model=st.sampled_from(["Qwen/Qwen2.5-3B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "microsoft/Phi-4-mini-instruct"]),
    u=st.sampled_from([0.2, 0.4, 0.6, 0.8]),
    gpus=st.sampled_from([1, 2, 4]),
    offload=st.booleans(),
    length=st.sampled_from([None, 2048, 8192]),
)
def test_the_verdict_never_worsens_with_more_device_memory(context, model, u, gpus, offload, length):
    """Floors and model together, through the advisor's assessment: verdicts on 24, 48, 80 and 141 GB devices."""
    from rlvrambench_hf.advisor.assess.verdict import assess
    from rlvrambench_hf.memory.devices import margin_of

    capacities = (24564, 49140, 81559, 143771)
    base = {**QWEN3B, "model_id": model, "vllm_gpu_memory_utilization": u, "gpu_count": gpus, "max_model_len": length,
            "parameter_offload": offload, "train_batch_size": 64}  # fmt: skip
    rows = [{**base, "device_capacity_mib": c, "margin_limit_mib": margin_of(c)} for c in capacities]
    table = plans(rows).table
    state = assess(table, context).state
    assert (state >= 0).all() and list(state) == sorted(state, reverse=True), list(state)
