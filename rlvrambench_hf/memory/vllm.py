"""vLLM's memory on one GPU while the weights are synced (pure numpy over plans): with ``free_cache_engine`` it
slept after generating and is woken for its bf16 weights ``2P/T`` alone; without it, it never released its
reservation ``u × C`` (the weights are inside it)."""

from __future__ import annotations

import numpy as np

from .architecture import Architecture
from .inputs import PlanInputs

MIB = 2.0**20


def vllm_kept(x: PlanInputs) -> np.ndarray:
    """The reservation vLLM keeps outside generation, MiB: ``u × C`` when it never sleeps, else 0."""
    return np.where(x["free_cache_engine"] > 0, 0.0, x["vllm_gpu_memory_utilization"] * x["device_capacity_mib"])


def vllm_woken_weights(x: PlanInputs, arch: Architecture) -> np.ndarray:
    """vLLM's bf16 weights woken for the sync, MiB: ``2P/T`` when it slept, else 0 (inside its kept reservation)."""
    t = np.where(x["rollout_tp_size"] > 0, x["rollout_tp_size"], 1.0)
    return np.where(x["free_cache_engine"] > 0, 2.0 * arch.p / t / MIB, 0.0)
