"""The terms of the stacks the release did not measure (:mod:`rlvrambench_hf.memory.stack`), each at its physical
coefficient: full fine-tuning's 16 B per parameter sharded as the strategy shards it, the reference model, the GAE
critic and its update phase, Ulysses, generation outside vLLM, vLLM in server mode, SGLang; and the answer that
gives such a plan a verdict with the band part saying the release measured none of it."""

from __future__ import annotations

import pytest

from unit.advisor.given import MIB, QWEN3B, answer, answers, column, metadata, model_of, plan, severity, terms

pytestmark = pytest.mark.unit

FULL = {"lora_rank": 0, "adaptation": "none"}


def _p(context) -> float:
    return float(metadata(QWEN3B, context)["floating_checkpoint_elements"])


@pytest.mark.parametrize(
    ("backend", "params", "grads", "states"),
    [
        ({}, 2, 2, 2),  # FSDP: everything sharded over the 2 GPUs
        ({"strategy": "deepspeed", "zero_stage": 3}, 2, 2, 2),
        ({"strategy": "deepspeed", "zero_stage": 2}, 1, 2, 2),  # parameters replicated
        ({"strategy": "deepspeed", "zero_stage": 1}, 1, 1, 2),
        ({"strategy": "ddp"}, 1, 1, 1),  # nothing sharded
    ],
)
def test_full_fine_tuning_holds_16_bytes_per_parameter_sharded_as_its_backend_shards_them(
    mini_context, backend, params, grads, states
):
    p = _p(mini_context)
    model = model_of([plan(**FULL, **backend)], mini_context)
    update = terms(model, "actor_update")
    assert update["actor_shards"] == pytest.approx(4 * p / params / MIB)
    assert update["actor_gradients"] == pytest.approx(4 * p / grads / MIB)
    assert update["actor_optimizer_states"] == pytest.approx(8 * p / states / MIB)  # fp32: 4 + 4 + 8 = 16 B
    assert update["adapter_gradients_and_adam"] == 0.0
    assert terms(model, "rollout")["actor_optimizer_states"] == pytest.approx(8 * p / states / MIB)
    assert "initializing" not in {t.name for t in model.terms["initializing"] if t.name == "actor_optimizer_states"}


def test_a_bf16_actor_keeps_an_fp32_master_copy_so_adam_is_still_16_bytes(mini_context):
    p = _p(mini_context)
    model = model_of([plan(**FULL, actor_param_dtype="bf16")], mini_context)
    update = terms(model, "actor_update")
    total = update["actor_shards"] + update["actor_gradients"] + update["actor_optimizer_states"]
    assert total == pytest.approx(16 * p / 2 / MIB)


def test_offloads_move_their_terms_where_verl_and_deepspeed_move_them(mini_context):
    rows = [plan(**FULL, optimizer_offload=True), plan(**FULL, strategy="deepspeed", zero_stage=3,
                                                       optimizer_offload=True, parameter_offload=True)]  # fmt: skip
    model = model_of(rows, mini_context)
    rollout, update = column(model, "rollout", "actor_optimizer_states"), column(model, "actor_update", "actor_shards")
    assert list(rollout) == [0.0, 0.0]  # off the device between updates
    # VERL loads the offloaded optimizer back for the step; DeepSpeed steps on the CPU and keeps parameters there
    assert column(model, "actor_update", "actor_optimizer_states")[0] > 0
    assert column(model, "actor_update", "actor_optimizer_states")[1] == 0.0 and update[1] == 0.0


def test_a_reference_model_is_bf16_weights_only_with_full_fine_tuning(mini_context):
    p = _p(mini_context)
    rows = [plan(**FULL, reference_model=True), plan(reference_model=True), plan(**FULL, reference_model=False),
            plan(**FULL, reference_model=True, ref_param_offload=True)]  # fmt: skip
    model = model_of(rows, mini_context)
    weights = column(model, "rollout", "reference_weights")
    assert weights[0] == pytest.approx(2 * p / 2 / MIB)
    assert list(weights[1:]) == [0.0, 0.0, 0.0]  # LoRA: the base model is the reference; no KL; offloaded
    assert column(model, "reference_logprob", "reference_units")[3] > 0


def test_a_gae_critic_is_a_second_trained_model_with_its_own_update_phase(mini_context):
    p = _p(mini_context)
    offloaded = plan(advantage_estimator="gae", critic_param_offload=True, critic_optimizer_offload=True)
    rows = [plan(advantage_estimator="gae"), offloaded, plan(advantage_estimator="rloo")]
    model = model_of(rows, mini_context)
    critic = terms(model, "critic_update")
    assert critic["critic_parameters"] == pytest.approx(4 * p / 2 / MIB)
    assert critic["critic_gradients"] == pytest.approx(4 * p / 2 / MIB)
    assert critic["critic_adam"] == pytest.approx(8 * p / 2 / MIB)
    assert critic["critic_activations"] > 0
    assert list(column(model, "rollout", "critic_parameters")) == pytest.approx([4 * p / 2 / MIB, 0.0, 0.0])
    assert model.phase_peak("critic_update")[2] == 0.0  # RLOO costs what GRPO costs: no critic
    assert [e["phase"] for e in model.explain(0)][-1] == "critic_update"


def test_ulysses_divides_the_tokens_per_gpu_and_adds_its_all_to_all_buffers(mini_context):
    one, two = (plan(ulysses_sp_size=s, train_batch_size=32) for s in (1, 2))
    model = model_of([one, two], mini_context)
    logits = column(model, "actor_update", "update_logits")
    assert logits[1] == pytest.approx(logits[0] / 2)
    assert column(model, "actor_update", "ulysses_all_to_all")[0] == 0.0
    assert column(model, "actor_update", "ulysses_all_to_all")[1] > 0


def test_generation_outside_vllm_holds_an_unpaged_cache_and_no_reservation(mini_context):
    model = model_of([plan(rollout_engine="hf"), plan(vllm_mode="server"), plan(rollout_engine="sglang")],
                     mini_context)  # fmt: skip
    meta = metadata(QWEN3B, mini_context)
    kv = 2 * meta["num_hidden_layers"] * meta["num_key_value_heads"] * meta["head_dim"] * 2
    reservation = column(model, "rollout", "vllm_reservation")
    assert list(reservation) == pytest.approx([0.0, 0.0, 0.55 * 40960])  # SGLang: mem_fraction_static x C
    sequences = 16 * 4 / 2
    assert column(model, "rollout", "unpaged_kv_cache")[0] == pytest.approx(sequences * 1280 * kv / MIB)
    assert column(model, "weight_sync", "vllm_woken_weights")[1] == 0.0


def test_every_stack_gets_a_verdict_with_the_band_part_that_says_the_release_measured_none_of_it(mini_context):
    rows = [plan(**FULL), plan(strategy="ddp"), plan(strategy="deepspeed", zero_stage=2),
            plan(advantage_estimator="gae"), plan(ulysses_sp_size=2), plan(rollout_engine="hf"),
            plan(vllm_mode="server"), plan(use_dynamic_bsz=True), plan(rollout_engine="sglang")]  # fmt: skip
    for row, found in zip(rows, answers(rows, mini_context)):
        assert found["verdict"]["state"] is not None and found["predicted_peak_mib"] is not None, row
        parts = {p["part"] for p in found["band"]["parts"]}
        (phase,) = [p for p in found["phases"] if p["phase"] == found["band"]["phase"]]
        physics_only = any("physics only" in t["arithmetic"] and t["mib"] > 0 for t in phase["terms"])
        assert ("stack_not_measured" in parts) >= physics_only, (row, parts)
    assert any("stack_not_measured" in {p["part"] for p in f["band"]["parts"]} for f in answers(rows, mini_context))


def test_full_fine_tuning_is_at_least_its_lora_twin_and_says_where_its_bytes_are(mini_context):
    lora, full = answers([plan(vllm_gpu_memory_utilization=0.85), plan(vllm_gpu_memory_utilization=0.85, **FULL)],
                         mini_context)  # fmt: skip
    assert severity(full["verdict"]["state"]) >= severity(lora["verdict"]["state"]) > 0
    update = next(p for p in full["phases"] if p["phase"] == "actor_update")
    arithmetic = {t["term"]: t["arithmetic"] for t in update["terms"]}
    assert "(16 - 2 x 4) B x" in arithmetic["actor_optimizer_states"]
    assert "physics only" in arithmetic["actor_gradients"]


def test_megatron_splits_weights_by_tp_x_pp_and_its_optimizer_over_every_gpu(mini_context):
    p = _p(mini_context)
    row = plan(**FULL, strategy="megatron", megatron_tp=2, megatron_pp=1, gpu_count=4, train_batch_size=32)
    model = model_of([row, {**row, "megatron_tp": 1}], mini_context)
    update = terms(model, "actor_update")
    assert update["actor_shards"] == pytest.approx(2 * p / 2 / MIB)  # bf16 weights over TP 2
    assert update["actor_gradients"] == pytest.approx(4 * p / 2 / MIB)  # fp32 main gradients
    assert update["actor_optimizer_states"] == pytest.approx(12 * p / 4 / MIB)  # distributed optimizer
    logits = column(model, "actor_update", "update_logits")
    assert logits[0] == pytest.approx(logits[1] / 2)  # vocabulary-parallel logits, sequence-parallel tokens


def test_an_unknown_engine_stays_out_of_scope_with_its_reason(mini_context):
    verdict = answer(plan(rollout_engine="trtllm"), mini_context)["verdict"]
    assert verdict["state"] is None and "rollout_engine=trtllm" in verdict["sentence"]


def test_the_changes_that_make_a_stack_fit_include_its_own_levers_in_the_users_keys(mini_context):
    """A fully fine-tuned Qwen2.5-3B under ZeRO-2 on two GPUs does not fit: sharding the parameters too (ZeRO-3)
    is among the changes, written as the accelerate config's entry; a critic's offloads are levers of a GAE run."""
    zero2, gae = answers([plan(**FULL, strategy="deepspeed", zero_stage=2, vllm_gpu_memory_utilization=0.3),
                          plan(advantage_estimator="gae")],
                         mini_context)  # fmt: skip
    assert zero2["verdict"]["state"] != "within_margin"
    stage = [c for c in zero2["changes"] if c["setting"] == "zero_stage"]
    assert stage and stage[0]["to"] == 3
    assert stage[0]["accelerate_config"] == ["deepspeed_config.zero_stage: 3"]
    assert gae["verdict"]["state"] != "within_margin"
    offloads = {c["setting"] for c in gae["changes"]}
    assert offloads & {"critic_param_offload", "critic_optimizer_offload"}, offloads


def test_a_micro_batch_under_dynamic_batch_sizes_is_pasted_as_its_token_budget():
    from rlvrambench_hf.advisor.assess.changes import in_user_keys

    settings = {"use_dynamic_bsz": True, "max_prompt_length": 512, "max_response_length": 1024, "ulysses_sp_size": 2}
    keys = in_user_keys("actor_micro_batch", 4, settings)
    assert keys["verl_overrides"] == ["actor_rollout_ref.actor.ppo_max_token_len_per_gpu=3072"]
    fixed = in_user_keys("actor_micro_batch", 4, {**settings, "use_dynamic_bsz": False})
    assert fixed["verl_overrides"] == ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4"]


def test_an_unsized_reward_model_or_a_critic_of_another_model_is_not_modelled(mini_context):
    rows = [plan(reward_model=True), plan(advantage_estimator="gae", critic_other_model=True),
            plan(advantage_estimator="gae", critic_other_model=False)]  # fmt: skip
    reward, other, same = answers(rows, mini_context)
    assert reward["verdict"]["state"] is None and "reward_model.model.path" in reward["verdict"]["sentence"]
    assert other["verdict"]["state"] is None and "critic.model.path" in other["verdict"]["sentence"]
    assert same["verdict"]["state"] is not None  # the actor's own model


def test_the_critic_is_another_model_when_its_path_names_another_one():
    from rlvrambench_hf.advisor.plan.conversions import _other_model

    assert _other_model(("$HOME/models/Qwen2.5-3B-Instruct", "Qwen/Qwen2.5-3B-Instruct"), {}) is False
    assert _other_model(("Skywork/Skywork-Reward-Llama-3.1-8B", "Qwen/Qwen2.5-3B-Instruct"), {}) is True
    assert _other_model((None, "Qwen/Qwen2.5-3B-Instruct"), {}) is None


def test_a_qwen2_5_vl_config_counts_its_vision_tower():
    """The shipped config.json facts of Qwen2.5-VL derive the parameter counts their model cards state (8.29B and
    3.75B): the decoder's and the vision tower's."""
    from rlvrambench_hf.estimation.hubmeta import architecture_metadata
    from rlvrambench_hf.estimation.knownconfigs import KNOWN_CONFIGS

    for model, billions in (("Qwen/Qwen2.5-VL-7B-Instruct", 8.29), ("Qwen/Qwen2.5-VL-3B-Instruct", 3.75)):
        elements = architecture_metadata(model, KNOWN_CONFIGS[model])["floating_checkpoint_elements"]
        assert round(elements / 1e9, 2) == billions
