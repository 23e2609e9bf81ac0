"""Physical floors: deterministic checks a plan must pass before any estimate matters (pure, vectorised over plans).

Memory (MiB, from the model metadata; a plan whose model has none gets ``holds`` null for them):

* ``generation_weights``: vLLM's copy of the weights per GPU, floating parameters × 2 bytes (bf16, the rollout
  dtype of the measured stack) / rollout tensor parallelism, must fit vLLM's budget, utilization × device capacity;
* ``actor_shards_at_startup``: without parameter offload, FSDP keeps the actor's fp32 shards, 4 bytes × (parameters +
  adapter) / GPUs, resident while vLLM asks for its budget, so they must fit the capacity left beside the budget;
  with parameter offload only the largest FSDP unit is gathered at a time (4 bytes × its elements);
* ``kv_cache_one_sequence``: vLLM refuses to start when its budget, less its weight shard, cannot hold the KV cache
  of one ``max_model_len`` sequence (the model's context length when ``max_model_len`` is null, as VERL 0.7 and
  later pass it).

Shape, as VERL validates a config before it starts (no metadata needed):

* ``sequence_length``: ``max_model_len`` ≥ ``max_prompt_length`` + ``max_response_length``;
* ``batch_divides_gpus``: ``train_batch_size`` × ``rollout_n`` sequences divisible by the GPUs;
* ``tensor_parallel_divides_gpus``: the GPUs divisible by the rollout tensor-parallel size;
* ``micro_batch_fits_per_gpu_batch``: ``actor_micro_batch`` ≤ the sequences per GPU.

A floor that cannot hold makes the verdict ``memory_failure`` with basis ``floor`` (unless a measurement exists).
Every record the release measured as completing passes every floor (tested).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...estimation.features import METADATA_FIELDS, MIB
from ...memory.architecture import CONTEXT_LENGTHS
from .predict import SettingArrays

#: Bytes per element of vLLM's copy of the weights (bf16).
GENERATION_BYTES = 2
#: Bytes per element of FSDP's actor shards (fp32).
ACTOR_BYTES = 4
FLOORS: tuple[str, ...] = (
    "generation_weights",
    "actor_shards_at_startup",
    "sequence_length",
    "batch_divides_gpus",
    "tensor_parallel_divides_gpus",
    "micro_batch_fits_per_gpu_batch",
    "kv_cache_one_sequence",
)
UNITS = {
    "generation_weights": "MiB",
    "actor_shards_at_startup": "MiB",
    "sequence_length": "tokens",
    "batch_divides_gpus": "sequences",
    "tensor_parallel_divides_gpus": "GPUs",
    "micro_batch_fits_per_gpu_batch": "sequences",
    "kv_cache_one_sequence": "MiB",
}


@dataclass(frozen=True)
class Floors:
    """Per floor: required and available amounts, whether it holds, and where it could be checked."""

    required: dict[str, np.ndarray]
    available: dict[str, np.ndarray]
    holds: dict[str, np.ndarray]
    known: dict[str, np.ndarray]

    def failing(self) -> np.ndarray:
        """Rows where some floor cannot hold."""
        out = np.zeros(len(next(iter(self.holds.values()))), dtype=bool)
        for name in FLOORS:
            out |= self.known[name] & ~self.holds[name]
        return out

    def failed_names(self, row: int) -> list[str]:
        return [n for n in FLOORS if self.known[n][row] and not self.holds[n][row]]

    def entries(self, row: int) -> list[dict[str, Any]]:
        """The floors of plan ``row`` as the answer lists them."""
        return [self.entry(name, row) for name in FLOORS]

    def entry(self, name: str, row: int) -> dict[str, Any]:
        known = bool(self.known[name][row])
        required = float(self.required[name][row]) if known else None
        available = float(self.available[name][row]) if known else None
        in_mib = UNITS[name] == "MiB"
        return {
            "check": name,
            "required_mib": required if in_mib else None,
            "available_mib": available if in_mib else None,
            "required": _number(required),
            "available": _number(available),
            "unit": UNITS[name],
            "holds": bool(self.holds[name][row]) if known else None,
        }


def floors(s: SettingArrays) -> Floors:
    """Every floor of every plan."""
    required, available, holds, known = {}, {}, {}, {}
    m = {f: s.metadata[:, i] for i, f in enumerate(METADATA_FIELDS)}
    p, r = m["floating_checkpoint_elements"], m["all_linear_layer_adapter_elements"]
    g, t, u, c = s["gpu_count"], s["rollout_tp_size"], s["vllm_gpu_memory_utilization"], s["device_capacity_mib"]
    v = s.valid
    budget = u * c
    given = v["rollout_tp_size"] & v["vllm_gpu_memory_utilization"] & v["device_capacity_mib"] & (t > 0)
    known["generation_weights"] = given & s.has_metadata
    required["generation_weights"] = GENERATION_BYTES * p / np.where(t > 0, t, 1) / MIB
    available["generation_weights"] = budget
    offload = v["parameter_offload"] & (s["parameter_offload"] > 0)
    unit = np.maximum.reduce(
        [
            m["largest_transformer_layer_elements"],
            m["non_transformer_layer_elements"],
            m["largest_weight_tensor_elements"],
        ]
    )
    gpus = np.where(g > 0, g, 1)
    known["actor_shards_at_startup"] = (
        v["gpu_count"]
        & (g > 0)
        & v["vllm_gpu_memory_utilization"]
        & v["device_capacity_mib"]
        & v["parameter_offload"]
        & s.has_metadata
    )
    required["actor_shards_at_startup"] = np.where(offload, ACTOR_BYTES * unit, ACTOR_BYTES * (p + r) / gpus) / MIB
    available["actor_shards_at_startup"] = c - budget
    known["sequence_length"] = v["max_model_len"] & v["max_prompt_length"] & v["max_response_length"]
    required["sequence_length"] = s["max_prompt_length"] + s["max_response_length"]
    available["sequence_length"] = s["max_model_len"]
    sequences = s["train_batch_size"] * s["rollout_n"]
    known["batch_divides_gpus"] = v["train_batch_size"] & v["rollout_n"] & v["gpu_count"] & (g > 0)
    required["batch_divides_gpus"] = sequences
    available["batch_divides_gpus"] = g
    holds["batch_divides_gpus"] = np.fmod(sequences, gpus) == 0
    known["tensor_parallel_divides_gpus"] = v["gpu_count"] & v["rollout_tp_size"] & (t > 0)
    required["tensor_parallel_divides_gpus"] = t
    available["tensor_parallel_divides_gpus"] = g
    holds["tensor_parallel_divides_gpus"] = np.fmod(g, np.where(t > 0, t, 1)) == 0
    known["micro_batch_fits_per_gpu_batch"] = known["batch_divides_gpus"] & v["actor_micro_batch"]
    required["micro_batch_fits_per_gpu_batch"] = s["actor_micro_batch"]
    available["micro_batch_fits_per_gpu_batch"] = sequences / gpus
    for name in ("generation_weights", "actor_shards_at_startup", "sequence_length", "micro_batch_fits_per_gpu_batch"):
        holds[name] = required[name] <= available[name]
    kv = "kv_cache_one_sequence"
    required[kv], available[kv], known[kv] = _kv_floor(s)
    holds[kv] = required[kv] <= available[kv]
    for name in FLOORS:
        holds[name] = np.where(known[name], holds[name], True)
    return Floors(required, available, holds, known)


def _kv_floor(s: SettingArrays) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(required, available, known) of the KV-cache floor: vLLM refuses to start when its budget, less its weight
    shard, cannot hold one ``max_model_len`` sequence (null ``max_model_len``: the model's context length, as VERL
    0.7 and later pass it to vLLM)."""
    arch = s.architecture
    v = s.valid
    length = np.where(v["max_model_len"], s["max_model_len"], arch.context)
    t = np.where(s["rollout_tp_size"] > 0, s["rollout_tp_size"], 1.0)
    required = arch.kv_bytes_per_token() / t * length / MIB
    available = s["vllm_gpu_memory_utilization"] * s["device_capacity_mib"] - GENERATION_BYTES * arch.p / t / MIB
    known = (
        np.isfinite(required)
        & np.isfinite(available)
        & v["vllm_gpu_memory_utilization"]
        & v["device_capacity_mib"]
        & v["rollout_tp_size"]
    )
    return np.nan_to_num(required), np.nan_to_num(available), known


def arithmetic(entry: dict[str, Any], settings: dict[str, Any], metadata: dict[str, Any] | None) -> str:
    """The floor's arithmetic in words, for one plan (``settings``: its values; ``metadata``: its model's)."""
    name, ok = entry["check"], entry["holds"]
    if ok is None:
        return "not checked: " + (
            "no model metadata"
            if name in ("generation_weights", "actor_shards_at_startup", "kv_cache_one_sequence")
            else "a setting it needs is not given"
        )
    sign = "<=" if ok else ">"
    req, avail = entry["required"], entry["available"]
    s = settings
    if name == "generation_weights" and metadata:
        return (
            f"{GENERATION_BYTES} B x {metadata['floating_checkpoint_elements']:,} parameters / TP "
            f"{s['rollout_tp_size']} = {req:,.0f} MiB {sign} {s['vllm_gpu_memory_utilization']} x "
            f"{s['device_capacity_mib']:,} MiB = {avail:,.0f} MiB (vLLM's budget)"
        )
    if name == "actor_shards_at_startup" and metadata:
        left = f"{s['device_capacity_mib']:,} - {s['vllm_gpu_memory_utilization']} x {s['device_capacity_mib']:,}"
        if s["parameter_offload"]:
            return (
                f"parameters offloaded: largest FSDP unit {ACTOR_BYTES} B x "
                f"{_unit(metadata):,} = {req:,.0f} MiB {sign} {left} = {avail:,.0f} MiB"
            )
        return (
            f"{ACTOR_BYTES} B x ({metadata['floating_checkpoint_elements']:,} + "
            f"{metadata['all_linear_layer_adapter_elements']:,}) / {s['gpu_count']} GPUs = {req:,.0f} MiB "
            f"{sign} {left} = {avail:,.0f} MiB beside vLLM's budget"
        )
    if name == "kv_cache_one_sequence" and metadata:
        length = s.get("max_model_len")
        given = f"max_model_len {length:,}" if length else "max_model_len not set: the model's context"
        tokens = length or metadata.get("max_position_embeddings") or CONTEXT_LENGTHS.get(str(s.get("model_id")))
        tp = max(int(s["rollout_tp_size"]), 1)
        per_token = 2 * metadata["num_hidden_layers"] * metadata["num_key_value_heads"] * metadata["head_dim"] * 2 // tp
        return (
            f"KV cache of one sequence: 2 (K, V) x {metadata['num_hidden_layers']} layers x "
            f"{metadata['num_key_value_heads']} KV heads x {metadata['head_dim']} x 2 B / TP {s['rollout_tp_size']} "
            f"= {per_token:,} B per token x {tokens:,} tokens ({given}) = {req:,.0f} MiB {sign} "
            f"{s['vllm_gpu_memory_utilization']} x {s['device_capacity_mib']:,} MiB - 2 B x "
            f"{metadata['floating_checkpoint_elements']:,} / TP {s['rollout_tp_size']} = {avail:,.0f} MiB "
            "(vLLM's budget less its weights)"
        )
    if name == "sequence_length":
        return (
            f"max_prompt_length {s['max_prompt_length']} + max_response_length {s['max_response_length']} = "
            f"{req:.0f} tokens {sign} max_model_len {s['max_model_len']}"
        )
    if name == "batch_divides_gpus":
        rest = int(req) % int(avail)
        return (
            f"train_batch_size {s['train_batch_size']} x rollout_n {s['rollout_n']} = {req:.0f} sequences over "
            f"{avail:.0f} GPUs " + ("divide evenly" if ok else f"leave {rest}")
        )
    if name == "tensor_parallel_divides_gpus":
        return f"{avail:.0f} GPUs " + ("are" if ok else "are not") + f" a multiple of rollout_tp_size {req:.0f}"
    return f"actor_micro_batch {req:.0f} {sign} {avail:g} sequences per GPU"


def _unit(metadata: dict[str, Any]) -> int:
    return max(int(metadata[k]) for k in METADATA_FIELDS[2:5])


def _number(value: float | None) -> float | int | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() else value
