"""Suggested changes in the user's own keys: written from the mapping table, every VERL key one of VERL's own."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rlvrambench_hf.advisor.assess.changes import MOVES, in_user_keys

SETTINGS = {"adaptation": "LoRA", "max_prompt_length": 1024, "max_response_length": 2048, "rollout_n": 2,
            "gpu_count": 2, "actor_micro_batch": 8}  # fmt: skip
VALUES = {"parameter_offload": True, "optimizer_offload": True, "free_cache_engine": True,
          "vllm_gpu_memory_utilization": 0.45, "ref_param_offload": True, "critic_param_offload": True,
          "critic_optimizer_offload": True, "zero_stage": 3, "ulysses_sp_size": 2, "reward_param_offload": True,
          "reward_vllm_utilization": 0.3}  # fmt: skip
#: Settings VERL has no key for (DeepSpeed's ZeRO stage is an accelerate-config entry of a TRL run).
NOT_VERL = {"zero_stage"}
#: The FSDP reward model's keys: VERL's before its reward loop (source: ``verl/trainer/config/
#: _generated_ppo_trainer.yaml`` of the verl 0.5.0 wheel); from 0.7 on the reward model is the reward loop's.
BEFORE_REWARD_LOOP = {"reward_model.model.fsdp_config.param_offload", "reward_model.micro_batch_size_per_gpu"}


def keys_of(mapping: dict, prefix: str = "") -> set[str]:
    out = set()
    for key, value in mapping.items():
        out.add(prefix + key)
        if isinstance(value, dict):
            out |= keys_of(value, prefix + key + ".")
    return out


@pytest.fixture(scope="module")
def verl_keys(verl_trainer_configs: Path) -> set[str]:
    return keys_of(yaml.safe_load((verl_trainer_configs / "_generated_ppo_trainer.yaml").read_text()))


def test_every_suggested_verl_key_exists_in_verl_defaults(verl_keys):
    for setting in MOVES:
        written = in_user_keys(setting, VALUES.get(setting, 4), SETTINGS)
        assert bool(written["verl_overrides"]) != (setting in NOT_VERL), setting
        for override in written["verl_overrides"]:
            assert override.split("=")[0] in verl_keys | BEFORE_REWARD_LOOP, override


def test_registry_settings_are_written_as_a_user_pastes_them():
    assert in_user_keys("vllm_gpu_memory_utilization", 0.45, SETTINGS) == {
        "verl_overrides": ["actor_rollout_ref.rollout.gpu_memory_utilization=0.45"],
        "trl_arguments": ["--vllm_gpu_memory_utilization 0.45"],
        "accelerate_config": [],
    }
    assert in_user_keys("actor_micro_batch", 4, SETTINGS)["trl_arguments"] == ["--per_device_train_batch_size 4"]
    assert in_user_keys("gpu_count", 4, SETTINGS)["verl_overrides"] == [
        "trainer.n_gpus_per_node=4", "trainer.nnodes=1"
    ]  # fmt: skip
    assert in_user_keys("parameter_offload", True, SETTINGS) == {
        "verl_overrides": ["actor_rollout_ref.actor.fsdp_config.param_offload=True"],
        "trl_arguments": [],  # not a GRPOConfig argument: the accelerate config's DeepSpeed section holds it
        "accelerate_config": ["deepspeed_config.offload_param_device: cpu"],
    }
    assert in_user_keys("gpu_count", 4, SETTINGS)["accelerate_config"] == ["num_processes: 4"]
    assert in_user_keys("rollout_tp_size", 2, SETTINGS)["trl_arguments"] == ["--vllm_tensor_parallel_size 2"]
    assert in_user_keys("max_response_length", 1024, SETTINGS) == {
        "verl_overrides": ["data.max_response_length=1024"],
        "trl_arguments": ["--max_completion_length 1024"],
        "accelerate_config": [],
    }


def test_a_plan_that_overflows_its_actor_update_is_offered_gradient_checkpointing(snapshot):
    """Gradient checkpointing off makes a plan's actor update overflow: turning it back on (VERL's key) is among the
    changes that make it fit, with the model's peak after it."""
    from rlvrambench_hf.advisor import advise_planned

    plan = {
        "model_id": "Qwen/Qwen2.5-3B-Instruct", "workload_id": "gsm8k", "gpu_count": 2, "rollout_tp_size": 1,
        "actor_micro_batch": 32, "rollout_logprob_micro_batch": 8, "ref_logprob_micro_batch": 8,
        "vllm_gpu_memory_utilization": 0.6, "parameter_offload": True, "optimizer_offload": False,
        "free_cache_engine": True, "max_prompt_length": 1024, "max_response_length": 1024, "max_model_len": 2048,
        "max_num_seqs": 64, "rollout_n": 5, "train_batch_size": 128, "gradient_checkpointing": False,
    }  # fmt: skip
    (answer,) = advise_planned([plan], snapshot)["configurations"]
    assert answer["verdict"]["state"] != "within_margin" and answer["binding_phase"] == "actor_update"
    (on,) = [c for c in answer["changes"] if c["setting"] == "gradient_checkpointing"]
    assert on["verl_overrides"] == ["actor_rollout_ref.model.enable_gradient_checkpointing=True"]
    assert on["predicted_peak_change_mib"] < 0 and on["basis"] == "predicted"
    (fitting,) = advise_planned([{**plan, "gradient_checkpointing": True}], snapshot)["configurations"]
    assert fitting["verdict"]["state"] == "within_margin"
