"""A model-based reward as per-phase physics (:class:`rlvrambench_hf.memory.arithmetic.Reward`): a FSDP reward
model's bf16 shards, one unit gathered and its micro-batch's forward (a score head of width 1: no vocabulary
logits), or VERL's reward loop (a reward engine woken for the reward, ``u_r x C``), in a ``reward`` phase beside
what stays resident; read from a launch file in the shape of VERL's reward-model examples."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvrambench_hf.advisor.assess.verdict import REWARD_MICRO, REWARD_MODEL
from rlvrambench_hf.advisor.plan.reward import reward_sizes
from rlvrambench_hf.memory.arithmetic import REWARD_FORWARD_BYTES
from unit.advisor.given import MIB, answers, column, model_of, plan, terms

pytestmark = pytest.mark.unit

#: A reward model of 1.5 B parameters, layers of 50 M elements, hidden 2048 (sizes as the reader gives them).
SIZES = {"reward_params": 1.5e9, "reward_unit": 5e7, "reward_hidden": 2048.0, "reward_layers": 28.0}
FSDP = {"reward_model": True, "reward_loop": False, "reward_micro_batch": 4, **SIZES}
LOOP = {"reward_model": True, "reward_loop": True, "reward_vllm_utilization": 0.3, "reward_tp_size": 1, **SIZES}


def test_a_fsdp_reward_model_is_bf16_shards_a_gathered_unit_and_its_forward(mini_context):
    """Two GPUs, 32 sequences per GPU of 1280 tokens: the reward phase holds 2 B x P / 2, 2 x 2 B x U and the
    forward of 4 sequences (hidden states and one layer, 36 B per token and hidden unit); the shards stay resident
    in every phase unless offloaded, when each unit is fetched from the CPU."""
    model = model_of([plan(**FSDP), plan(**FSDP, reward_param_offload=True), plan()], mini_context)
    reward = terms(model, "reward")
    assert reward["reward_weights"] == pytest.approx(2 * 1.5e9 / 2 / MIB)
    assert reward["reward_gathered_units"] == pytest.approx(2 * 2 * 5e7 / MIB)
    assert reward["reward_activations"] == pytest.approx(4 * 1280 * 2048 * REWARD_FORWARD_BYTES / MIB)
    assert REWARD_FORWARD_BYTES == 36.0
    assert reward["reward_engine"] == 0.0
    # beside what stays resident after generation: the actor's shards, vLLM asleep
    assert reward["resident_actor"] == pytest.approx(terms(model, "rollout")["resident_actor"])
    assert reward["vllm_between_generations"] == 0.0
    assert list(column(model, "rollout", "reward_weights")) == pytest.approx([2 * 1.5e9 / 2 / MIB, 0.0, 0.0])
    assert column(model, "reward", "reward_gathered_units")[1] == pytest.approx(2 * 2 * 5e7 / MIB)
    assert model.phase_peak("reward")[2] == 0.0  # no model-based reward: no reward phase
    assert "reward" in [e["phase"] for e in model.explain(0)]
    assert "reward" not in [e["phase"] for e in model.explain(2)]


def test_the_reward_loop_is_an_engine_woken_for_the_reward(mini_context):
    """VERL's reward loop: ``u_r x C`` while it scores (its weights inside), nothing between rewards unless
    free_cache_engine is off, nothing here on a resource pool of its own; weights beyond the reservation add to it
    (vLLM cannot hold them inside)."""
    rows = [plan(**LOOP), plan(**LOOP, reward_free_cache_engine=False), plan(**LOOP, reward_pool=True),
            plan(**{**LOOP, "reward_vllm_utilization": 0.05})]  # fmt: skip
    model = model_of(rows, mini_context)
    engine = column(model, "reward", "reward_engine")
    assert list(engine[:3]) == pytest.approx([0.3 * 40960, 0.3 * 40960, 0.0])
    assert engine[3] == pytest.approx(0.05 * 40960 + 2 * 1.5e9 / MIB)
    assert list(column(model, "rollout", "reward_engine_kept")) == pytest.approx([0.0, 0.3 * 40960, 0.0, 0.0])
    assert list(column(model, "reward", "reward_weights")) == [0.0] * 4  # no FSDP reward model


def test_a_reward_plan_gets_a_verdict_with_the_stack_band_part_and_its_own_levers(mini_context):
    fits, crowded, unsized, no_micro = answers(
        [plan(**LOOP), plan(**{**LOOP, "reward_vllm_utilization": 0.9}), plan(reward_model=True, reward_loop=True),
         plan(**{**FSDP, "reward_micro_batch": None})],
        mini_context,
    )  # fmt: skip
    assert fits["verdict"]["state"] is not None and fits["predicted_peak_mib"] is not None
    (phase,) = [p for p in fits["phases"] if p["phase"] == "reward"]
    arithmetic = {t["term"]: t["arithmetic"] for t in phase["terms"]}
    assert "0.3 x 40,960 MiB" in arithmetic["reward_engine"] and "physics only" in arithmetic["reward_engine"]
    assert crowded["binding_phase"] == "reward" and crowded["verdict"]["state"] != "within_margin"
    assert "stack_not_measured" in {p["part"] for p in crowded["band"]["parts"]}
    lever = [c for c in crowded["changes"] if c["setting"] == "reward_vllm_utilization"]
    assert lever and lever[0]["verl_overrides"] == [f"reward_model.rollout.gpu_memory_utilization={lever[0]['to']}"]
    assert (
        unsized["verdict"]["state"] is None
        and REWARD_MODEL.split(":")[1].strip()[:40] in unsized["verdict"]["sentence"]
    )
    assert no_micro["verdict"]["state"] is None and "micro_batch_size_per_gpu" in no_micro["verdict"]["sentence"]
    assert "micro_batch_size_per_gpu" in REWARD_MICRO


def test_reward_models_are_sized_as_sequence_classifiers_from_shipped_facts():
    """Skywork-Reward-Llama-3.1-8B: Llama-3.1-8B's decoder and embeddings without the vocabulary head (about 7.5 B,
    its four safetensors shards of 15.0 GB in bf16); Skywork-Reward-V2-Llama-3.2-3B: its base's size; a model
    without shipped facts: None."""
    model, sizes = reward_sizes("Skywork/Skywork-Reward-Llama-3.1-8B") or ("", {})
    assert model == "Skywork/Skywork-Reward-Llama-3.1-8B" and round(sizes["reward_params"] / 1e9, 2) == 7.5
    assert sizes["reward_hidden"] == 4096 and sizes["reward_unit"] == 128257 * 4096
    base = reward_sizes("$HOME/models/Skywork-Reward-V2-Llama-3.2-3B")
    assert base is not None and base[0] == "Skywork/Skywork-Reward-V2-Llama-3.2-3B"
    assert round(base[1]["reward_params"] / 1e9, 2) == 3.21 and base[1]["reward_layers"] == 28
    assert reward_sizes("sfairXC/FsfairX-LLaMA3-RM-v0.1") is None


LAUNCH = """\
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=16 data.max_prompt_length=512 data.max_response_length=512 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct \\
    actor_rollout_ref.model.lora_rank=64 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \\
    actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.n=4 \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \\
    actor_rollout_ref.rollout.gpu_memory_utilization=0.4 \\
    reward_model.enable=True \\
    reward_model.model.path="$HOME/models/Skywork-Reward-V2-Llama-3.2-3B" \\
    {reward} \\
    trainer.n_gpus_per_node=2 trainer.nnodes=1
"""


@pytest.mark.parametrize(
    ("reward", "terms_on"),
    [
        ("reward_model.use_reward_loop=False reward_model.model.fsdp_config.param_offload=True "
         "reward_model.micro_batch_size_per_gpu=8", {"reward_gathered_units", "reward_activations"}),
        ("reward_model.use_reward_loop=True reward_model.rollout.name=vllm "
         "reward_model.rollout.gpu_memory_utilization=0.3 reward_model.rollout.tensor_model_parallel_size=1",
         {"reward_engine"}),
    ],
)  # fmt: skip
def test_a_launch_file_in_the_shape_of_verls_reward_model_examples_gets_a_verdict(
    tmp_path: Path, shared_mini, mini_context, reward: str, terms_on: set[str]
):
    from rlvrambench_hf.advisor import read_plans

    script = tmp_path / "run_qwen2.5-3b_rm.sh"
    script.write_text(LAUNCH.format(reward=reward))
    plans = read_plans(script, kind="verl", workload="gsm8k", source=shared_mini.root)
    (found,) = answers(plans, mini_context)
    assert found["verdict"]["state"] is not None, found["verdict"]
    (phase,) = [p for p in found["phases"] if p["phase"] == "reward"]
    shown = {t["term"] for t in phase["terms"] if t["mib"] > 0}
    assert terms_on <= shown and "resident_actor" in shown
    assert all("physics only" in t["arithmetic"] for t in phase["terms"] if t["term"] in terms_on)
