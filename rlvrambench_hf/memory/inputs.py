"""The numbers the model reads per plan, as numpy columns: the dataset's settings, the memory knobs beside them
(:mod:`rlvrambench_hf.advisor.plan.knobs` names them) and the device. The caller converts its table; this module only
resolves what a plan leaves unsaid and says from where each value came.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

#: Settings of the dataset's vocabulary the model reads.
SETTINGS: tuple[str, ...] = (
    "gpu_count",
    "rollout_tp_size",
    "vllm_gpu_memory_utilization",
    "device_capacity_mib",
    "parameter_offload",
    "optimizer_offload",
    "free_cache_engine",
    "actor_micro_batch",
    "rollout_logprob_micro_batch",
    "ref_logprob_micro_batch",
    "max_prompt_length",
    "max_response_length",
    "max_model_len",
    "train_batch_size",
    "rollout_n",
    "max_num_seqs",
    "total_training_steps",
)
#: Numeric and boolean knobs the model reads, with the value it takes when a plan does not say, and why.
KNOB_DEFAULTS: dict[str, tuple[float, str]] = {
    "lora_rank": (64.0, "the release's rank 64"),
    "gradient_checkpointing": (1.0, "VERL's default (enable_gradient_checkpointing: true), as the release ran"),
    "use_remove_padding": (1.0, "VERL's default (use_remove_padding: true)"),
    "layered_summon": (0.0, "VERL's default (layered_summon: false)"),
    "nnodes": (1.0, "one node, as the release ran"),
    "ulysses_sp_size": (1.0, "no sequence parallelism, as the release ran"),
    "reference_model": (1.0, "not stated: a reference model is assumed loaded (TRL's beta was 0.04 before 0.19)"),
    "ref_param_offload": (0.0, "VERL's default (ref.fsdp_config.param_offload: false)"),
    "critic_param_offload": (0.0, "VERL's default (critic.model.fsdp_config.param_offload: false)"),
    "critic_optimizer_offload": (0.0, "VERL's default (critic.model.fsdp_config.optimizer_offload: false)"),
    "reward_model": (0.0, "no model-based reward, as the release ran"),
    "reward_loop": (0.0, "a FSDP reward model (VERL before its reward loop)"),
    "reward_pool": (0.0, "VERL's default (reward_model.enable_resource_pool: false): on the training GPUs"),
    "reward_vllm_utilization": (0.5, "VERL's default (reward.reward_model.rollout.gpu_memory_utilization: 0.5)"),
    "reward_tp_size": (2.0, "VERL's default (reward.reward_model.rollout.tensor_model_parallel_size: 2)"),
    "reward_free_cache_engine": (1.0, "VERL's default (reward.reward_model.rollout.free_cache_engine: true)"),
    "reward_param_offload": (0.0, "VERL's default (reward_model.model.fsdp_config.param_offload: false)"),
    "reward_micro_batch": (np.nan, "not given: VERL requires it (or dynamic batch sizes)"),
    "reward_dynamic_bsz": (0.0, "VERL's default (reward_model.use_dynamic_bsz: false)"),
    "reward_max_token_len": (np.nan, "not given"),
    "reward_params": (np.nan, "no shipped config.json facts for the reward model"),
    "reward_unit": (np.nan, "no shipped config.json facts for the reward model"),
    "reward_hidden": (np.nan, "no shipped config.json facts for the reward model"),
    "reward_layers": (np.nan, "no shipped config.json facts for the reward model"),
    # derived from the string knobs (``strategy``, ``zero_stage``, ``vllm_mode``, ``rollout_engine``,
    # ``advantage_estimator``) by the caller: what the model computes with
    "sharding_stage": (3.0, "FSDP, as the release ran: parameters, gradients and optimizer states sharded"),
    "deepspeed": (0.0, "FSDP, as the release ran"),
    "vllm_server": (0.0, "vLLM colocated on the training GPUs, as the release ran"),
    "unpaged_generation": (0.0, "vLLM generates, as the release ran"),
    "gae_critic": (0.0, "GRPO, as the release ran: no critic"),
    "dynamic_batch": (0.0, "fixed micro-batches, as the release ran"),
    "other_engine": (0.0, "vLLM, as the release ran"),
    "full_fine_tuning": (0.0, "LoRA, as the release ran"),
    "megatron": (0.0, "FSDP, as the release ran"),
    "megatron_tp": (1.0, "VERL's default (megatron.tensor_model_parallel_size: 1)"),
    "megatron_pp": (1.0, "VERL's default (megatron.pipeline_model_parallel_size: 1)"),
    "megatron_cp": (1.0, "VERL's default (megatron.context_parallel_size: 1)"),
}
#: Bytes per element of the resident actor by ``actor_param_dtype`` (the release: fp32 FSDP shards).
ACTOR_DTYPE_BYTES: dict[str, float] = {"fp32": 4.0, "float32": 4.0, "bf16": 2.0, "bfloat16": 2.0, "fp16": 2.0}


@dataclass(frozen=True)
class PlanInputs:
    """Per plan: ``values`` (float64, 0 where not given) and ``valid`` of every setting and numeric knob, the
    resident actor's bytes per element and the workload's index (``workload``: -1 for none) into ``workloads``."""

    values: Mapping[str, np.ndarray]
    valid: Mapping[str, np.ndarray]
    actor_bytes: np.ndarray
    actor_bytes_given: np.ndarray
    workload: np.ndarray
    workloads: tuple[str, ...]

    def __getitem__(self, name: str) -> np.ndarray:
        return self.values[name]

    @property
    def rows(self) -> int:
        return len(self.workload)

    def knob(self, name: str) -> np.ndarray:
        """The knob's value per plan, its default where the plan does not say."""
        default = KNOB_DEFAULTS[name][0]
        if name not in self.values:
            return np.full(self.rows, default)
        return np.where(self.valid[name], self.values[name], default)

    def knob_given(self, name: str) -> np.ndarray:
        return self.valid[name] if name in self.valid else np.zeros(self.rows, dtype=bool)

    def take(self, index: np.ndarray) -> PlanInputs:
        """The plans at ``index`` (the same workload names)."""
        return PlanInputs(
            {k: v[index] for k, v in self.values.items()},
            {k: v[index] for k, v in self.valid.items()},
            self.actor_bytes[index],
            self.actor_bytes_given[index],
            self.workload[index],
            self.workloads,
        )


def plan_inputs(
    values: Mapping[str, np.ndarray],
    valid: Mapping[str, np.ndarray],
    actor_dtype: list[str | None] | None = None,
    workload: np.ndarray | None = None,
    workloads: tuple[str, ...] = (),
) -> PlanInputs:
    """Plan inputs from columns (settings absent from ``values`` count as not given)."""
    n = len(next(iter(values.values())))
    vals, oks = dict(values), dict(valid)
    for name in SETTINGS:
        vals.setdefault(name, np.zeros(n))
        oks.setdefault(name, np.zeros(n, dtype=bool))
    if actor_dtype is None:
        known, actor_bytes = np.zeros(n, dtype=bool), np.full(n, 4.0)
    else:
        known = np.array([d is not None and d.lower() in ACTOR_DTYPE_BYTES for d in actor_dtype], dtype=bool)
        actor_bytes = np.array([ACTOR_DTYPE_BYTES.get((d or "fp32").lower(), 4.0) for d in actor_dtype])
    codes = workload if workload is not None else np.full(n, -1)
    return PlanInputs(vals, oks, actor_bytes.reshape(n), known.reshape(n), codes, workloads)
