"""Settings that matter for memory beyond the columns of ``benchmark/configurations.csv``: the contract between the
readers of launch files (:mod:`..read.verl`, :mod:`..read.trl`, which write them) and the per-phase memory model
(:mod:`rlvrambench_hf.memory`, which reads them).

A :class:`~.plans.Plans` table may carry any of these as extra columns, named and typed as here, beside the
registry's settings. A column that is absent, or null in a row, means the plan does not say; the model then takes
``measured`` (what the release's stack ran with), or, where that is ``None``, the framework's own default, and says
so in its arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa


@dataclass(frozen=True)
class Knob:
    """One memory-relevant setting: its column ``name``, Arrow ``type``, one-line ``meaning`` and the value the
    release's stack ran with (``None``: the release does not record it)."""

    name: str
    type: pa.DataType
    meaning: str
    measured: object = None


KNOBS: tuple[Knob, ...] = (
    Knob("nnodes", pa.int64(), "nodes; gpu_count stays the total of GPUs over all nodes", 1),
    Knob("lora_rank", pa.int64(), "LoRA rank of the adapter; 0 is full fine-tuning", 64),
    Knob("strategy", pa.string(), "actor training backend: fsdp, fsdp2, megatron, deepspeed, ddp", "fsdp"),
    Knob("zero_stage", pa.int64(), "DeepSpeed ZeRO stage when strategy is deepspeed"),
    Knob("rollout_engine", pa.string(), "generation engine: vllm, sglang, hf, none", "vllm"),
    Knob("vllm_mode", pa.string(), "colocate (generation on the training GPUs) or server (other GPUs)", "colocate"),
    Knob("advantage_estimator", pa.string(), "grpo, gae (a critic model), ...", "grpo"),
    Knob("gradient_checkpointing", pa.bool_(), "activation recomputation in the actor update"),
    Knob("use_remove_padding", pa.bool_(), "packed sequences without padding tokens"),
    Knob("layered_summon", pa.bool_(), "LoRA weight sync gathers one layer at a time"),
    Knob("actor_param_dtype", pa.string(), "dtype of the resident actor parameters: fp32, bf16", "fp32"),
    Knob("base_quant_bits", pa.int64(), "bits of a quantised base model (4, 8); null: not quantised"),
    Knob("enforce_eager", pa.bool_(), "vLLM without CUDA graphs"),
    Knob("load_format", pa.string(), "vLLM load format (dummy_dtensor, safetensors, ...)"),
    Knob("max_num_batched_tokens", pa.int64(), "vLLM's token budget per scheduler step"),
    Knob("use_dynamic_bsz", pa.bool_(), "token-budgeted micro-batches instead of fixed ones"),
    Knob("max_token_len_per_gpu", pa.int64(), "the actor's token budget per micro-batch with dynamic batch sizes"),
    Knob("ulysses_sp_size", pa.int64(), "Ulysses sequence-parallel size of the actor"),
    Knob(
        "reference_model",
        pa.bool_(),
        "a KL term needs a reference policy (VERL use_kl_loss / use_kl_in_reward, TRL "
        "beta > 0); with full fine-tuning it is a second set of weights",
        True,
    ),
    Knob("ref_param_offload", pa.bool_(), "the reference model's parameters offloaded to the CPU"),
    Knob("critic_param_offload", pa.bool_(), "the GAE critic's parameters offloaded to the CPU between its phases"),
    Knob("critic_optimizer_offload", pa.bool_(), "the GAE critic's Adam states offloaded to the CPU between updates"),
    Knob("critic_micro_batch", pa.int64(), "the GAE critic's micro-batch per GPU in its update"),
    Knob("critic_other_model", pa.bool_(), "the GAE critic names another model than the actor's"),
    Knob("reward_model", pa.bool_(), "a model-based reward (a second model's weights on the GPUs)"),
    Knob("reward_loop", pa.bool_(), "the reward model served by an inference engine (VERL's reward loop)"),
    Knob("reward_pool", pa.bool_(), "the reward loop's engine on GPUs of its own (enable_resource_pool)"),
    Knob("reward_vllm_utilization", pa.float64(), "the reward engine's share of device memory while it scores"),
    Knob("reward_tp_size", pa.int64(), "the reward engine's tensor-parallel size"),
    Knob("reward_free_cache_engine", pa.bool_(), "the reward engine sleeps between rewards"),
    Knob("reward_param_offload", pa.bool_(), "the FSDP reward model's parameters offloaded to the CPU"),
    Knob("reward_micro_batch", pa.int64(), "the FSDP reward model's micro-batch per GPU"),
    Knob("reward_dynamic_bsz", pa.bool_(), "the FSDP reward model's micro-batches sized by tokens"),
    Knob("reward_max_token_len", pa.int64(), "the FSDP reward model's token budget per micro-batch"),
    Knob("reward_params", pa.float64(), "the reward model's parameters (a sequence classifier)"),
    Knob("reward_unit", pa.float64(), "the reward model's largest FSDP unit, elements"),
    Knob("reward_hidden", pa.float64(), "the reward model's hidden size"),
    Knob("reward_layers", pa.float64(), "the reward model's layers"),
    Knob("megatron_tp", pa.int64(), "Megatron's tensor-parallel size of the actor"),
    Knob("megatron_pp", pa.int64(), "Megatron's pipeline-parallel size of the actor"),
    Knob("megatron_cp", pa.int64(), "Megatron's context-parallel size of the actor"),
)

#: The knobs by name.
KNOB_BY_NAME: dict[str, Knob] = {k.name: k for k in KNOBS}

_KINDS = {pa.int64(): "int64", pa.string(): "string", pa.bool_(): "bool", pa.float64(): "float64"}


def knob_columns() -> dict[str, Any]:
    """The knobs as registry-style :class:`~rlvrambench_hf.data.schema.spec.Column` objects, by name (so that a
    reader types and checks them as it does the settings)."""
    from ...data.schema.spec import Column

    return {k.name: Column(k.name, _KINDS[k.type], k.meaning) for k in KNOBS}
