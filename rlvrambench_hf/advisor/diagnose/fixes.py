"""What fixes each failure, as the frameworks document it and as users' threads found it (VERL's performance-tuning
guide and configs, vLLM's, TRL's, DeepSpeed's and Ray's docs), each in VERL's and TRL's spelling and never with a
value that is not the user's ("lower", not "0.8 -> 0.7"): the fixes of the operation the stack shows first (a vLLM
wake-up, a ZeRO-3 parameter gather, the backward pass), then the class's; and the devices a log's total names.

A fix that needs a stack the log shows no sign of is left out (vLLM's settings for a run without vLLM); a log that
names no stack gets them all."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from .remedies import OTHER_FIXES, Fix

#: The release's failure kind for host memory (the larger-model panel's).
HOST_KIND = "vllm_executor_failure"
#: The fixes of a KV cache too small for one sequence (a kind of rollout_init_memory).
KV_SHORT = "rollout_init_memory/kv_cache"


UTILIZATION_KEY = "actor_rollout_ref.rollout.gpu_memory_utilization"
_PARAM = "actor_rollout_ref.actor.fsdp_config.param_offload"
_OPT = "actor_rollout_ref.actor.fsdp_config.optimizer_offload"
_TRL_PARAM = "accelerate config: fsdp_offload_params: true (FSDP) or offload_param_device: cpu (DeepSpeed ZeRO-3)"
_TRL_OPT = "accelerate config: offload_optimizer_device: cpu (DeepSpeed)"
_DS = "the DeepSpeed config (accelerate's deepspeed_config_file)"
_LOWER_U = Fix(
    UTILIZATION_KEY,
    "vllm_gpu_memory_utilization",
    "lower",
    "vLLM reserves this share of the whole device",
    needs="vllm",
)
_SLEEP = Fix(
    "actor_rollout_ref.rollout.free_cache_engine",
    "vllm_enable_sleep_mode",
    "True",
    "vLLM sleeps (releases its KV cache, and its weights) while the trainer works",
    needs="vllm",
)
_PARAM_OFF = Fix(_PARAM, _TRL_PARAM, "True", "the actor's parameters wait in host memory while vLLM holds the device")
_OPT_OFF = Fix(_OPT, _TRL_OPT, "True", "the optimizer states stay in host memory")
_TP = Fix(
    "actor_rollout_ref.rollout.tensor_model_parallel_size",
    "vllm_tensor_parallel_size",
    "raise",
    "each device holds a smaller share of vLLM's weights",
    needs="vllm",
)
_MICRO = Fix(
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "per_device_train_batch_size (raise gradient_accumulation_steps to keep the batch)",
    "lower",
    "activations and logits grow with the micro-batch",
)
_CHECKPOINTING = Fix(
    "actor_rollout_ref.model.enable_gradient_checkpointing",
    "gradient_checkpointing",
    "True",
    "activations are recomputed instead of kept",
)
_LOGPROB = Fix(
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
    "per_device_train_batch_size",
    "lower",
    "log-probability logits grow with tokens x vocabulary",
)
_RESPONSE = Fix("data.max_response_length", "max_completion_length", "lower", "every token generated holds KV cache")
#: The fixes of each class.
FIXES: dict[str, tuple[Fix, ...]] = {
    **OTHER_FIXES,
    "rollout_init_memory": (
        _LOWER_U,
        _PARAM_OFF,
        _OPT_OFF,
        _TP,
        Fix("trainer.n_gpus_per_node", "num_processes", "raise", "the actor's FSDP shards get smaller"),
    ),
    KV_SHORT: (
        Fix(
            UTILIZATION_KEY,
            "vllm_gpu_memory_utilization",
            "raise, if the device has room beside the actor",
            "the KV cache gets what the weights leave of vLLM's budget",
            needs="vllm",
        ),
        Fix(
            "actor_rollout_ref.rollout.max_model_len",
            "vllm_max_model_length",
            "prompt + response",
            "one sequence of max_model_len tokens must fit in the KV cache; null means the model's whole context",
            needs="vllm",
        ),
        _TP,
    ),
    "weight_sync_oom": (
        _SLEEP,
        _LOWER_U,
        Fix(
            "actor_rollout_ref.rollout.layered_summon",
            None,
            "True (LoRA)",
            "LoRA weights are merged and handed to vLLM one layer at a time, not as one full bf16 copy",
            needs="vllm",
        ),
        _PARAM_OFF,
        Fix(
            "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes",
            None,
            "lower",
            "VERL 0.6 and later send the weights to vLLM in buckets of this size",
            needs="vllm",
        ),
    ),
    "rollout_oom": (
        _LOWER_U,
        Fix(
            "actor_rollout_ref.rollout.max_num_seqs",
            "steps_per_generation",
            "lower",
            "fewer sequences decoded at once (TRL sets vLLM's max_num_seqs to per_device_train_batch_size x "
            "vllm_tensor_parallel_size x steps_per_generation)",
            needs="vllm",
        ),
        Fix(
            "actor_rollout_ref.rollout.max_num_batched_tokens",
            None,
            "lower",
            "fewer tokens per scheduler step",
            needs="vllm",
        ),
        Fix(
            "actor_rollout_ref.rollout.enforce_eager",
            None,
            "True",
            "no CUDA graphs: their memory lies outside vLLM's budget",
            needs="vllm",
        ),
        _PARAM_OFF,
        _RESPONSE,
    ),
    "actor_update_oom": (
        _MICRO,
        _CHECKPOINTING,
        Fix(
            "actor_rollout_ref.actor.ppo_max_token_len_per_gpu",
            None,
            "lower, with actor_rollout_ref.actor.use_dynamic_bsz=True",
            "bounds the tokens of one micro-batch, however long its responses",
        ),
        Fix("actor_rollout_ref.model.use_remove_padding", None, "True", "no memory spent on padding tokens"),
        _SLEEP,
        _OPT_OFF,
    ),
    "cuda_oom": (
        _LOGPROB,
        Fix(
            "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
            "beta=0.0 (no reference model)",
            "lower",
            "so do the reference's; TRL loads a reference model only when beta > 0",
        ),
        _LOWER_U,
        _SLEEP,
    ),
    HOST_KIND: (
        Fix(
            None,
            None,
            "more",
            "every worker holds host memory; the release's expanded-host follow-up (384 GiB per four A100s) "
            "recorded no host kill",
            other="the job's host memory (#SBATCH --mem, the pod's memory limit, or a larger node)",
        ),
        Fix(
            "trainer.n_gpus_per_node",
            "accelerate config: num_processes / num_machines",
            "fewer per node (more nodes)",
            "each worker process holds its own host memory: a model copy at loading, pinned buffers, data",
        ),
        Fix(
            "actor_rollout_ref.rollout.agent.num_workers",
            "dataloader_num_workers",
            "lower",
            "each agent-loop worker (VERL) or loader process (TRL) holds host memory of its own",
        ),
        Fix(
            _PARAM, "accelerate config: offload_param_device: none", "False", "offloaded parameters live in host memory"
        ),
        Fix(_OPT, "accelerate config: offload_optimizer_device: none", "False", "so do offloaded optimizer states"),
        Fix(
            None,
            "accelerate config: zero3_init_flag: true (DeepSpeed) or fsdp_cpu_ram_efficient_loading: true (FSDP)",
            "set",
            "the model is sharded as it loads instead of loaded whole by every process",
        ),
        Fix(
            None,
            None,
            "raise only if the node has room (the default kills at 0.95 of the node's memory)",
            "past it Ray kills the most recent worker; with a higher one the kernel's OOM killer acts instead",
            other="RAY_memory_usage_threshold",
            needs="ray",
        ),
    ),
}
_ZERO3 = (
    Fix(None, f"zero_optimization.stage3_prefetch_bucket_size in {_DS}", "lower (half, then half again)",
        "ZeRO-3 gathers parameters ahead into buckets of this many elements", other="stage3_prefetch_bucket_size",
        needs="deepspeed"),
    Fix(None, f"zero_optimization.stage3_max_live_parameters in {_DS}", "lower",
        "at most this many gathered parameters stay on the device", other="stage3_max_live_parameters",
        needs="deepspeed"),
    Fix(None, f"zero_optimization.stage3_param_persistence_threshold in {_DS}", "lower",
        "parameters smaller than this stay gathered on every device", other="stage3_param_persistence_threshold",
        needs="deepspeed"),
)  # fmt: skip
#: The fixes of an operation inside a phase, offered before the phase's.
OPERATION_FIXES: dict[str, tuple[Fix, ...]] = {
    "ZeRO-3 parameter gather": _ZERO3,
    "vLLM wake-up": (
        Fix(
            UTILIZATION_KEY,
            "vllm_gpu_memory_utilization",
            "lower",
            "waking vLLM allocates its whole reservation again beside what the trainer still holds",
            needs="vllm",
        ),
        _PARAM_OFF,
        Fix(
            "actor_rollout_ref.rollout.layered_summon",
            None,
            "False, unless the LoRA merge needs it",
            "with it VERL puts vLLM to sleep at level 1 and warns that this may overflow memory; it otherwise uses "
            "level 2 on vLLM 0.18 and later (TRL always sleeps at level 2)",
            needs="vllm",
        ),
    ),
    "vLLM sampler warm-up": (
        Fix(
            "actor_rollout_ref.rollout.max_num_seqs",
            "steps_per_generation",
            "lower",
            "vLLM warms its sampler up with max_num_seqs dummy requests at once",
            needs="vllm",
        ),
        _LOWER_U,
    ),
    "backward pass": (_MICRO, _CHECKPOINTING),
    "optimizer step": (
        _OPT_OFF,
        Fix("trainer.n_gpus_per_node", "num_processes", "raise", "the optimizer states are sharded over more devices"),
    ),
    "log-probabilities over the vocabulary": (
        Fix(
            "actor_rollout_ref.model.use_fused_kernels",
            None,
            "True",
            "log-probabilities without materialising the logits of the whole vocabulary",
        ),
    ),
}
#: The fixes of a generation without vLLM (transformers' generate(), as trlX and TRL without vLLM use it).
GENERATE_FIXES = (
    Fix(
        None,
        "ds3_gather_for_generation",
        "False",
        "TRL gathers the whole ZeRO-3 policy on each device to generate; False generates from the shards (slower)",
        needs="deepspeed",
    ),
    _RESPONSE,
    Fix(None, "generation_batch_size", "lower", "generate() holds the KV cache of the whole generation batch"),
)
#: The stacks that run vLLM's settings (VERL generates with vLLM or SGLang).
_ENGINES = ("vllm", "sglang", "verl")


def fixes_for(failure_class: str, operation: str | None, stack: Collection[str]) -> tuple[Fix, ...]:
    """The documented fixes of ``failure_class`` (``operation``'s first) for a log that shows ``stack`` (the stacks
    :func:`~.logs.stack_of` names): none that needs a stack the log shows no sign of, and a generation without vLLM
    gets generate()'s."""
    known = bool(stack)
    engine = any(s in stack for s in _ENGINES) or not known
    chosen = [*OPERATION_FIXES.get(operation or "", ()), *FIXES.get(failure_class, ())]
    if failure_class == "rollout_oom" and not engine:
        chosen = [*GENERATE_FIXES, *chosen]
    out: list[Fix] = []
    for fix in chosen:
        needed = fix.needs is None or not known or fix.needs in stack or (fix.needs == "vllm" and engine)
        if needed and fix.key not in {f.key for f in out}:
            out.append(fix)
    return tuple(out)


#: Settings of the dataset's vocabulary that only the generation engine (vLLM, SGLang) reads.
ENGINE_SETTINGS = (
    "vllm_gpu_memory_utilization",
    "free_cache_engine",
    "max_num_seqs",
    "max_num_batched_tokens",
    "rollout_tp_size",
    "max_model_len",
    "enforce_eager",
    "layered_summon",
)


def applies(setting: str | None, stack: Collection[str], operation: str | None) -> bool:
    """Whether a change of ``setting`` (the dataset's name; None: a documented fix, chosen already) can relieve a
    failure whose log shows ``stack`` and ``operation``: the engine's settings only where the log shows vLLM, SGLang
    or VERL (or no stack at all), and sleep mode not for a failure of waking from it (it is on already)."""
    if setting in ENGINE_SETTINGS and stack and not any(s in stack for s in _ENGINES):
        return False
    return not (setting == "free_cache_engine" and operation == "vLLM wake-up")


DESCRIPTION = {
    "rollout_init_memory": "vLLM could not start beside the resident actor",
    "weight_sync_oom": "the weights handed to vLLM did not fit beside its reservation",
    "rollout_oom": "generation ran out of device memory",
    "actor_update_oom": "the actor update ran out (activations, logits, gradients)",
    "cuda_oom": "a device allocation failed",
    HOST_KIND: "host memory ran out (the release files it as vllm_executor_failure)",
    "distributed_port_collision": "a port was already in use",
    "configuration": "a configuration check failed",
    "environment": "the environment is incomplete",
    "nccl": "an NCCL collective failed",
    "numerical": "the training went numerically wrong (NaN or inf)",
    "cuda_kernel_error": "a CUDA kernel failed (an illegal access or a device-side assert)",
    "disk_full": "a disk is full",
    "shared_memory": "the container's shared memory (/dev/shm) is too small",
    "vllm_memory_profiling": "vLLM's start-up measurement saw device memory freed by another process",
    "time_limit": "the job reached its time limit",
    "crash": "a process crashed",
    "interrupted": "the run was stopped by a signal",
    "worker_lost": "a Ray worker died without a recorded cause",
    "killed": "a process was killed (SIGKILL) without a recorded cause",
    "ray_task_oom": "a Ray task raised OutOfMemoryError without its message",
    "consequence": "a process reported another's failure",
    "runtime": "the run failed for a reason other than memory",
}


def device_of(total_mib: float | None) -> dict[str, Any] | None:
    """The devices whose NVML capacity matches a log's total capacity (PyTorch or vLLM, MiB)."""
    if total_mib is None:
        return None
    from ...memory.devices import devices_of_log_total

    found = devices_of_log_total(total_mib)
    return {
        "log_total_mib": round(total_mib, 1),
        "candidates": [d.name for d in found],
        "capacity_mib": found[0].capacity_mib if found else None,
        "measured": any(d.measured for d in found),
    }
