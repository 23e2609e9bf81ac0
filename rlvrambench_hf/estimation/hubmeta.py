"""Model metadata of a model outside the release, from its Hub repository: ``config.json`` and safetensors headers.

:func:`metadata_from_shapes` (pure) derives the counts the features need from the configuration and the tensor
shapes; :func:`fetch_model_metadata` reads both through huggingface_hub (``get_safetensors_metadata`` reads the
headers only, never the weights), so ``HF_ENDPOINT``, ``HF_HUB_OFFLINE``, the cache and tokens apply. A Hub that
cannot be reached at all is :class:`HubUnreachable`, so that a caller asking for several models stops after the
first (huggingface_hub retries a failed connection for about 23 s).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..data.sources.huberrors import hub_error, is_network_error
from ..errors import InputError, SourceError, first_line, redact

LORA_RANK = 64
#: Bytes per element of the safetensors floating dtypes.
FLOAT_BYTES: dict[str, int] = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1}
#: A tensor inside a transformer layer: ``...layers.<i>.`` (also ``h.<i>.`` and ``blocks.<i>.``).
LAYER = re.compile(r"^(.*?(?:^|\.)(?:layers|h|blocks|block)\.\d+)\.")
CONFIG_FIELDS = ("hidden_size", "intermediate_size", "num_attention_heads", "num_hidden_layers", "vocab_size")


class HubUnreachable(SourceError):
    """The Hub could not be reached (a connection or time-out error below huggingface_hub)."""


def unreachable(model_id: str, revision: str | None = None) -> HubUnreachable:
    """The error of a model whose metadata the release lacks while the Hub cannot be reached."""
    from huggingface_hub import constants

    return HubUnreachable(
        f"{_where(model_id, revision)} is not in the release's model metadata and the Hub at "
        f"{redact(constants.ENDPOINT)} is unreachable"
    )


def _where(model_id: str, revision: str | None) -> str:
    return f"model {model_id}" + (f"@{revision}" if revision else "")


def metadata_from_shapes(
    model_id: str, config: Mapping, tensors: Mapping[str, tuple[str, Sequence[int]]], *, rank: int = LORA_RANK
) -> dict:
    """Counts of a model from its config and ``{tensor name: (dtype, shape)}``.

    Floating elements and bytes, the largest transformer layer, the elements outside the layers, the largest
    tensor, and the rank-``rank`` all-linear adapter count: Σ over the 2-D weights inside the layers of
    rank·(rows + cols).
    """
    text = config.get("text_config") if isinstance(config.get("text_config"), Mapping) else None
    settings = {**(text or {}), **{k: v for k, v in config.items() if k in CONFIG_FIELDS}} if text else config
    missing = [k for k in ("hidden_size", "num_hidden_layers", "vocab_size") if not isinstance(settings.get(k), int)]
    if missing:
        raise InputError(f"model {model_id}: config.json lacks {', '.join(missing)}")
    layers: dict[str, int] = {}
    outside = largest = elements = size = adapter = 0
    for name, (dtype, shape) in tensors.items():
        if dtype not in FLOAT_BYTES:
            continue
        count = 1
        for dim in shape:
            count *= int(dim)
        elements += count
        size += count * FLOAT_BYTES[dtype]
        largest = max(largest, count)
        layer = LAYER.match(name)
        if layer is None:
            outside += count
            continue
        layers[layer.group(1)] = layers.get(layer.group(1), 0) + count
        if len(shape) == 2 and name.endswith(".weight"):
            adapter += rank * (int(shape[0]) + int(shape[1]))
    if not layers:
        raise InputError(f"model {model_id}: no transformer-layer tensors found in its safetensors headers")
    heads = settings.get("num_attention_heads")
    return {
        "model_id": model_id,
        "floating_checkpoint_elements": elements,
        "floating_checkpoint_bytes": size,
        "all_linear_layer_adapter_elements": adapter,
        "largest_transformer_layer_elements": max(layers.values()),
        "non_transformer_layer_elements": outside,
        "largest_weight_tensor_elements": largest,
        "lora_rank": rank,
        "tensor_count": len(tensors),
        "num_hidden_layers": settings["num_hidden_layers"],
        "hidden_size": settings["hidden_size"],
        "vocab_size": settings["vocab_size"],
        "intermediate_size": settings.get("intermediate_size"),
        "num_attention_heads": heads,
        "num_key_value_heads": settings.get("num_key_value_heads", heads),
        "head_dim": settings.get("head_dim") or (settings["hidden_size"] // heads if heads else None),
        "tie_word_embeddings": bool(config.get("tie_word_embeddings", True)),
    }


def fetch_model_metadata(model_id: str, revision: str | None = None) -> dict:
    """The counts of Hub model ``model_id`` from its config.json and safetensors headers (no weights)."""
    from huggingface_hub import constants, get_safetensors_metadata, hf_hub_download
    from huggingface_hub import errors as hf_errors

    where = _where(model_id, revision)
    try:
        config_path = Path(hf_hub_download(model_id, "config.json", revision=revision))
        headers = get_safetensors_metadata(model_id, revision=revision)
    except (hf_errors.OfflineModeIsEnabled, hf_errors.LocalEntryNotFoundError) as exc:
        if constants.HF_HUB_OFFLINE:
            raise SourceError(f"{where} is not in the release's model metadata and HF_HUB_OFFLINE is set") from None
        if exc.__cause__ is None or not is_network_error(exc.__cause__):  # the server answered, but not with it
            endpoint = redact(constants.ENDPOINT)
            raise SourceError(f"{where}: the Hub at {endpoint} did not serve its config.json") from None
        raise unreachable(model_id, revision) from None
    except hf_errors.NotASafetensorsRepoError:
        raise SourceError(f"{where} has no safetensors weights to read the tensor shapes from") from None
    except Exception as exc:
        mapped = hub_error(exc, model_id, revision or "main", what="config.json", repo_type="model")
        if mapped is None:
            raise SourceError(f"{where}: cannot read its metadata: {first_line(exc, typed=True)}") from None
        raise mapped from None
    raw = config_path.read_bytes()
    try:
        config = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(f"{where}: config.json is not valid JSON ({exc})") from None
    tensors = {
        name: (info.dtype, tuple(info.shape))
        for file in headers.files_metadata.values()
        for name, info in file.tensors.items()
    }
    metadata = metadata_from_shapes(model_id, config, tensors)
    metadata["config_sha256"] = hashlib.sha256(raw).hexdigest()
    metadata["revision"] = config_path.parent.name if "snapshots" in config_path.parts else revision
    return metadata
