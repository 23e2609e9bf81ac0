"""A tiny causal language model repository for the tests: config.json and safetensors headers with real shapes.

The weights are zeros (the advisor reads headers only). :func:`llama_like_shapes` gives the tensor shapes of a
Llama/Qwen-style decoder from its configuration, which is also how the tests derive the shapes of the release's
four models (the counts of ``model_metadata.json`` are reproduced from them, no weights involved).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

TINY_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 16,
    "intermediate_size": 32,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "vocab_size": 64,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def llama_like_shapes(config: dict, *, attention_bias: bool = False, fused: bool = False) -> dict[str, list[int]]:
    """Tensor shapes of a decoder-only model: embeddings, layers (attention, gated MLP, two norms), final norm and,
    when not tied, the output head. ``fused``: Phi-3-style qkv_proj and gate_up_proj."""
    h, i, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    heads, kv = config["num_attention_heads"], config.get("num_key_value_heads", config["num_attention_heads"])
    d = config.get("head_dim") or h // heads
    shapes = {"model.embed_tokens.weight": [v, h]}
    for n in range(config["num_hidden_layers"]):
        p = f"model.layers.{n}."
        if fused:
            shapes[p + "self_attn.qkv_proj.weight"] = [heads * d + 2 * kv * d, h]
            shapes[p + "mlp.gate_up_proj.weight"] = [2 * i, h]
        else:
            for name, rows in (("q", heads * d), ("k", kv * d), ("v", kv * d)):
                shapes[p + f"self_attn.{name}_proj.weight"] = [rows, h]
                if attention_bias:
                    shapes[p + f"self_attn.{name}_proj.bias"] = [rows]
            shapes[p + "mlp.gate_proj.weight"] = [i, h]
            shapes[p + "mlp.up_proj.weight"] = [i, h]
        shapes[p + "self_attn.o_proj.weight"] = [h, heads * d]
        shapes[p + "mlp.down_proj.weight"] = [h, i]
        shapes[p + "input_layernorm.weight"] = [h]
        shapes[p + "post_attention_layernorm.weight"] = [h]
    shapes["model.norm.weight"] = [h]
    if not config.get("tie_word_embeddings", True):
        shapes["lm_head.weight"] = [v, h]
    return shapes


def write_safetensors(path: Path, shapes: dict[str, list[int]], dtype: str = "BF16") -> None:
    """A safetensors file of zeros with the given shapes (2 bytes per element)."""
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in shapes.items():
        size = 2
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(offset))


def tiny_model_folder(folder: Path) -> Path:
    """A model repository folder: config.json and model.safetensors."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(TINY_CONFIG, indent=2))
    write_safetensors(folder / "model.safetensors", llama_like_shapes(TINY_CONFIG))
    return folder
