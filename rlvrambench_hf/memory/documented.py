"""Documented outcomes on devices the release did not measure, as facts in the dataset's vocabulary: the evidence
the band's ``device_not_measured`` part is calibrated on (:mod:`.extrapolation`).

VERL's GRPO-LoRA tuning script for Qwen2.5-7B on one H100 (``examples/tuning/7b/qwen2-7b_grpo-lora_1_h100_fsdp_vllm.sh``
of volcengine/verl at commit 49b08e9, added with ``docs/perf/device_tuning.rst``) records its own batch search in a
comment: ``64√ → 128× → 96√ → 112× → 104× → 100√ → 102× → 101×`` prompts per GPU (``data.train_batch_size`` =
``ppo_mini_batch_size`` = ``ppo_micro_batch_size`` = the log-prob micro-batches, one GPU). Its other settings are
the script's; what it leaves to VERL is read as VERL's defaults of that time (``free_cache_engine`` on, an fp32
actor, no fixed number of steps: one epoch of GSM8K). The device is an 80 GB H100 (81,559 MiB as NVML reports it).
The project's test table (``tests/outcomes/outcomes.yaml``) holds these runs beside others.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SOURCE = "volcengine/verl@49b08e9 examples/tuning/7b/qwen2-7b_grpo-lora_1_h100_fsdp_vllm.sh (batch search comment)"
H100_MIB = 81559
#: The search's batches (prompts per GPU) and whether each ran.
SEARCH: tuple[tuple[int, bool], ...] = (
    (64, True),
    (128, False),
    (96, True),
    (112, False),
    (104, False),
    (100, True),
    (102, False),
    (101, False),
)


def _plan(batch: int) -> dict[str, Any]:
    return {
        "configuration_id": f"verl-tuning-7b-1xh100-{batch}",
        "model_id": "Qwen/Qwen2.5-7B-Instruct",
        "workload_id": "gsm8k",
        "gpu_count": 1,
        "rollout_tp_size": 1,
        "actor_micro_batch": batch,
        "rollout_logprob_micro_batch": batch,
        "ref_logprob_micro_batch": batch,
        "vllm_gpu_memory_utilization": 0.2,
        "parameter_offload": True,
        "optimizer_offload": True,
        "free_cache_engine": True,
        "max_prompt_length": 512,
        "max_response_length": 1024,
        "max_model_len": 1536,
        "max_num_seqs": 512,
        "rollout_n": 5,
        "train_batch_size": batch,
        "total_training_steps": None,
        "device_capacity_mib": H100_MIB,
        "margin_limit_mib": int(H100_MIB * 0.95),
        "lora_rank": 32,
        "layered_summon": True,
        "gradient_checkpointing": True,
        "use_remove_padding": True,
    }


#: The documented runs: (plan, ran, source).
DOCUMENTED: tuple[tuple[Mapping[str, Any], bool, str], ...] = tuple((_plan(b), ran, SOURCE) for b, ran in SEARCH)
