"""The words of a diagnosis (pure): what a failure is, its reason with the message's own figures, where to look when
the log does not establish a cause, and the fixes whose values the log's own figures give."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .fixes import DESCRIPTION, UTILIZATION_KEY
from .logs import Signal

#: What each family's failure is, as the answer names it.
WHAT = {
    "port_collision": "a port was already in use",
    "nccl_timeout": "an NCCL collective timed out",
    "nccl_error": "an NCCL error",
    "illegal_memory_access": "a CUDA kernel fault (an illegal memory access or a device-side assert)",
    "numerical": "NaN or inf in the training",
    "configuration": "a configuration check failed",
    "environment": "a package, a driver or access to a model is missing",
    "disk_full": "a disk is full",
    "shared_memory": "/dev/shm (shared memory) is too small",
    "vllm_profiling": "vLLM's start-up profiling saw memory freed by another process",
    "time_limit": "the job reached its time limit",
    "segfault": "a process crashed (segmentation fault)",
    "interrupted": "the run was interrupted or terminated",
    "exception": "a Python exception",
    "ray_worker_lost": "a Ray worker died",
    "killed": "a process was killed (SIGKILL, exit 137)",
    "consequence": "a process reported another's failure",
    "ray_task_oom": "an OutOfMemoryError was raised in a Ray task",
}
#: Where to look when the log does not establish the cause.
LOOK_AT = {
    "ray_worker_lost": "the host's OOM killer is a common cause: look at dmesg on the node and Ray's raylet log",
    "killed": "the host's OOM killer or the scheduler is a common cause: look at dmesg on the node and the "
    "scheduler's record of the job (its state and peak memory)",
    "consequence": "look at the first error above it, or at the log of the process that failed",
    "ray_task_oom": "PyTorch's device OOM and Ray's host-memory kill share this name: look at the task's own log for "
    "'CUDA out of memory' (device) or 'running low on memory' (host)",
}


def _mib(value: float | None) -> str:
    return "?" if value is None else f"{value:,.0f} MiB"


def reason_of(signal: Signal, failure_class: str) -> str:
    """The reason in words, with the message's own figures."""
    said = _REASONS.get(signal.family)
    return (
        said and said(signal, failure_class)
    ) or f"{DESCRIPTION[failure_class]} ({signal.source}: {signal.excerpt[:120]})"


def _torch(signal: Signal, failure_class: str) -> str | None:
    n = signal.number
    if n("tried_to_allocate") is None:
        return None
    held = n("process_in_use") or n("reserved_by_pytorch") or n("allocated_by_pytorch")
    return (
        f"{DESCRIPTION[failure_class]}: PyTorch could not allocate {_mib(n('tried_to_allocate'))} with "
        f"{_mib(n('free'))} free of {_mib(n('total_capacity'))}; this process held {_mib(held)}"
    )


def _vllm_free(signal: Signal, failure_class: str) -> str:
    n = signal.number
    return (
        f"vLLM's start-up check: {_mib(n('free_at_startup'))} free of {_mib(n('total_capacity'))}, less than the "
        f"{_mib(n('vllm_budget'))} that utilization {n('gpu_memory_utilization')} asks for"
    )


def _vllm_kv(signal: Signal, failure_class: str) -> str:
    n = signal.number
    fit = n("estimated_max_model_len") or n("kv_cache_tokens")
    length = n("max_model_len") or 0
    return f"vLLM's KV cache cannot hold one max_model_len sequence of {length:,.0f} tokens" + (
        f" (about {fit:,.0f} fit)" if fit else ""
    )


def _warmup(signal: Signal, failure_class: str) -> str:
    count = signal.number("dummy_requests")
    return "vLLM ran out warming its sampler up" + (f" with {count:,.0f} dummy requests" if count else "")


def _ray_task(signal: Signal, failure_class: str) -> str:
    task = re.search(r"ray::([\w.]+)", signal.excerpt)
    name = task.group(1) if task else "a Ray task"
    return f"{name} raised OutOfMemoryError (PyTorch's device OOM; its message is not in the log)"


def _kernel(signal: Signal, failure_class: str) -> str | None:
    n = signal.number
    if n("anon_rss") is not None:
        return f"the kernel's OOM killer killed a process holding {_mib(n('anon_rss'))} of host memory (anon-rss)"
    if n("host_limit") is not None:
        return f"the scheduler killed the job: {_mib(n('host_used'))} of host memory over its {_mib(n('host_limit'))}"
    return None


def _ray_host(signal: Signal, failure_class: str) -> str | None:
    n = signal.number
    if n("host_total") is not None:
        return (
            f"Ray killed a worker: host memory {_mib(n('host_used'))} of {_mib(n('host_total'))} used "
            f"(threshold {n('ray_memory_threshold')})"
        )
    if n("workers_killed") is not None:
        return f"Ray's raylet killed {n('workers_killed'):,.0f} worker(s) for memory pressure (host memory)"
    return None


def _host_alloc(signal: Signal, failure_class: str) -> str | None:
    tried = signal.number("host_tried_to_allocate")
    return None if tried is None else f"the host could not allocate {_mib(tried)} ({signal.excerpt[:100]})"


_REASONS: dict[str, Callable[[Signal, str], str | None]] = {
    "torch_oom": _torch,
    "vllm_free_memory": _vllm_free,
    "vllm_kv_cache": _vllm_kv,
    "vllm_no_cache_blocks": lambda s, c: (
        "vLLM's budget left no memory for KV-cache blocks after the weights and activations"
    ),
    "vllm_cumem_oom": lambda s, c: (
        "vLLM's sleep-mode allocator could not map its memory back when it woke up (out of memory)"
    ),
    "vllm_sampler_warmup": _warmup,
    "ray_task_oom": _ray_task,
    "kernel_oom": _kernel,
    "ray_host_oom": _ray_host,
    "host_alloc": _host_alloc,
}


def log_fixes(signal: Signal) -> list[dict[str, Any]]:
    """Fixes whose value the log's own figures give."""
    n = signal.number
    if signal.family == "vllm_free_memory" and n("free_at_startup") and n("total_capacity"):
        share = n("free_at_startup") / n("total_capacity")  # type: ignore[operator]
        value = int(share * 20) / 20
        value = round(value - 0.05 if value >= share else value, 2)
        if value > 0:
            return [
                {
                    "key": UTILIZATION_KEY,
                    "trl": "vllm_gpu_memory_utilization",
                    "verl": UTILIZATION_KEY,
                    "change": f"{value}",
                    "basis": "log",
                    "setting": "vllm_gpu_memory_utilization",
                    "why": f"below the {share:.3f} of the device that was free at start-up",
                }
            ]
    if signal.family == "vllm_kv_cache":
        fit = n("estimated_max_model_len") or n("kv_cache_tokens")
        if fit:
            return [
                {
                    "key": "actor_rollout_ref.rollout.max_model_len",
                    "trl": "vllm_max_model_length",
                    "verl": "actor_rollout_ref.rollout.max_model_len",
                    "change": f"{int(fit)}",
                    "basis": "log",
                    "setting": "max_model_len",
                    "why": "at most the tokens the KV cache holds; prompt + response must still fit",
                }
            ]
    return []
