"""What still fits (:mod:`rlvrambench_hf.memory.headroom`): the headroom of every phase to the margin, and the
largest vLLM utilization and actor micro-batch that keep every phase within it — each really fits, and one step
more does not."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from rlvrambench_hf.memory.devices import margin_of
from rlvrambench_hf.memory.headroom import headroom
from rlvrambench_hf.memory.phases import PHASES
from unit.advisor.given import GRANITE, PHI4, QWEN3B, QWEN7B, model_of, plan

pytestmark = pytest.mark.unit

EXAMPLES = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
STEP = 0.01


@st.composite
def fitting_plans(draw: st.DrawFn) -> tuple[dict, float]:
    """A plan whose sequences per GPU are a whole number, and the capacity of its device."""
    gpus = draw(st.sampled_from([1, 2, 4, 8]))
    row = plan(
        model_id=draw(st.sampled_from([GRANITE, QWEN3B, PHI4, QWEN7B])),
        workload_id=draw(st.sampled_from(["gsm8k", "math"])),
        gpu_count=gpus,
        train_batch_size=8 * gpus,
        rollout_n=draw(st.sampled_from([2, 4, 8])),
        vllm_gpu_memory_utilization=draw(st.sampled_from([0.3, 0.5, 0.7])),
        actor_micro_batch=draw(st.sampled_from([1, 2, 4])),
        parameter_offload=draw(st.booleans()),
        free_cache_engine=draw(st.booleans()),
        gradient_checkpointing=draw(st.booleans()),
        max_response_length=draw(st.sampled_from([512, 1024, 4096])),
        max_model_len=None,
    )
    return row, float(draw(st.sampled_from([24564, 40960, 46068, 81559])))


def solve(row: dict, capacity: float, context) -> dict:
    model = model_of([row], context, capacity)
    per_gpu = row["train_batch_size"] * row["rollout_n"] / row["gpu_count"]
    return headroom(
        model, 0, margin_of(capacity), row["vllm_gpu_memory_utilization"], row["actor_micro_batch"], per_gpu
    )


def fits(row: dict, capacity: float, context) -> bool:
    return bool(model_of([row], context, capacity).peak[0] <= margin_of(capacity))


@EXAMPLES
@given(case=fitting_plans())
def test_the_largest_utilization_fits_and_one_step_more_does_not(mini_context, case):
    row, capacity = case
    largest = solve(row, capacity, mini_context)["largest_vllm_gpu_memory_utilization"]
    event(f"largest utilization {'none' if largest is None else 'capped' if largest == 0.99 else 'solved'}")
    if largest is None:  # not even 1 % of the device leaves every phase within the margin
        assert not fits({**row, "vllm_gpu_memory_utilization": STEP}, capacity, mini_context)
        return
    assert STEP <= largest <= 0.99
    assert fits({**row, "vllm_gpu_memory_utilization": largest}, capacity, mini_context)
    if largest < 0.99:
        assert not fits({**row, "vllm_gpu_memory_utilization": round(largest + STEP, 2)}, capacity, mini_context)


@EXAMPLES
@given(case=fitting_plans())
def test_the_largest_micro_batch_divides_the_sequences_per_gpu_fits_and_the_next_divisor_does_not(mini_context, case):
    row, capacity = case
    per_gpu = row["train_batch_size"] * row["rollout_n"] // row["gpu_count"]
    largest = solve(row, capacity, mini_context)["largest_actor_micro_batch"]
    event(f"largest micro-batch {'none' if largest is None else 'all' if largest == per_gpu else 'solved'}")
    if largest is None:
        assert not fits({**row, "actor_micro_batch": 1}, capacity, mini_context)
        return
    assert per_gpu % largest == 0
    assert fits({**row, "actor_micro_batch": largest}, capacity, mini_context)
    larger = [d for d in range(largest + 1, per_gpu + 1) if per_gpu % d == 0]
    if larger:
        assert not fits({**row, "actor_micro_batch": larger[0]}, capacity, mini_context)


@EXAMPLES
@given(case=fitting_plans())
def test_the_headroom_of_a_phase_is_the_margin_less_its_peak(mini_context, case):
    row, capacity = case
    model = model_of([row], mini_context, capacity)
    found = solve(row, capacity, mini_context)["headroom_mib"]
    present = [p for p in PHASES if p not in ("critic_update", "reward")]  # GRPO: no critic, no reward model
    assert list(found) == present
    for phase in present:
        assert found[phase] == pytest.approx(margin_of(capacity) - model.phase_peak(phase)[0], abs=0.06)


def test_a_plan_whose_fixed_terms_exceed_the_margin_gets_no_largest_value(mini_context):
    """Qwen2.5-7B's fp32 shards on one 24 GB GPU exceed the margin before vLLM takes anything."""
    row = plan(model_id=QWEN7B, gpu_count=1, train_batch_size=16)
    found = solve(row, 24564.0, mini_context)
    assert found["largest_vllm_gpu_memory_utilization"] is None and found["largest_actor_micro_batch"] is None
    assert all(value < 0 for value in found["headroom_mib"].values())


def test_more_capacity_never_lowers_the_largest_utilization(mini_context):
    row = plan(model_id=PHI4)
    largest = [solve(row, c, mini_context)["largest_vllm_gpu_memory_utilization"] or 0.0 for c in (24564, 40960, 81559)]
    assert largest == sorted(largest) and largest[-1] > 0
