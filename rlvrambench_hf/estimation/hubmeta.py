"""Model metadata of a model outside the release, from its Hub repository: ``config.json`` and safetensors headers.

:func:`metadata_from_shapes` (pure) derives the counts the features need from the configuration and the tensor
shapes; :func:`fetch_model_metadata` reads both through huggingface_hub (``get_safetensors_metadata`` reads the
headers only, never the weights), so ``HF_ENDPOINT``, ``HF_HUB_OFFLINE``, the cache and tokens apply. A Hub that
cannot be reached at all is :class:`HubUnreachable`, so that a caller asking for several models stops after the
first (huggingface_hub retries a failed connection for about 23 s).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data.sources.huberrors import hub_error, is_network_error
from ..errors import InputError, RLVRAMBenchError, SourceError, first_line, redact
from .knownconfigs import KNOWN_CONFIGS, KNOWN_SOURCE
from .localmodel import checked_sizes, checked_tensors, local_model_folder, read_config, read_local_model

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
    model_id: str, config: Mapping[str, Any], tensors: Mapping[str, tuple[str, Sequence[int]]], *, rank: int = LORA_RANK
) -> dict[str, Any]:
    """Counts of a model from its config and ``{tensor name: (dtype, shape)}``.

    Floating elements and bytes, the largest transformer layer, the elements outside the layers, the largest
    tensor, and the rank-``rank`` all-linear adapter count: Σ over the 2-D weights inside the layers of
    rank·(rows + cols).
    """
    checked_sizes(config, f"model {model_id}: config.json")
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
        "max_position_embeddings": settings.get("max_position_embeddings"),
    }


def fetch_model_metadata(model_id: str, revision: str | None = None) -> dict[str, Any]:
    """The counts of model ``model_id`` from its config.json and safetensors headers (no weights): a folder here
    is read as it is; a Hub id from the Hub, or offline from the local Hugging Face cache, where its config.json
    alone gives the counts (:func:`architecture_metadata`) when the headers cannot be read."""
    from huggingface_hub import constants, get_safetensors_metadata

    folder = local_model_folder(model_id)
    if folder is not None:
        return local_model_metadata(folder, model_id)
    where = _where(model_id, revision)
    config_path = _config_path(model_id, revision)
    if config_path is not None and constants.HF_HUB_OFFLINE:
        return _from_cached_config(model_id, config_path)
    if config_path is None and constants.HF_HUB_OFFLINE and model_id in KNOWN_CONFIGS:
        return _from_known_config(model_id)
    try:
        headers = get_safetensors_metadata(model_id, revision=revision)
    except Exception as exc:
        if config_path is not None and _offline(exc):
            return _from_cached_config(model_id, config_path)
        if model_id in KNOWN_CONFIGS:  # offline, unreachable, or a mirror without it: the facts the package ships
            return _from_known_config(model_id)
        raise _metadata_error(exc, model_id, revision) from None
    if config_path is None:
        raise SourceError(f"{where}: the Hub did not serve its config.json")
    config, raw = read_config(config_path, where, SourceError)
    served = {
        name: {"dtype": info.dtype, "shape": list(info.shape)}
        for file in headers.files_metadata.values()
        for name, info in file.tensors.items()
    }
    tensors = checked_tensors(served, f"{where}: the safetensors headers the Hub served")
    metadata = metadata_from_shapes(model_id, config, tensors)
    metadata["config_sha256"] = hashlib.sha256(raw).hexdigest()
    metadata["revision"] = config_path.parent.name if "snapshots" in config_path.parts else revision
    return metadata


def _from_known_config(model_id: str) -> dict[str, Any]:
    """The counts of a common model from the ``config.json`` facts the package ships (offline, nothing cached)."""
    return {**architecture_metadata(model_id, KNOWN_CONFIGS[model_id]), "derived_from": KNOWN_SOURCE}


def _config_path(model_id: str, revision: str | None) -> Path | None:
    """The model's config.json from the Hub, or from the local cache when the Hub cannot be asked; None when
    neither has it (the headers' request then says why)."""
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(model_id, "config.json", revision=revision))
    except Exception:  # any failure is reported with the headers' request, which fails the same way
        return None


def _offline(exc: Exception) -> bool:
    from huggingface_hub import errors as hf_errors

    if isinstance(exc, (hf_errors.OfflineModeIsEnabled, hf_errors.LocalEntryNotFoundError)):
        return True
    return is_network_error(exc) or (exc.__cause__ is not None and is_network_error(exc.__cause__))


def _metadata_error(exc: Exception, model_id: str, revision: str | None) -> RLVRAMBenchError:
    """The one-line error of a model whose headers could not be read."""
    from huggingface_hub import constants
    from huggingface_hub import errors as hf_errors

    where = _where(model_id, revision)
    if isinstance(exc, (hf_errors.OfflineModeIsEnabled, hf_errors.LocalEntryNotFoundError)):
        if constants.HF_HUB_OFFLINE:
            return SourceError(f"{where} is not in the release's model metadata and HF_HUB_OFFLINE is set")
        if exc.__cause__ is None or not is_network_error(exc.__cause__):  # the server answered, but not with it
            return SourceError(f"{where}: the Hub at {redact(constants.ENDPOINT)} did not serve its config.json")
        return unreachable(model_id, revision)
    if isinstance(exc, hf_errors.NotASafetensorsRepoError):
        return SourceError(f"{where} has no safetensors weights to read the tensor shapes from")
    if is_network_error(exc) or (exc.__cause__ is not None and is_network_error(exc.__cause__)):
        return unreachable(model_id, revision)
    mapped = hub_error(exc, model_id, revision or "main", what="config.json", repo_type="model")
    if mapped is None:
        return SourceError(f"{where}: cannot read its metadata: {first_line(exc, typed=True)}")
    return mapped


#: Bytes per element of the dtypes a config.json names.
CONFIG_DTYPE_BYTES: dict[str, int] = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}
#: Architectures whose attention projections q, k, v carry biases without a config key saying so.
QKV_BIAS_TYPES = frozenset({"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl"})
#: Architectures with fused ``qkv_proj`` and ``gate_up_proj`` (LoRA adapts the fused matrices).
FUSED_TYPES = frozenset({"phi3", "phimoe"})


def _text_settings(config: Mapping[str, Any]) -> Mapping[str, Any]:
    text = config.get("text_config")
    return {**text, **{k: v for k, v in config.items() if k in CONFIG_FIELDS}} if isinstance(text, Mapping) else config


def _whole(value: object) -> int:
    """``value`` when it is a whole number above 0, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _vision_elements(config: Mapping[str, Any], kind: str) -> int:
    """The vision tower of a Qwen2.5-VL ``config.json`` (``vision_config``): per block q, k, v and output with
    biases, a gated MLP with biases and two norms; the patch embedding (``in_chans x temporal_patch_size x
    patch_size²`` per channel, no bias); the merger (a norm, then ``4h -> 4h -> out_hidden_size`` with biases, for
    ``spatial_merge_size²`` = 4 patches). 0 for other architectures (their vision towers are not derived here)."""
    vision = config.get("vision_config")
    if kind != "qwen2_5_vl" or not isinstance(vision, Mapping):
        return 0
    sizes = [_whole(vision.get(k)) for k in ("hidden_size", "intermediate_size", "depth", "out_hidden_size")]
    h, inter, depth, out = sizes
    if not (h and inter and depth and out):
        return 0
    block = 4 * h * h + 4 * h + 3 * inter * h + 2 * inter + h + 2 * h
    patch = (
        int(vision.get("in_chans", 3))
        * int(vision.get("temporal_patch_size", 2))
        * int(vision.get("patch_size", 14)) ** 2
        * h
    )
    merged = h * int(vision.get("spatial_merge_size", 2)) ** 2
    merger = h + merged * merged + merged + out * merged + out
    return int(depth * block + patch + merger)


def architecture_metadata(model_id: str, config: Mapping[str, Any], *, rank: int = LORA_RANK) -> dict[str, Any]:
    """The counts of :func:`metadata_from_shapes` derived from a dense decoder's ``config.json`` alone (no weights):
    embeddings, attention (q, k, v with their biases where the architecture has them, o), the gated MLP, two norms
    per layer and the final norm, and the output head unless tied. Also the KV cache per token
    (``kv_cache_bytes_per_token``: keys and values of every layer in the config's dtype). Mixture-of-experts
    configs are refused (their expert counts change the arithmetic)."""
    checked_sizes(config, f"model {model_id}: config.json")
    settings = _text_settings(config)
    names = ("hidden_size", "num_hidden_layers", "vocab_size", "intermediate_size", "num_attention_heads")
    missing = [k for k in names if not isinstance(settings.get(k), int) or isinstance(settings.get(k), bool)]
    if missing:
        raise InputError(f"model {model_id}: config.json lacks {', '.join(missing)}")
    if any(k in settings for k in ("num_experts", "num_local_experts", "n_routed_experts")):
        raise InputError(f"model {model_id}: a mixture-of-experts config; its sizes need the weights' headers")
    h, layers, vocab = settings["hidden_size"], settings["num_hidden_layers"], settings["vocab_size"]
    inter, heads = settings["intermediate_size"], settings["num_attention_heads"]
    kv = settings.get("num_key_value_heads") or heads
    head_dim = settings.get("head_dim") or h // heads
    kind = str(config.get("model_type", settings.get("model_type", ""))).lower()
    q, kv_width = heads * head_dim, kv * head_dim
    qkv_bias = kind in QKV_BIAS_TYPES or settings.get("attention_bias") is True
    mlp_bias = settings.get("mlp_bias") is True
    matrices = [(q, h), (kv_width, h), (kv_width, h), (h, q), (inter, h), (inter, h), (h, inter)]
    if kind in FUSED_TYPES:
        matrices = [(q + 2 * kv_width, h), (h, q), (2 * inter, h), (h, inter)]
    biases = (q + 2 * kv_width) * qkv_bias + (2 * inter + h) * mlp_bias + h * (settings.get("attention_bias") is True)
    layer = sum(r * c for r, c in matrices) + biases + 2 * h
    tied = bool(config.get("tie_word_embeddings", settings.get("tie_word_embeddings", True)))
    outside = vocab * h * (1 if tied else 2) + h + _vision_elements(config, kind)
    elements = layers * layer + outside
    dtype = str(config.get("torch_dtype") or config.get("dtype") or settings.get("torch_dtype") or "bfloat16")
    size = CONFIG_DTYPE_BYTES.get(dtype.lower(), 2)
    attention_bias = settings.get("attention_bias") is True
    fused = kind in FUSED_TYPES
    bias_tensors = (1 if fused else 3) * qkv_bias + attention_bias + (2 if fused else 3) * mlp_bias
    per_layer_tensors = len(matrices) + 2 + bias_tensors
    return {
        "model_id": model_id,
        "floating_checkpoint_elements": elements,
        "floating_checkpoint_bytes": elements * size,
        "all_linear_layer_adapter_elements": layers * sum(rank * (r + c) for r, c in matrices),
        "largest_transformer_layer_elements": layer,
        "non_transformer_layer_elements": outside,
        "largest_weight_tensor_elements": max(vocab * h, *(r * c for r, c in matrices)),
        "lora_rank": rank,
        "tensor_count": layers * per_layer_tensors + 2 + (0 if tied else 1),
        "num_hidden_layers": layers,
        "hidden_size": h,
        "vocab_size": vocab,
        "intermediate_size": inter,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "tie_word_embeddings": tied,
        "kv_cache_bytes_per_token": 2 * layers * kv_width * size,
        "max_position_embeddings": settings.get("max_position_embeddings"),
        "derived_from": "config.json (architecture; no weights' headers)",
    }


def local_model_metadata(folder: Path, model_id: str | None = None) -> dict[str, Any]:
    """The counts of the model in a local ``folder``: its safetensors headers with its config.json, or its
    config.json's architecture alone when it holds no weights (files read within bounds: :mod:`.localmodel`)."""
    model_id = model_id or str(folder)
    config, raw, tensors = read_local_model(folder)
    metadata = metadata_from_shapes(model_id, config, tensors) if tensors else architecture_metadata(model_id, config)
    metadata["config_sha256"] = hashlib.sha256(raw).hexdigest()
    return metadata


def _from_cached_config(model_id: str, config_path: Path) -> dict[str, Any]:
    """The counts from a cached config.json's architecture (the Hub's headers not reachable)."""
    config, raw = read_config(config_path, _where(model_id, None), SourceError)
    metadata = architecture_metadata(model_id, config)
    metadata["config_sha256"] = hashlib.sha256(raw).hexdigest()
    metadata["revision"] = config_path.parent.name if "snapshots" in config_path.parts else None
    return metadata
