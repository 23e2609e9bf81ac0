"""What fixes each failure class, as the frameworks document it (VERL's performance-tuning guide, vLLM's and TRL's
docs): VERL keys with their TRL counterparts; and the devices a log's total capacity names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The release's failure kind for host memory (the larger-model panel's).
HOST_KIND = "vllm_executor_failure"
#: The fixes of a KV cache too small for one sequence (a kind of rollout_init_memory).
KV_SHORT = "rollout_init_memory/kv_cache"


@dataclass(frozen=True)
class Fix:
    """A fix: the VERL ``key`` and the TRL ``trl`` argument (None: no counterpart), the ``change`` and ``why``."""

    key: str
    trl: str | None
    change: str
    why: str

    def as_dict(self, basis: str = "docs") -> dict[str, Any]:
        return {"key": self.key, "trl": self.trl, "change": self.change, "why": self.why, "basis": basis}


UTILIZATION_KEY = "actor_rollout_ref.rollout.gpu_memory_utilization"
_PARAM = "actor_rollout_ref.actor.fsdp_config.param_offload"
_OPT = "actor_rollout_ref.actor.fsdp_config.optimizer_offload"
_LOWER_U = Fix(UTILIZATION_KEY, "vllm_gpu_memory_utilization", "lower", "vLLM takes this share of the whole device")
#: The fixes of each class in the frameworks' documentation (VERL's performance-tuning guide, vLLM's, TRL's).
FIXES: dict[str, tuple[Fix, ...]] = {
    "rollout_init_memory": (
        _LOWER_U,
        Fix(_PARAM, None, "True", "the actor's parameters leave the device before vLLM starts"),
        Fix(_OPT, None, "True", "so do its optimizer states"),
        Fix(
            "actor_rollout_ref.rollout.tensor_model_parallel_size",
            "vllm_tensor_parallel_size",
            "raise",
            "vLLM's weights are split over more devices",
        ),
        Fix("trainer.n_gpus_per_node", "num_processes", "raise", "the actor's FSDP shards get smaller"),
    ),
    # vLLM started but its budget left too little KV cache: the cache gets what the weights leave of the budget
    KV_SHORT: (
        Fix(
            UTILIZATION_KEY,
            "vllm_gpu_memory_utilization",
            "raise, if the device has room beside the actor",
            "the KV cache gets what the weights leave of vLLM's budget",
        ),
        Fix(
            "actor_rollout_ref.rollout.max_model_len",
            "vllm_max_model_length",
            "prompt + response",
            "one sequence of max_model_len tokens must fit in the KV cache; null means the model's whole context",
        ),
        Fix(
            "actor_rollout_ref.rollout.tensor_model_parallel_size",
            "vllm_tensor_parallel_size",
            "raise",
            "each device holds a smaller share of the weights, leaving more for the cache",
        ),
    ),
    "weight_sync_oom": (
        Fix(
            "actor_rollout_ref.rollout.layered_summon",
            None,
            "True",
            "LoRA weights are merged and handed to vLLM one layer at a time, not as one full bf16 copy",
        ),
        _LOWER_U,
        Fix(
            "actor_rollout_ref.rollout.free_cache_engine",
            "vllm_enable_sleep_mode",
            "True",
            "vLLM releases its KV cache while the weights move",
        ),
        Fix(_PARAM, None, "True", "the actor's parameters stay on the host"),
    ),
    "rollout_oom": (
        _LOWER_U,
        Fix("actor_rollout_ref.rollout.max_num_seqs", None, "lower", "fewer sequences decoded at once"),
        Fix("actor_rollout_ref.rollout.max_num_batched_tokens", None, "lower", "fewer tokens per scheduler step"),
        Fix(
            "actor_rollout_ref.rollout.enforce_eager",
            "vllm_enforce_eager",
            "True",
            "no CUDA graphs: their memory lies outside vLLM's budget",
        ),
        Fix(_PARAM, None, "True", "the resident actor leaves the device during generation"),
    ),
    "actor_update_oom": (
        Fix(
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
            "per_device_train_batch_size",
            "lower",
            "activations and logits grow with the micro-batch",
        ),
        Fix(
            "actor_rollout_ref.model.enable_gradient_checkpointing",
            "gradient_checkpointing",
            "True",
            "activations are recomputed instead of kept",
        ),
        Fix("actor_rollout_ref.model.use_remove_padding", None, "True", "no memory spent on padding tokens"),
        Fix(
            "actor_rollout_ref.rollout.free_cache_engine",
            "vllm_enable_sleep_mode",
            "True",
            "vLLM's KV cache is released while the actor trains",
        ),
        Fix(_OPT, None, "True", "the optimizer states stay on the host"),
    ),
    "cuda_oom": (
        Fix(
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
            "per_device_train_batch_size",
            "lower",
            "log-probability logits grow with tokens x vocabulary",
        ),
        Fix(
            "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
            "per_device_train_batch_size",
            "lower",
            "so do the reference's",
        ),
        _LOWER_U,
        Fix(
            "actor_rollout_ref.rollout.free_cache_engine",
            "vllm_enable_sleep_mode",
            "True",
            "vLLM's KV cache is released outside generation",
        ),
    ),
    HOST_KIND: (
        Fix(
            "trainer.n_gpus_per_node",
            "num_processes",
            "lower per node, or ask the scheduler for more host memory",
            "every worker holds host memory; the release's expanded-host follow-up (384 GiB per four A100s) "
            "recorded no host kill",
        ),
        Fix(_PARAM, None, "False", "offloaded parameters live in host memory"),
        Fix(_OPT, None, "False", "offloaded optimizer states live in host memory"),
        Fix("data.dataloader_num_workers", "dataloader_num_workers", "lower", "each loader process holds data"),
    ),
    "distributed_port_collision": (
        Fix(
            "MASTER_PORT / ray start --port / VLLM_PORT",
            None,
            "a free port per concurrent job",
            "another process on the node holds the port",
        ),
    ),
    "nccl": (
        Fix(
            "actor_rollout_ref.nccl_timeout",
            None,
            "raise only if a collective is slow, not stuck",
            "a timeout usually follows a failure on another rank: find that rank's first error (NCCL_DEBUG=INFO)",
        ),
    ),
    "configuration": (
        Fix(
            "the keys the message names",
            None,
            "consistent values",
            "VERL validates batch sizes before any memory is used: train_batch_size x rollout.n divisible by the "
            "GPUs, mini-batches by micro-batches",
        ),
    ),
    "environment": (Fix("the environment", None, "install what is missing", "a package or driver is missing"),),
    "runtime": (Fix("the log", None, "read the first error", "the log names no memory failure"),),
}
DESCRIPTION = {
    "rollout_init_memory": "vLLM could not start beside the resident actor",
    "weight_sync_oom": "the weights handed to vLLM did not fit beside its reservation",
    "rollout_oom": "generation ran out beside vLLM's reservation",
    "actor_update_oom": "the actor update ran out (activations, logits, gradients)",
    "cuda_oom": "a device allocation failed",
    HOST_KIND: "host memory ran out (the release files it as vllm_executor_failure)",
    "distributed_port_collision": "a port was already in use",
    "configuration": "a configuration check failed",
    "environment": "the environment is incomplete",
    "nccl": "an NCCL collective failed",
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
