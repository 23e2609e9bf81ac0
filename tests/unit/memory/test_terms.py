"""The per-phase memory model's physical terms, exactly: vLLM's reservation u·C, the resident actor 4(P+R)/G, LoRA's
gradients and Adam 12R/G, logits, vLLM's woken weights 2P/T, the gathered parameters and the KV cache per token,
from the mini release's model metadata; which terms are calibrated; peaks, the binding phase and the arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rlvrambench_hf.memory.phases import PHASES
from rlvrambench_hf.memory.stack import STACK_TERMS
from unit.advisor.given import GRANITE, MIB, PHI4, QWEN3B, QWEN7B, metadata, model_of, plan, terms

pytestmark = pytest.mark.unit

#: The model's physical terms: each with its coefficient fixed at its physical value, none calibrated.
PHYSICAL = {
    "vllm_reservation", "resident_actor", "actor_shards", "vllm_between_generations", "logprob_logits",
    "adapter_gradients_and_adam", "activations", "update_logits", "gathered_parameters", "vllm_woken_weights",
}  # fmt: skip


def sizes(context, model_id: str = QWEN3B) -> tuple[float, float]:
    """(P, R): floating parameters and rank-64 all-linear adapter elements of a model of the mini release."""
    meta = metadata(model_id, context)
    return float(meta["floating_checkpoint_elements"]), float(meta["all_linear_layer_adapter_elements"])


@pytest.mark.parametrize(("u", "capacity"), [(0.3, 24564.0), (0.55, 40960.0), (0.85, 81559.0)])
def test_vllm_takes_u_times_the_device_total_while_it_generates(mini_context, u, capacity):
    model = model_of([plan(vllm_gpu_memory_utilization=u)], mini_context, capacity)
    for phase in ("initializing", "rollout"):
        assert terms(model, phase)["vllm_reservation"] == u * capacity


@pytest.mark.parametrize("gpus", [1, 2, 4, 8])
def test_the_resident_actor_is_fp32_fsdp_shards_of_parameters_and_adapter(mini_context, gpus):
    p, r = sizes(mini_context)
    model = model_of([plan(gpu_count=gpus)], mini_context)
    assert terms(model, "rollout")["resident_actor"] == pytest.approx(4 * (p + r) / gpus / MIB, rel=1e-12)
    assert terms(model, "actor_update")["actor_shards"] == pytest.approx(4 * (p + r) / gpus / MIB, rel=1e-12)


def test_bf16_shards_halve_the_actor_and_offloaded_parameters_leave_the_device_while_vllm_generates(mini_context):
    p, r = sizes(mini_context)
    model = model_of(
        [plan(actor_param_dtype="bf16"), plan(parameter_offload=True), plan(parameter_offload=True)], mini_context
    )
    assert terms(model, "rollout", 0)["resident_actor"] == pytest.approx(2 * (p + r) / 2 / MIB)
    assert terms(model, "rollout", 1)["resident_actor"] == 0.0 == terms(model, "weight_sync", 1)["resident_actor"]
    # brought back for compute: the actor update holds the shards again
    assert terms(model, "actor_update", 1)["actor_shards"] == pytest.approx(4 * (p + r) / 2 / MIB)


def test_lora_gradients_and_adams_moments_are_12_bytes_per_adapter_element_4_with_the_optimizer_offloaded(
    mini_context,
):
    _, r = sizes(mini_context)
    model = model_of([plan(), plan(optimizer_offload=True), plan(lora_rank=128)], mini_context)
    optimizer = [terms(model, "actor_update", i)["adapter_gradients_and_adam"] for i in range(3)]
    assert optimizer[0] == pytest.approx(12 * r / 2 / MIB)
    assert optimizer[1] == pytest.approx(4 * r / 2 / MIB)
    assert optimizer[2] == pytest.approx(2 * optimizer[0])  # the adapter is linear in its rank


def test_logits_are_the_micro_batchs_full_length_tokens_times_the_vocabulary_times_the_forms_width(mini_context):
    """The bytes per logit element are a choice of form, made inside the folds (2, 4 or 7: issue 34, item 1)."""
    vocab = float(metadata(QWEN3B, mini_context)["vocab_size"])
    width = mini_context.memory.calibration.logit_bytes
    assert width in (2.0, 4.0, 7.0)
    # 16 x 4 / 2 = 32 sequences per GPU of min(1280, 512 + 768) tokens; a micro-batch above 32 is capped there
    model = model_of([plan(actor_micro_batch=4), plan(actor_micro_batch=64)], mini_context)
    assert terms(model, "actor_update", 0)["update_logits"] == pytest.approx(4 * 1280 * vocab * width / MIB)
    assert terms(model, "actor_update", 1)["update_logits"] == pytest.approx(32 * 1280 * vocab * width / MIB)
    # the log-prob pass takes the larger of the two log-prob micro-batches
    score = model_of([plan(rollout_logprob_micro_batch=2, ref_logprob_micro_batch=6)], mini_context)
    assert terms(score, "reference_logprob")["logprob_logits"] == pytest.approx(6 * 1280 * vocab * width / MIB)


def test_activations_with_and_without_gradient_checkpointing(mini_context):
    meta = metadata(QWEN3B, mini_context)
    hidden, layers = float(meta["hidden_size"]), float(meta["num_hidden_layers"])
    tokens = 4 * 1280
    model = model_of([plan(), plan(gradient_checkpointing=False)], mini_context)
    on, off = (terms(model, "actor_update", i)["activations"] for i in (0, 1))
    assert on == pytest.approx((2 * tokens * hidden * (layers + 1) + 34 * tokens * hidden) / MIB)
    assert off == pytest.approx(34 * tokens * hidden * layers / MIB)


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_a_vllm_that_slept_is_woken_for_its_bf16_weights_split_over_tensor_parallelism(mini_context, tp):
    p, _ = sizes(mini_context)
    model = model_of([plan(rollout_tp_size=tp, gpu_count=4), plan(free_cache_engine=False)], mini_context)
    assert terms(model, "weight_sync", 0)["vllm_woken_weights"] == pytest.approx(2 * p / tp / MIB)
    assert terms(model, "weight_sync", 1)["vllm_woken_weights"] == 0.0  # its weights are inside its reservation


def test_the_lora_merge_gathers_the_parameters_one_unit_at_a_time_with_layered_summon(mini_context):
    meta = metadata(QWEN3B, mini_context)
    p, r = sizes(mini_context)
    unit = max(float(meta[k]) for k in ("largest_transformer_layer_elements", "non_transformer_layer_elements",
                                        "largest_weight_tensor_elements"))  # fmt: skip
    model = model_of([plan(), plan(layered_summon=True), plan(gpu_count=1)], mini_context)
    gathered = [terms(model, "weight_sync", i)["gathered_parameters"] for i in range(3)]
    assert gathered[0] == pytest.approx(4 * (p + r) / MIB)
    assert gathered[1] == pytest.approx(4 * unit / MIB)
    assert gathered[2] == 0.0  # one GPU without offload: the full parameters are resident already


@pytest.mark.parametrize("model_id", [GRANITE, QWEN3B, PHI4, QWEN7B])
def test_kv_cache_bytes_per_token_are_keys_and_values_of_every_layer_in_bf16(mini_context, model_id):
    from rlvrambench_hf.memory.architecture import architecture

    meta = metadata(model_id, mini_context)
    arch = architecture((model_id,), np.array([0]), mini_context.metadata)
    expected = 2 * meta["num_hidden_layers"] * meta["num_key_value_heads"] * meta["head_dim"] * 2
    assert arch.kv_bytes_per_token()[0] == expected
    assert arch.kv_bytes_per_token()[0] == {GRANITE: 40960, QWEN3B: 36864, PHI4: 32768, QWEN7B: 28672}[model_id]


def test_every_uncalibrated_term_is_physics_and_the_runtime_outside_vllm_is_calibrated(mini_context):
    model = model_of([plan()], mini_context)
    for phase in PHASES:
        for term in model.terms[phase]:
            assert term.calibrated or term.name in PHYSICAL | STACK_TERMS | {"critic_activations"}, (phase, term.name)
            assert not (term.calibrated and term.name in PHYSICAL), (phase, term.name)
    assert all(t.calibrated for phase in PHASES for t in model.terms[phase] if t.name == "runtime_outside_vllm")


def test_the_peak_is_the_largest_phase_and_the_binding_phase_sets_it(mini_context):
    rows = [
        plan(),
        plan(free_cache_engine=False),
        plan(gpu_count=1, actor_micro_batch=32),
        plan(parameter_offload=True),
    ]
    model = model_of(rows, mini_context)
    peaks = model.peaks
    assert peaks.shape == (len(rows), len(PHASES))
    for i in range(len(rows)):
        by_phase = {phase: sum(terms(model, phase, i).values()) for phase in PHASES}
        assert list(peaks[i]) == pytest.approx([by_phase[p] for p in PHASES])
        assert model.peak[i] == pytest.approx(max(by_phase.values()))
        assert by_phase[PHASES[int(model.binding[i])]] == pytest.approx(model.peak[i])
    # start-up and generation hold the same terms: the tie is generation's
    assert PHASES[int(model.binding[0])] == "rollout"


def test_every_term_names_its_figures_in_its_arithmetic(mini_context):
    model = model_of([plan()], mini_context)
    explained = {entry["phase"]: entry for entry in model.explain(0)}
    assert list(explained) == [p for p in PHASES if p not in ("critic_update", "reward")]  # no critic, no reward
    for phase, entry in explained.items():
        assert entry["peak_mib"] == pytest.approx(sum(t["mib"] for t in entry["terms"]), abs=0.5), phase
        for term in entry["terms"]:
            assert term["arithmetic"] and "\n" not in term["arithmetic"], (phase, term["term"])
    rollout = {t["term"]: t["arithmetic"] for t in explained["rollout"]["terms"]}
    assert rollout["vllm_reservation"].startswith("0.55 x 40,960 MiB = 22,528 MiB")
    p, r = sizes(mini_context)
    shards = f"{4 * (p + r) / 2 / MIB:,.0f} MiB"
    assert "3,100,000,000 + 120,000,000 adapter" in rollout["resident_actor"]
    assert f"/ 2 GPUs = {shards}" in rollout["resident_actor"]


def test_a_model_without_metadata_has_no_peak(mini_context):
    model = model_of([plan(), plan(model_id="someone/unknown-model")], mini_context)
    assert list(model.known) == [True, False]
    assert math.isfinite(model.peak[0]) and math.isnan(model.peak[1])
