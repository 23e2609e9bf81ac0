"""Model sizes per plan, from the model metadata the advisor already has (``model_metadata.json`` for the
release's models, config.json and safetensors headers for a model read from the Hub).

Everything is a float64 column aligned with the plans (NaN where the model has no metadata).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, cast

import numpy as np

#: Context length (config.json ``max_position_embeddings``) of the models the release measured or names; a model
#: read from the Hub brings its own when its metadata has the field.
CONTEXT_LENGTHS: dict[str, int] = {
    "Qwen/Qwen2.5-1.5B-Instruct": 32768,
    "Qwen/Qwen2.5-3B-Instruct": 32768,
    "Qwen/Qwen2.5-7B-Instruct": 32768,
    "ibm-granite/granite-3.3-2b-instruct": 131072,
    "microsoft/Phi-4-mini-instruct": 131072,
}
FIELDS: tuple[str, ...] = (
    "floating_checkpoint_elements",
    "all_linear_layer_adapter_elements",
    "largest_transformer_layer_elements",
    "non_transformer_layer_elements",
    "largest_weight_tensor_elements",
    "num_hidden_layers",
    "hidden_size",
    "vocab_size",
    "num_key_value_heads",
    "head_dim",
    "lora_rank",
)


@dataclass(frozen=True)
class Architecture:
    """Per plan: parameters ``p``, rank-64 all-linear adapter ``adapter64`` (elements), largest FSDP unit
    ``unit``, layers ``layers``, hidden size ``hidden``, vocabulary ``vocab``, KV heads × head size ``kv_width``,
    context length ``context`` (NaN: unknown) and whether the metadata is there (``known``)."""

    p: np.ndarray
    adapter64: np.ndarray
    unit: np.ndarray
    layers: np.ndarray
    hidden: np.ndarray
    vocab: np.ndarray
    kv_width: np.ndarray
    context: np.ndarray
    known: np.ndarray

    def adapter(self, rank: np.ndarray) -> np.ndarray:
        """Adapter elements at LoRA ``rank`` (all linear layers; linear in the rank)."""
        return cast("np.ndarray", self.adapter64 * rank / 64.0)

    def take(self, index: np.ndarray) -> Architecture:
        """The sizes of the plans at ``index``."""
        return Architecture(*(getattr(self, f.name)[index] for f in fields(self)))

    def kv_bytes_per_token(self) -> np.ndarray:
        """Bytes of KV cache per token in bf16: keys and values, every layer."""
        return cast("np.ndarray", 2.0 * self.layers * self.kv_width * 2.0)


def architecture(models: Sequence[str], model: np.ndarray, metadata: Mapping[str, Mapping[str, Any]]) -> Architecture:
    """The sizes of each plan's model (``model``: per plan an index into ``models``, -1 for none)."""
    table = np.array(
        [_row(metadata.get(m), m) for m in models] + [[np.nan] * (len(FIELDS) + 1)], dtype=np.float64
    ).reshape(len(models) + 1, len(FIELDS) + 1)
    rows = table[np.where(model >= 0, model, len(models))]
    col = {f: rows[:, i] for i, f in enumerate(FIELDS)}
    known = np.asarray(~np.isnan(rows[:, : len(FIELDS) - 1]).any(axis=1), dtype=bool)
    rank = np.where(np.isnan(col["lora_rank"]), 64.0, col["lora_rank"])
    unit = np.fmax.reduce(
        [
            col["largest_transformer_layer_elements"],
            col["non_transformer_layer_elements"],
            col["largest_weight_tensor_elements"],
        ]
    )
    return Architecture(
        p=col["floating_checkpoint_elements"],
        adapter64=col["all_linear_layer_adapter_elements"] * 64.0 / rank,
        unit=unit,
        layers=col["num_hidden_layers"],
        hidden=col["hidden_size"],
        vocab=col["vocab_size"],
        kv_width=col["num_key_value_heads"] * col["head_dim"],
        context=rows[:, len(FIELDS)],
        known=known,
    )


def _row(meta: Mapping[str, Any] | None, model_id: str) -> list[float]:
    if meta is None:
        return [np.nan] * (len(FIELDS) + 1)
    values = [_float(meta.get(f)) for f in FIELDS]
    context = meta.get("max_position_embeddings", CONTEXT_LENGTHS.get(model_id))
    return [*values, _float(context)]


def _float(value: object) -> float:
    if value is None or isinstance(value, bool):
        return float("nan")
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return float("nan")
