"""Documented outcomes on devices the release did not measure, as facts in the dataset's vocabulary: the evidence
the band's ``device_not_measured`` part is calibrated on (:mod:`.extrapolation`). Where a source leaves a setting
unsaid, the outcome is expanded over every filling listed (``fillings``): VERL's default of the version the
source ran where VERL has one, a range where VERL makes the user choose, every device the reported total fits.

* VERL's GRPO-LoRA tuning script for Qwen2.5-7B on one H100 (``examples/tuning/7b/qwen2-7b_grpo-lora_1_h100_fsdp_
  vllm.sh`` of volcengine/verl at commit 49b08e9, added with ``docs/perf/device_tuning.rst``) records its batch
  search in a comment: ``64√ → 128× → 96√ → 112× → 104× → 100√ → 102× → 101×`` prompts per GPU
  (``data.train_batch_size`` = the mini-, micro- and log-prob micro-batches on one GPU). Unsaid: ``free_cache_
  engine`` (VERL's default then: on), the actor's dtype (fp32), the number of steps (one epoch of GSM8K).
* verl-project/verl issue #3366 (2025-09-05): GRPO with LoRA on Qwen2.5-Coder-7B (Qwen2.5-7B's architecture) on
  two GPUs of 79.14 GiB (an 80 GB H100 or A100), out of memory. Said: 16 prompts, 1,024 + 1,024 tokens, 6 responses
  each, parameter offload, gradient checkpointing, log-prob micro-batches of 8, no layered summon. Unsaid and filled
  with VERL 0.5.0's defaults (``verl/trainer/config/rollout/rollout.yaml``, ``actor/dp_actor.yaml``): utilization
  0.5, rollout TP 2, optimizer offload off, ``free_cache_engine`` on, ``max_num_seqs`` 1024, ``max_model_len``
  prompt + response; the actor micro-batch and the LoRA rank (VERL has no default) range over the fillings.

The project's test table (``tests/outcomes/outcomes.yaml``) holds these runs beside others, read from launch files.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

H100_MIB, A100_80_MIB = 81559, 81920
TUNING_SOURCE = "volcengine/verl@49b08e9 examples/tuning/7b/qwen2-7b_grpo-lora_1_h100_fsdp_vllm.sh (batch search)"
ISSUE_SOURCE = "https://github.com/verl-project/verl/issues/3366"


@dataclass(frozen=True)
class Documented:
    """A run whose outcome on a named device is public: its settings, whether it ran, its source and the values
    each unsaid setting is filled with (every combination is a plan)."""

    name: str
    plan: Mapping[str, Any]
    ran: bool
    source: str
    fillings: Mapping[str, Sequence[Any]] = field(default_factory=dict)

    def plans(self) -> Iterator[dict[str, Any]]:
        """The plan under every filling of its unsaid settings (the margin follows the capacity)."""
        names = list(self.fillings)
        for values in itertools.product(*(self.fillings[n] for n in names)):
            plan = {**self.plan, **dict(zip(names, values))}
            plan["margin_limit_mib"] = int(plan["device_capacity_mib"] * 0.95)
            yield plan


def _tuning(batch: int) -> dict[str, Any]:
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
        "lora_rank": 32,
        "layered_summon": True,
        "gradient_checkpointing": True,
    }


ISSUE_3366 = {
    "configuration_id": "verl-issue-3366",
    "model_id": "Qwen/Qwen2.5-7B-Instruct",  # Qwen2.5-Coder-7B-Instruct has the same config.json sizes
    "workload_id": None,
    "gpu_count": 2,
    "rollout_tp_size": 2,
    "rollout_logprob_micro_batch": 8,
    "ref_logprob_micro_batch": 8,
    "vllm_gpu_memory_utilization": 0.5,
    "parameter_offload": True,
    "optimizer_offload": False,
    "free_cache_engine": True,
    "max_prompt_length": 1024,
    "max_response_length": 1024,
    "max_model_len": 2048,
    "max_num_seqs": 1024,
    "rollout_n": 6,
    "train_batch_size": 16,
    "total_training_steps": None,
    "layered_summon": False,
    "gradient_checkpointing": True,
}
#: The unsaid settings of issue #3366 that VERL makes the user choose, and the device (79.14 GiB total).
ISSUE_3366_FILLINGS: Mapping[str, Sequence[Any]] = {
    "actor_micro_batch": (1, 2, 4, 8, 16),
    "lora_rank": (8, 16, 32, 64, 128),
    "device_capacity_mib": (H100_MIB, A100_80_MIB),
}
#: The tuning search's batches (prompts per GPU) and whether each ran.
SEARCH: tuple[tuple[int, bool], ...] = ((64, True), (128, False), (96, True), (112, False), (104, False),
                                        (100, True), (102, False), (101, False))  # fmt: skip
DOCUMENTED: tuple[Documented, ...] = (
    *(Documented(f"tuning-7b-1xh100-{b}", _tuning(b), ran, TUNING_SOURCE, {}) for b, ran in SEARCH),
    Documented("verl-issue-3366", ISSUE_3366, False, ISSUE_SOURCE, ISSUE_3366_FILLINGS),
)
