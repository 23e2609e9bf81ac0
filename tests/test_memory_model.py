"""The per-phase memory model: physics of its terms, monotone in capacity, its form chosen and its terms calibrated
inside the folds only, its nested held-out record beside the references, and the advisor's answers built on it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvrambench_hf.data.tables.reader import load_table
from rlvrambench_hf.estimation.api import load_inputs, run_retrospective
from rlvrambench_hf.estimation.physical import physical_record
from rlvrambench_hf.memory.band import label_of
from rlvrambench_hf.memory.calibrate import Calibration, rows_inputs
from rlvrambench_hf.memory.devices import DEVICES, device_named, margin_of
from rlvrambench_hf.memory.forms import Form
from rlvrambench_hf.memory.phases import phases

SEVERITY = {"within_margin": 0, "above_margin": 1, "memory_failure": 2}
CAL = Calibration(Form("constant", "median", 2.0, "full_length"), {"gsm8k": 2400.0, "math": 2700.0}, 500.0)
QWEN3B = {
    "model_id": "Qwen/Qwen2.5-3B-Instruct", "workload_id": "gsm8k", "gpu_count": 2, "rollout_tp_size": 1,
    "actor_micro_batch": 8, "rollout_logprob_micro_batch": 4, "ref_logprob_micro_batch": 4,
    "vllm_gpu_memory_utilization": 0.6, "parameter_offload": False, "optimizer_offload": False,
    "free_cache_engine": True, "max_prompt_length": 1024, "max_response_length": 2048, "max_model_len": 3072,
    "max_num_seqs": 64, "rollout_n": 2, "train_batch_size": 32, "device_capacity_mib": 40960,
    "margin_limit_mib": 38912,
}  # fmt: skip


@pytest.fixture(scope="module")
def inputs(snapshot):
    return load_inputs(snapshot)


@pytest.fixture(scope="module")
def stages(inputs):
    return load_table("stage_measurements", inputs.source, decode=True).to_pylist()


def model_of(rows, metadata, cal=CAL):
    x, arch = rows_inputs(rows, metadata)
    return phases(x, arch, cal)


def test_devices_name_their_capacity_and_margin():
    assert device_named("h100").capacity_mib == 81559 and device_named("A100-40GB").measured
    assert margin_of(40960) == 38912 and all(d.source for d in DEVICES)


def test_gradient_checkpointing_off_raises_the_actor_update_and_layered_summon_lowers_weight_sync(inputs):
    base = model_of([QWEN3B, {**QWEN3B, "gradient_checkpointing": False}], inputs.metadata)
    update = base.phase_peak("actor_update")
    assert update[1] > update[0]
    sync = model_of([QWEN3B, {**QWEN3B, "layered_summon": True}], inputs.metadata).phase_peak("weight_sync")
    assert sync[1] < sync[0]


def test_the_weight_sync_gathers_the_parameters_in_the_actors_dtype(inputs):
    """The LoRA merge's gather is priced like the resident shards: 4 B per element for an fp32 actor, 2 B for bf16."""
    rows = [{**QWEN3B, "actor_param_dtype": d} for d in ("fp32", "bf16")]
    gathered = {t.name: t.mib for t in model_of(rows, inputs.metadata).terms["weight_sync"]}["gathered_parameters"]
    meta = inputs.metadata["Qwen/Qwen2.5-3B-Instruct"]
    elements = meta["floating_checkpoint_elements"] + meta["all_linear_layer_adapter_elements"]
    assert gathered[0] == pytest.approx(4 * elements / 2**20) and gathered[1] == pytest.approx(2 * elements / 2**20)


@settings(max_examples=60, deadline=None)
@given(
    u=st.sampled_from([0.3, 0.45, 0.6, 0.7, 0.8, 0.85]),
    gpus=st.sampled_from([1, 2, 4, 8]),
    micro=st.sampled_from([1, 4, 8, 16]),
    offload=st.booleans(),
    capacities=st.lists(st.integers(16000, 200000), min_size=2, max_size=4, unique=True),
)
def test_more_device_memory_never_gives_a_worse_label_and_more_gpus_never_a_larger_actor(
    inputs, u, gpus, micro, offload, capacities
):
    """The label of the model's peak is monotone in the capacity (margin 95 %), all else equal."""
    capacities.sort()
    rows = [
        {**QWEN3B, "vllm_gpu_memory_utilization": u, "gpu_count": gpus, "actor_micro_batch": micro,
         "train_batch_size": 64, "parameter_offload": offload, "device_capacity_mib": c,
         "margin_limit_mib": margin_of(c)}
        for c in capacities
    ]  # fmt: skip
    x, arch = rows_inputs(rows, inputs.metadata)
    peak = phases(x, arch, CAL).peak
    labels = label_of(peak, x["device_capacity_mib"], np.array([r["margin_limit_mib"] for r in rows]))
    severity = [SEVERITY[str(v)] for v in labels]
    assert severity == sorted(severity, reverse=True)
    more = [{**rows[0], "gpu_count": gpus * 2}]
    resident = {t.name: t.mib for t in model_of(rows[:1] + more, inputs.metadata).terms["rollout"]}
    assert resident["resident_actor"][1] <= resident["resident_actor"][0]


def test_the_nested_record_approves_no_memory_failure_in_any_fold(inputs, stages):
    """Each fold's form is chosen on its two training families alone: the published fold scores."""
    scores = physical_record(inputs.pool.rows, stages, inputs.metadata)
    assert {f: s["correct_three_state"] for f, s in scores.items()} == {"granite33": 27, "phi4": 29, "qwen25": 29}
    assert all(s["approved_memory_failure"] == 0 for s in scores.values())
    assert [s["approved_above_margin"] for s in scores.values()] == [0, 1, 0]  # phi4's at 39,570 MiB measured
    assert [s["rejected_within_margin"] for s in scores.values()] == [0, 0, 1]
    assert {s["form"] for s in scores.values()} <= {
        "sequences/median/7B/per_workload",
        "sequences/median/4B/per_workload",
    }


def test_the_form_and_the_calibration_never_see_the_held_out_family(inputs, stages):
    """Perturbing the held-out family's peaks and stage measurements leaves that fold's chosen form and predictions
    unchanged, while the folds it trains moved."""
    from rlvrambench_hf.memory.band import nested_folds
    from rlvrambench_hf.memory.fit import measured
    from rlvrambench_hf.memory.select import Grid

    def folds(pool, stage_rows):
        grid = Grid(measured(pool, stage_rows, inputs.metadata), np.ones(len(pool), dtype=bool))
        return {f.family: f for f in nested_folds(grid)}

    before = folds(list(inputs.pool.rows), stages)
    phi_ids = {r["configuration_id"] for r in inputs.pool.rows if r["model_family_coarse"] == "phi4"}
    bumped = [
        {**r, "max_completed_run_peak_mib": (r["max_completed_run_peak_mib"] or 0) + 5000}
        if r["configuration_id"] in phi_ids
        else r
        for r in inputs.pool.rows
    ]
    moved = [{**s, "observed_peak_mib": s["observed_peak_mib"] + 5000} if s["configuration_id"] in phi_ids else s
             for s in stages]  # fmt: skip
    after = folds(bumped, moved)
    assert after["phi4"].form == before["phi4"].form and after["phi4"].peaks == before["phi4"].peaks
    assert after["phi4"].labels == before["phi4"].labels
    assert after["qwen25"].peaks != before["qwen25"].peaks  # the training side did move


def test_the_model_runs_as_an_estimator_under_the_comparison(inputs):
    from rlvrambench_hf.estimation.physical import PhysicalModel

    report = run_retrospective(inputs.source, estimators={"physical": PhysicalModel(inputs.source)}, timeout=None)
    for family in ("granite33", "phi4", "qwen25"):
        scores = report["folds"][family]["scores"]
        assert scores["physical"]["correct_three_state"] == scores["physical_model"]["correct_three_state"]
        assert report["memory_model"]["nested"][family]["correct"] == scores["physical_model"]["correct_three_state"]
    assert report["folds"]["granite33"]["scores"]["component_regression"]["correct_three_state"] == 22


def test_headroom_solves_the_largest_utilization_and_micro_batch(inputs):
    from rlvrambench_hf.memory.headroom import headroom

    model = model_of([QWEN3B], inputs.metadata)
    out = headroom(model, 0, 38912.0, 0.6, 8.0, 32.0, 4.0)
    assert out["headroom_mib"]["rollout"] == pytest.approx(38912 - model.phase_peak("rollout")[0], abs=0.1)
    u = out["largest_vllm_gpu_memory_utilization"]
    rows = [{**QWEN3B, "vllm_gpu_memory_utilization": u}, {**QWEN3B, "vllm_gpu_memory_utilization": u + 0.01}]
    higher = model_of(rows, inputs.metadata).peak
    assert higher[0] <= 38912 < higher[1]
    micro = out["largest_actor_micro_batch"]
    assert 32 % micro == 0 and model_of([{**QWEN3B, "actor_micro_batch": micro}], inputs.metadata).peak[0] <= 38912
    tight = headroom(model, 0, model.phase_peak("reference_logprob")[0] - 1.0, 0.6, 8.0, 32.0, 4.0)
    assert tight["largest_logprob_micro_batch"] is None  # the other phases stay above so low a limit


def test_without_free_cache_engine_vllm_keeps_its_reservation_through_the_weight_sync(inputs):
    """vLLM that never sleeps holds u x C while the weights are synced (its weights inside it); one that slept is
    woken for its bf16 weights alone. The resident actor's shards stay on the device through the sync."""
    rows = [QWEN3B, {**QWEN3B, "free_cache_engine": False}, {**QWEN3B, "parameter_offload": True}]
    model = model_of(rows, inputs.metadata)
    sync = model.phase_peak("weight_sync")
    weights = 2 * inputs.metadata["Qwen/Qwen2.5-3B-Instruct"]["floating_checkpoint_elements"] / 2**20
    assert sync[1] - sync[0] == pytest.approx(0.6 * 40960 - weights, abs=1)
    names = {t.name: float(t.mib[2]) for t in model.terms["weight_sync"]}
    assert (
        names["resident_actor"] == 0
        and {t.name: float(t.mib[0]) for t in model.terms["weight_sync"]}["resident_actor"] > 6000
    )


def test_the_release_failures_without_free_cache_engine_are_failures_of_the_model(inputs, snapshot):
    """The release's two Qwen2.5-3B configurations with free_cache_engine off at utilization 0.65 failed (memory
    failure, weight_sync_oom, while initializing); the model puts their weight sync above the device."""
    configurations = {
        r["configuration_id"]: r for r in load_table("all_configurations", snapshot, decode=True).to_pylist()
    }
    failed = [i for i, r in configurations.items() if r["free_cache_engine"] is False and r["gpu_count"] == 2
              and r["model_id"] == "Qwen/Qwen2.5-3B-Instruct" and r["vllm_gpu_memory_utilization"] == 0.65]  # fmt: skip
    assert len(failed) == 2 and {configurations[i]["observed_state"] for i in failed} == {"memory_failure"}
    model = model_of([configurations[i] for i in failed], inputs.metadata)
    assert (model.phase_peak("weight_sync") > 40960).all()  # VERL syncs the weights once at start-up, first


def test_a_log_total_names_the_devices_of_the_one_table():
    """A log's total (PyTorch prints slightly less than NVML) names devices from the same table as ``--gpu``."""
    from rlvrambench_hf.advisor.diagnose.fixes import device_of
    from rlvrambench_hf.memory.devices import devices_of_log_total

    assert [d.name for d in devices_of_log_total(40335.4)] == ["A100 40GB"]
    assert device_of(40335.4) == {
        "log_total_mib": 40335.4, "candidates": ["A100 40GB"], "capacity_mib": 40960, "measured": True
    }  # fmt: skip
    h100 = device_of(81079.0)
    assert h100 is not None and h100["candidates"][0] == device_named("h100").name and not h100["measured"]
    assert device_of(1000.0) == {"log_total_mib": 1000.0, "candidates": [], "capacity_mib": None, "measured": False}
