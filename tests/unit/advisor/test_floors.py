"""The physical floors (:func:`rlvrambench_hf.advisor.assess.floors.floors`): each one holding and failing with its
required and available amounts, its arithmetic naming its numbers, the KV-cache floor at the one-sequence boundary,
a failing floor making the verdict a memory failure, and every completed measured configuration passing them all."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from rlvrambench_hf.advisor.assess.floors import FLOORS
from rlvrambench_hf.advisor.plan.hardware import Hardware
from unit.advisor.given import GRANITE, MIB, PHI4, QWEN3B, QWEN7B, answer, answers, floors_of, metadata, plan, unchecked

import miniworld as world

pytestmark = pytest.mark.unit


def only_failing(found, row: int = 0) -> list[str]:
    return found.failed_names(row)


def amounts(found, name: str, row: int) -> tuple[float, float, bool]:
    return float(found.required[name][row]), float(found.available[name][row]), bool(found.holds[name][row])


def test_the_base_plan_passes_every_floor(mini_context):
    found = floors_of([plan()], mini_context)
    assert only_failing(found) == [] and all(found.known[name][0] for name in FLOORS)


def test_generation_weights_are_bf16_parameters_over_tensor_parallelism_within_vllms_budget(mini_context):
    p = float(metadata(QWEN7B, mini_context)["floating_checkpoint_elements"])
    rows = [plan(model_id=QWEN7B, vllm_gpu_memory_utilization=0.3, rollout_tp_size=t) for t in (1, 2)]
    found = floors_of(rows, mini_context)
    assert amounts(found, "generation_weights", 0) == (pytest.approx(2 * p / MIB), 0.3 * 40960, False)
    assert amounts(found, "generation_weights", 1) == (pytest.approx(p / MIB), 0.3 * 40960, True)


def test_the_actors_fp32_shards_must_fit_beside_vllms_budget_unless_offloaded(mini_context):
    meta = metadata(QWEN7B, mini_context)
    p, r = meta["floating_checkpoint_elements"], meta["all_linear_layer_adapter_elements"]
    unit = max(meta[k] for k in ("largest_transformer_layer_elements", "non_transformer_layer_elements",
                                 "largest_weight_tensor_elements"))  # fmt: skip
    rows = [
        plan(model_id=QWEN7B, vllm_gpu_memory_utilization=0.3, gpu_count=1, train_batch_size=8, rollout_tp_size=1),
        plan(model_id=QWEN7B, vllm_gpu_memory_utilization=0.3, gpu_count=2),
        plan(model_id=QWEN7B, vllm_gpu_memory_utilization=0.3, gpu_count=1, train_batch_size=8, parameter_offload=True),
    ]
    found = floors_of(rows, mini_context)
    left = 40960 - 0.3 * 40960
    assert amounts(found, "actor_shards_at_startup", 0) == (pytest.approx(4 * (p + r) / MIB), left, False)
    assert amounts(found, "actor_shards_at_startup", 1) == (pytest.approx(4 * (p + r) / 2 / MIB), left, True)
    assert amounts(found, "actor_shards_at_startup", 2) == (pytest.approx(4 * unit / MIB), left, True)


@pytest.mark.parametrize(
    ("changes", "floor", "required", "available"),
    [
        ({"max_model_len": 1024}, "sequence_length", 512 + 768, 1024),
        ({"train_batch_size": 15, "gpu_count": 8}, "batch_divides_gpus", 60, 8),
        ({"gpu_count": 2, "rollout_tp_size": 4}, "tensor_parallel_divides_gpus", 4, 2),
        ({"actor_micro_batch": 64}, "micro_batch_fits_per_gpu_batch", 64, 32),
    ],
)
def test_each_shape_floor_fails_as_verl_would_refuse_it_and_holds_otherwise(
    mini_context, changes, floor, required, available
):
    found = floors_of(unchecked([plan(**changes), plan()]), mini_context)
    assert only_failing(found, 0) == [floor]
    assert amounts(found, floor, 0) == (required, available, False)
    assert found.holds[floor][1] and found.known[floor][1]


def kv_boundary(context, model_id: str, u: float, tp: int, capacity: float) -> tuple[float, float]:
    """(MiB of KV cache per token over tensor parallelism, MiB of vLLM's budget left after its weights)."""
    meta = metadata(model_id, context)
    per_token = 2 * meta["num_hidden_layers"] * meta["num_key_value_heads"] * meta["head_dim"] * 2 / tp / MIB
    left = u * capacity - 2 * meta["floating_checkpoint_elements"] / tp / MIB
    return per_token, left


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model_id=st.sampled_from([GRANITE, QWEN3B, PHI4, QWEN7B]),
    u=st.sampled_from([0.2, 0.25, 0.3, 0.35, 0.4]),
    tp=st.sampled_from([1, 2]),
    capacity=st.sampled_from([40960, 46068, 49140]),
)
def test_the_kv_cache_floor_holds_for_the_longest_sequence_that_fits_and_fails_one_token_later(
    mini_context, model_id, u, tp, capacity
):
    per_token, left = kv_boundary(mini_context, model_id, u, tp, capacity)
    longest = math.floor(left / per_token)
    event("probed" if longest >= 2048 else "no room for a sequence of the plan")
    if longest < 2048:  # the generation-weights floor fails first; nothing to probe at this boundary
        return
    rows = [
        plan(model_id=model_id, vllm_gpu_memory_utilization=u, rollout_tp_size=tp, max_model_len=n)
        for n in (longest, longest + 1)
    ]
    found = floors_of(rows, mini_context, Hardware.of(capacity, None))
    kv = "kv_cache_one_sequence"
    assert [bool(h) for h in found.holds[kv]] == [True, False]
    assert found.required[kv][0] == pytest.approx(per_token * longest)
    assert found.available[kv][0] == pytest.approx(left)


def test_a_short_kv_cache_is_a_memory_failure_at_the_floor_with_its_arithmetic(mini_context):
    per_token, left = kv_boundary(mini_context, QWEN3B, 0.15, 1, 40960)
    length = math.floor(left / per_token) + 1
    found = answer(plan(vllm_gpu_memory_utilization=0.15, max_model_len=length), mini_context)
    assert (found["verdict"]["state"], found["verdict"]["basis"]) == ("memory_failure", "floor")
    (kv,) = [f for f in found["floors"] if f["check"] == "kv_cache_one_sequence"]
    assert kv["holds"] is False and kv["unit"] == "MiB"
    text = kv["arithmetic"]
    for figure in ("36 layers", "2 KV heads", "x 128", "36,864 B per token", f"{length:,} tokens", "0.15 x 40,960 MiB",
                   "3,100,000,000", f"= {kv['required']:,.0f} MiB >", f"= {kv['available']:,.0f} MiB"):  # fmt: skip
        assert figure in text, (figure, text)


#: Per floor, a plan that fails it alone (or first) and the figures its arithmetic must name.
FAILING = {
    "generation_weights": (
        {"model_id": QWEN7B, "vllm_gpu_memory_utilization": 0.3, "gpu_count": 4, "train_batch_size": 16},
        ("7,600,000,000 parameters", "TP 1", "14,496 MiB >", "0.3 x 40,960 MiB = 12,288 MiB"),
    ),
    "actor_shards_at_startup": (
        {"model_id": QWEN7B, "vllm_gpu_memory_utilization": 0.4, "gpu_count": 1, "train_batch_size": 8},
        ("(7,600,000,000 + 161,000,000)", "/ 1 GPUs", "29,606 MiB >", "40,960 - 0.4 x 40,960 = 24,576 MiB"),
    ),
    "sequence_length": (
        {"max_model_len": 1000},
        ("max_prompt_length 512", "max_response_length 768", "1280 tokens >", "max_model_len 1000"),
    ),
    "batch_divides_gpus": (
        {"train_batch_size": 15, "gpu_count": 8},
        ("train_batch_size 15", "rollout_n 4", "60 sequences", "8 GPUs", "leave 4"),
    ),
    "micro_batch_fits_per_gpu_batch": ({"actor_micro_batch": 48}, ("actor_micro_batch 48 >", "32 sequences per GPU")),
}


FAILING_UNCHECKED = {  # the reader refuses this one as an input error; a plan built past it meets the floor
    "tensor_parallel_divides_gpus": ({"rollout_tp_size": 4}, ("2 GPUs are not a multiple of rollout_tp_size 4",)),
}


@pytest.mark.parametrize("floor", [*FAILING, *FAILING_UNCHECKED])
def test_a_failing_floor_makes_a_memory_failure_named_with_its_arithmetic(mini_context, floor):
    changes, figures = {**FAILING, **FAILING_UNCHECKED}[floor]
    row = plan(**changes)
    (found,) = answers(unchecked([row]) if floor in FAILING_UNCHECKED else [row], mini_context)
    verdict = found["verdict"]
    assert (verdict["state"], verdict["basis"]) == ("memory_failure", "floor")
    (entry,) = [f for f in found["floors"] if f["check"] == floor]
    assert entry["holds"] is False
    assert "cannot run: " in verdict["sentence"] and f"{floor}: {entry['arithmetic']}" in verdict["sentence"]
    for figure in figures:
        assert figure in entry["arithmetic"], (figure, entry["arithmetic"])
    assert "\n" not in verdict["sentence"]


def test_a_holding_floor_says_so_with_the_same_figures(mini_context):
    found = answer(plan(), mini_context)
    by_check = {f["check"]: f for f in found["floors"]}
    assert [f["check"] for f in found["floors"]] == list(FLOORS)
    assert all(f["holds"] is True for f in found["floors"])
    assert re.search(r"= 5,913 MiB <= 0\.55 x 40,960 MiB = 22,528 MiB", by_check["generation_weights"]["arithmetic"])
    assert by_check["batch_divides_gpus"]["arithmetic"].endswith("divide evenly")
    assert by_check["tensor_parallel_divides_gpus"]["arithmetic"] == "2 GPUs are a multiple of rollout_tp_size 1"


def test_every_configuration_the_mini_release_measured_as_completing_passes_every_floor(mini_context, shared_mini):
    outcome = {r["configuration_id"]: r["observed_state"] for r in shared_mini.rows["outcomes"]}
    completed = [
        r
        for r in shared_mini.rows["configurations"]
        if r["configuration_id"].startswith("pool-") and outcome[r["configuration_id"]] != world.F
    ]
    assert len(completed) == 25
    found = floors_of(completed, mini_context)
    assert [found.failed_names(i) for i in range(len(completed))] == [[]] * len(completed)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    changes=st.sampled_from([c for c, _ in FAILING.values()] + [{}]),
    capacities=st.lists(st.sampled_from([23028, 40960, 49140, 81559, 143771]), min_size=2, max_size=3, unique=True),
)
def test_a_floor_that_holds_on_a_device_holds_on_every_larger_one(mini_context, changes, capacities):
    capacities.sort()
    row = plan(**changes)
    holds = [floors_of([row], mini_context, Hardware.of(c, None)).holds for c in capacities]
    for name in FLOORS:
        verdicts = [bool(h[name][0]) for h in holds]
        assert verdicts == sorted(verdicts), (name, capacities, verdicts)


def test_the_reader_refuses_tensor_parallelism_that_does_not_divide_the_gpus_before_any_floor(mini_context):
    from rlvrambench_hf.errors import InputError

    with pytest.raises(InputError, match=r"^planned configurations: gpu_count = 2 is not divisible by "
                       r"rollout_tp_size = 4$"):  # fmt: skip
        floors_of([plan(rollout_tp_size=4)], mini_context)
