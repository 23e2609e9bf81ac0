"""The eight numeric features of the estimator comparison (amended order), model families and the startup check.

Pure functions over settings (mappings with the columns of ``configurations.csv``) and model metadata (mappings
with the fields of ``model_metadata.json``). Units are GiB (2^30 bytes); see ``docs/estimation.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputError, summary

GIB = 2**30
MIB = 2**20
#: Feature names in the amended order (amendment-01 replaces the original eighth feature).
FEATURE_NAMES: tuple[str, ...] = (
    "actor_shards_gib",
    "adapter_optimizer_gib",
    "generation_budget_gib",
    "generation_replica_gib",
    "largest_unit_proxy_gib",
    "checkpoint_boundary_volume_gib",
    "vocabulary_output_volume_gib",
    "resident_actor_shards_gib",
)
#: The settings the features, the donor rule and the startup check read.
FEATURE_SETTINGS: tuple[str, ...] = (
    "gpu_count",
    "rollout_tp_size",
    "actor_micro_batch",
    "rollout_logprob_micro_batch",
    "ref_logprob_micro_batch",
    "vllm_gpu_memory_utilization",
    "parameter_offload",
    "optimizer_offload",
    "max_prompt_length",
    "max_response_length",
    "max_model_len",
    "rollout_n",
    "train_batch_size",
    "device_capacity_mib",
    "margin_limit_mib",
)
#: The model metadata the features read.
METADATA_FIELDS: tuple[str, ...] = (
    "floating_checkpoint_elements",
    "all_linear_layer_adapter_elements",
    "largest_transformer_layer_elements",
    "non_transformer_layer_elements",
    "largest_weight_tensor_elements",
    "num_hidden_layers",
    "hidden_size",
    "vocab_size",
)
#: The coarse model family of each measured model (Qwen2.5-3B and -7B are one family).
FAMILIES: dict[str, str] = {
    "Qwen/Qwen2.5-3B-Instruct": "qwen25",
    "Qwen/Qwen2.5-7B-Instruct": "qwen25",
    "microsoft/Phi-4-mini-instruct": "phi4",
    "ibm-granite/granite-3.3-2b-instruct": "granite33",
}
STARTUP_ASSUMPTION = "FP32 actor shards resident before vLLM requested-budget free-memory check"
STARTUP_NOT_APPLICABLE = "resident-actor assumption does not apply"


def coarse_family(model_id: str) -> str | None:
    """The coarse family of a model (None for a model outside the measured families)."""
    return FAMILIES.get(model_id)


def apply_amendment(protocol: Mapping[str, Any], amendment: Mapping[str, Any]) -> dict[str, Any]:
    """The effective protocol: the amendment's ``updates`` replace the matching protocol keys."""
    updates = amendment.get("updates")
    if not isinstance(updates, Mapping):
        raise InputError("amendment has no 'updates' object")
    return {**protocol, **updates}


def feature_vector(settings: Mapping[str, Any], metadata: Mapping[str, Any]) -> list[float]:
    """The eight features (GiB, amended order) of one configuration; a one-line error names a bad setting."""
    what = settings.get("configuration_id") or "configuration"
    g, t = _int(settings, "gpu_count"), _int(settings, "rollout_tp_size")
    if g <= 0 or t <= 0 or g % t:
        raise InputError(f"{what}: need gpu_count > 0, rollout_tp_size > 0 and gpu_count divisible by it")
    u = float(settings["vllm_gpu_memory_utilization"])
    if not 0 < u < 1:
        raise InputError(f"{what}: vllm_gpu_memory_utilization must be between 0 and 1 (exclusive), got {u}")
    capacity_bytes = _int(settings, "device_capacity_mib") * MIB
    length = min(
        _int(settings, "max_model_len"), _int(settings, "max_prompt_length") + _int(settings, "max_response_length")
    )
    sequences = _int(settings, "train_batch_size") * _int(settings, "rollout_n")
    if length <= 0 or sequences % g:
        raise InputError(f"{what}: need a positive sequence length and train_batch_size*rollout_n divisible by GPUs")
    per_rank = sequences // g
    tok_actor = min(_int(settings, "actor_micro_batch"), per_rank) * length
    score_micro = max(_int(settings, "rollout_logprob_micro_batch"), _int(settings, "ref_logprob_micro_batch"))
    tok_score = min(score_micro, per_rank) * length
    p, r = (_int(metadata, k) for k in ("floating_checkpoint_elements", "all_linear_layer_adapter_elements"))
    unit = max(
        _int(metadata, "largest_transformer_layer_elements"),
        _int(metadata, "non_transformer_layer_elements"),
        _int(metadata, "largest_weight_tensor_elements"),
    )
    layers, hidden, vocab = (_int(metadata, k) for k in ("num_hidden_layers", "hidden_size", "vocab_size"))
    actor = 4 * (p + r) / g / GIB
    values = [
        actor,
        0.0 if settings["optimizer_offload"] else 8 * r / g / GIB,
        u * capacity_bytes / GIB,
        2 * (p + r) / t / GIB,
        4 * unit / GIB,
        2 * tok_actor * (layers + 1) * hidden / GIB,
        2 * max(tok_actor, tok_score) * vocab / GIB,
        0.0 if settings["parameter_offload"] else actor,
    ]
    if not all(math.isfinite(v) and v >= 0 for v in values):
        raise InputError(f"{what}: a feature is negative or not finite: {summary(values, shown=8)}")
    return values


def feature_matrix(rows: Sequence[Mapping[str, Any]], metadata: Mapping[str, Mapping[str, Any]]) -> np.ndarray:
    """Features of ``rows`` (n × 8, float64); ``metadata`` maps each ``model_id`` to its counts."""
    missing = sorted({r["model_id"] for r in rows} - set(metadata))
    if missing:
        raise InputError(f"no model metadata for {summary(missing)}")
    return np.array([feature_vector(r, metadata[r["model_id"]]) for r in rows], dtype=np.float64).reshape(
        len(rows), len(FEATURE_NAMES)
    )


def startup_diagnostic(settings: Mapping[str, Any], features: Sequence[float]) -> dict[str, Any]:
    """The one-sided resident-actor startup check: actor shards plus the vLLM budget above the capacity."""
    if settings["parameter_offload"]:
        return {
            "applicable": False,
            "budget_plus_actor_mib": None,
            "predicted_startup_budget_failure": None,
            "reason": STARTUP_NOT_APPLICABLE,
        }
    budget = (features[0] + features[2]) * 1024
    return {
        "applicable": True,
        "budget_plus_actor_mib": budget,
        "predicted_startup_budget_failure": bool(budget > settings["device_capacity_mib"]),
        "assumption": STARTUP_ASSUMPTION,
    }


def _int(row: Mapping[str, Any], key: str) -> int:
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{row.get('configuration_id') or row.get('model_id') or 'row'}: {key} must be an integer")
    return int(value)
