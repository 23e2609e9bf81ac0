"""The per-phase model's physics as properties over plans: more device memory never lowers a peak nor worsens a
label; more GPUs never grow a per-GPU resident term; gradient checkpointing, layered summon, ``free_cache_engine``,
offloads, micro-batches and vLLM's utilization move exactly the phases physics says they move, and no other."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvrambench_hf.memory.phases import PHASES
from unit.advisor.given import GRANITE, MIB, PHI4, QWEN3B, QWEN7B, column, label, metadata, model_of

pytestmark = pytest.mark.unit

EXAMPLES = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def plans(draw: st.DrawFn) -> dict:
    """A plan in the dataset's vocabulary with the memory knobs, anywhere in the space a user writes."""
    prompt, response = draw(st.sampled_from([256, 512, 1024])), draw(st.sampled_from([256, 512, 1024, 2048]))
    return {
        "model_id": draw(st.sampled_from([GRANITE, QWEN3B, PHI4, QWEN7B])),
        "workload_id": draw(st.sampled_from(["gsm8k", "math", None])),
        "gpu_count": draw(st.sampled_from([1, 2, 4, 8])),
        "rollout_tp_size": draw(st.sampled_from([1, 2])),
        "vllm_gpu_memory_utilization": draw(st.sampled_from([0.2, 0.4, 0.55, 0.7, 0.85, 0.96])),
        "actor_micro_batch": draw(st.sampled_from([1, 2, 4, 8, 16])),
        "rollout_logprob_micro_batch": draw(st.sampled_from([1, 4, 16])),
        "ref_logprob_micro_batch": draw(st.sampled_from([1, 4, 16])),
        "parameter_offload": draw(st.booleans()),
        "optimizer_offload": draw(st.booleans()),
        "free_cache_engine": draw(st.booleans()),
        "gradient_checkpointing": draw(st.booleans()),
        "layered_summon": draw(st.booleans()),
        "actor_param_dtype": draw(st.sampled_from(["fp32", "bf16", None])),
        "lora_rank": draw(st.sampled_from([8, 64, 128, None])),
        "max_prompt_length": prompt,
        "max_response_length": response,
        "max_model_len": draw(st.sampled_from([prompt + response, 2 * (prompt + response), None])),
        "max_num_seqs": 64,
        "rollout_n": draw(st.sampled_from([2, 4, 8])),
        "train_batch_size": draw(st.sampled_from([8, 16, 64])),
    }


def phase_peaks(model, phase: str) -> np.ndarray:
    return model.phase_peak(phase)


@EXAMPLES
@given(plan=plans(), capacities=st.lists(st.integers(16_000, 200_000), min_size=2, max_size=5, unique=True))
def test_more_device_memory_never_lowers_a_peak_nor_worsens_its_label(mini_context, plan, capacities):
    capacities.sort()
    model = model_of([{**plan, "device_capacity_mib": c} for c in capacities], mini_context)
    peaks = model.peak
    assert (np.diff(peaks) >= 0).all()
    for phase in PHASES:
        assert (np.diff(phase_peaks(model, phase)) >= 0).all(), phase
    labels = [label(p, c) for p, c in zip(peaks, capacities)]
    assert labels == sorted(labels, reverse=True), list(zip(capacities, peaks, labels))


RESIDENT = {  # per-GPU terms that shrink as the work and the state are spread over more GPUs
    "rollout": ("resident_actor",),
    "actor_update": ("actor_shards", "adapter_gradients_and_adam", "activations", "update_logits"),
    "reference_logprob": ("actor_shards", "logprob_logits"),
}


@EXAMPLES
@given(plan=plans())
def test_more_gpus_never_grow_a_per_gpu_resident_term(mini_context, plan):
    gpus = [1, 2, 4, 8, 16]
    model = model_of([{**plan, "gpu_count": g, "train_batch_size": 16 * 4} for g in gpus], mini_context)
    for phase, names in RESIDENT.items():
        for name in names:
            values = column(model, phase, name)
            assert (np.diff(values) <= 1e-9).all(), (phase, name, values)
    # the resident actor and LoRA's optimizer states are divided exactly by the GPUs
    shards = column(model, "actor_update", "actor_shards")
    assert shards * np.array(gpus) == pytest.approx(np.full(len(gpus), shards[0]))


@EXAMPLES
@given(plan=plans())
def test_gradient_checkpointing_off_raises_the_actor_update_and_nothing_else(mini_context, plan):
    model = model_of(
        [{**plan, "gradient_checkpointing": True}, {**plan, "gradient_checkpointing": False}], mini_context
    )
    for phase in PHASES:
        on, off = phase_peaks(model, phase)
        if phase == "actor_update":
            assert off > on
        else:
            assert off == pytest.approx(on), phase


@EXAMPLES
@given(plan=plans())
def test_layered_summon_lowers_the_weight_sync_and_nothing_else(mini_context, plan):
    model = model_of([{**plan, "layered_summon": False}, {**plan, "layered_summon": True}], mini_context)
    for phase in PHASES:
        whole, layered = phase_peaks(model, phase)
        if phase != "weight_sync":
            assert layered == pytest.approx(whole), phase
        elif plan["gpu_count"] == 1 and not plan["parameter_offload"]:
            assert layered == pytest.approx(whole)  # nothing is gathered on one GPU: the parameters are resident
        else:
            assert layered < whole


@EXAMPLES
@given(plan=plans(), capacity=st.integers(16_000, 200_000))
def test_free_cache_engine_off_keeps_the_reservation_through_every_phase_after_generation(mini_context, plan, capacity):
    """vLLM that never sleeps holds u x C in the log-prob pass and the actor update; at the weight sync it holds its
    reservation instead of being woken for its bf16 weights 2P/T."""
    rows = [{**plan, "free_cache_engine": True}, {**plan, "free_cache_engine": False}]
    model = model_of(rows, mini_context, capacity)
    reservation = plan["vllm_gpu_memory_utilization"] * capacity
    weights = 2 * float(metadata(plan["model_id"], mini_context)["floating_checkpoint_elements"]) / MIB
    added = {phase: np.diff(phase_peaks(model, phase))[0] for phase in PHASES}
    assert added["initializing"] == pytest.approx(0, abs=1e-6) and added["rollout"] == pytest.approx(0, abs=1e-6)
    assert added["reference_logprob"] == pytest.approx(reservation)
    assert added["actor_update"] == pytest.approx(reservation)
    assert added["weight_sync"] == pytest.approx(reservation - weights / plan["rollout_tp_size"])


@EXAMPLES
@given(plan=plans())
def test_offloads_never_raise_the_phases_they_relieve(mini_context, plan):
    rows = [
        {**plan, "parameter_offload": False},
        {**plan, "parameter_offload": True},
        {**plan, "optimizer_offload": False},
        {**plan, "optimizer_offload": True},
    ]
    model = model_of(rows, mini_context)
    for phase in ("initializing", "rollout"):
        kept, offloaded = phase_peaks(model, phase)[:2]
        assert offloaded < kept, phase
    assert phase_peaks(model, "actor_update")[3] < phase_peaks(model, "actor_update")[2]


@EXAMPLES
@given(plan=plans(), micro=st.lists(st.sampled_from([1, 2, 4, 8, 16, 32, 64]), min_size=2, max_size=4, unique=True))
def test_a_larger_micro_batch_never_lowers_the_phase_it_feeds(mini_context, plan, micro):
    micro.sort()
    update = model_of([{**plan, "actor_micro_batch": m} for m in micro], mini_context)
    assert (np.diff(phase_peaks(update, "actor_update")) >= -1e-9).all()
    score = model_of([{**plan, "ref_logprob_micro_batch": m} for m in micro], mini_context)
    assert (np.diff(phase_peaks(score, "reference_logprob")) >= -1e-9).all()


@EXAMPLES
@given(plan=plans(), capacity=st.integers(16_000, 200_000))
def test_generation_grows_by_exactly_the_share_of_the_device_vllm_is_given(mini_context, plan, capacity):
    shares = [0.3, 0.5, 0.9]
    model = model_of([{**plan, "vllm_gpu_memory_utilization": u} for u in shares], mini_context, capacity)
    rollout = phase_peaks(model, "rollout")
    assert np.diff(rollout) == pytest.approx(np.diff(shares) * capacity)
    if plan["free_cache_engine"]:  # asleep between generations: the other phases do not see the share
        for phase in ("reference_logprob", "actor_update", "weight_sync"):
            assert np.diff(phase_peaks(model, phase)) == pytest.approx([0, 0], abs=1e-6), phase
