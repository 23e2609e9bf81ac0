"""The architecture of common open models as their Hub repositories' ``config.json`` states it, shipped so that a
model named in a launch file gets sizes offline, without a cached ``config.json``.

Facts only: each entry holds the ``config.json`` fields that :func:`~.hubmeta.architecture_metadata` derives the
parameter, adapter and KV-cache sizes from (no weights). Source: the ``config.json`` of each named repository on
the Hugging Face Hub (an Instruct model and its base share one architecture). A cached or reachable ``config.json``
is always preferred; these are used only when neither can be had, and the metadata says so.
"""

from __future__ import annotations

from collections.abc import Mapping


def _qwen2(hidden: int, layers: int, heads: int, kv: int, inter: int, vocab: int, context: int) -> dict[str, object]:
    return {
        "model_type": "qwen2",
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "intermediate_size": inter,
        "vocab_size": vocab,
        "max_position_embeddings": context,
        "tie_word_embeddings": vocab == 151936,
        "torch_dtype": "bfloat16",
    }


def _llama(hidden: int, layers: int, heads: int, inter: int, tied: bool) -> dict[str, object]:
    return {
        "model_type": "llama",
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": 8,
        "intermediate_size": inter,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": tied,
        "torch_dtype": "bfloat16",
    }


def _qwen3(hidden: int, layers: int, heads: int, inter: int, tied: bool) -> dict[str, object]:
    return {
        "model_type": "qwen3",
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "intermediate_size": inter,
        "vocab_size": 151936,
        "max_position_embeddings": 40960,
        "tie_word_embeddings": tied,
        "torch_dtype": "bfloat16",
    }


def _qwen25_vl(hidden: int, layers: int, heads: int, kv: int, inter: int, vocab: int) -> dict[str, object]:
    """Qwen2.5-VL: a Qwen2 decoder (its ``config.json`` keeps the text fields at the top) and a 32-block vision
    tower of width 1280 whose merger projects to the decoder's width."""
    return {
        **_qwen2(hidden, layers, heads, kv, inter, vocab, 128000),
        "model_type": "qwen2_5_vl",
        "tie_word_embeddings": vocab == 151936,
        "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16,
                          "out_hidden_size": hidden, "patch_size": 14, "spatial_merge_size": 2,
                          "temporal_patch_size": 2, "in_chans": 3},
    }  # fmt: skip


#: Qwen2.5-VL's decoders: hidden, layers, heads, KV heads, intermediate, vocabulary.
_QWEN25_VL = {"3B": (2048, 36, 16, 2, 11008, 151936), "7B": (3584, 28, 28, 4, 18944, 152064),
              "32B": (5120, 64, 40, 8, 27648, 152064)}  # fmt: skip
_QWEN25 = {
    "0.5B": _qwen2(896, 24, 14, 2, 4864, 151936, 32768),
    "1.5B": _qwen2(1536, 28, 12, 2, 8960, 151936, 32768),
    "3B": _qwen2(2048, 36, 16, 2, 11008, 151936, 32768),
    "7B": _qwen2(3584, 28, 28, 4, 18944, 152064, 32768),
    "14B": _qwen2(5120, 48, 40, 8, 13824, 152064, 32768),
    "32B": _qwen2(5120, 64, 40, 8, 27648, 152064, 32768),
    "72B": _qwen2(8192, 80, 64, 8, 29568, 152064, 32768),
}
_LLAMA = {
    "Llama-3.2-1B": _llama(2048, 16, 32, 8192, True),
    "Llama-3.2-3B": _llama(3072, 28, 24, 8192, True),
    "Llama-3.1-8B": _llama(4096, 32, 32, 14336, False),
}

#: Hub id → the architecture fields of its ``config.json``.
KNOWN_CONFIGS: Mapping[str, Mapping[str, object]] = {
    **{f"Qwen/Qwen2.5-{size}{suffix}": config for size, config in _QWEN25.items() for suffix in ("", "-Instruct")},
    "Qwen/Qwen2.5-Math-1.5B": _qwen2(1536, 28, 12, 2, 8960, 151936, 4096),
    "Qwen/Qwen2.5-Math-7B": _qwen2(3584, 28, 28, 4, 18944, 152064, 4096),
    **{f"meta-llama/{name}{suffix}": config for name, config in _LLAMA.items() for suffix in ("", "-Instruct")},
    **{f"Qwen/Qwen2-7B{suffix}": _qwen2(3584, 28, 28, 4, 18944, 152064, 32768) for suffix in ("", "-Instruct")},
    **{f"Qwen/Qwen2-72B{suffix}": _qwen2(8192, 80, 64, 8, 29568, 152064, 32768) for suffix in ("", "-Instruct")},
    **{f"Qwen/Qwen2.5-Coder-{size}-Instruct": _QWEN25[size] for size in ("7B", "14B", "32B")},
    "google/gemma-2-2b-it": {
        "model_type": "gemma2",
        "hidden_size": 2304,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "intermediate_size": 9216,
        "vocab_size": 256000,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
    },
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B": {
        **_qwen2(1536, 28, 12, 2, 8960, 151936, 131072),
        "tie_word_embeddings": False,
    },
    "mistralai/Mistral-Nemo-Instruct-2407": {
        "model_type": "mistral",
        "hidden_size": 5120,
        "num_hidden_layers": 40,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "intermediate_size": 14336,
        "vocab_size": 131072,
        "max_position_embeddings": 1024000,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
    **{f"Qwen/Qwen2.5-VL-{size}-Instruct": _qwen25_vl(*sizes) for size, sizes in _QWEN25_VL.items()},
    "Qwen/Qwen3-4B": _qwen3(2560, 36, 32, 9728, True),
    "Qwen/Qwen3-8B": _qwen3(4096, 36, 32, 12288, False),
    "Qwen/Qwen3-32B": _qwen3(5120, 64, 64, 25600, False),
    **{
        f"deepseek-ai/deepseek-llm-7b-{kind}": {
            "model_type": "llama",
            "hidden_size": 4096,
            "num_hidden_layers": 30,
            "num_attention_heads": 32,
            "num_key_value_heads": 32,
            "intermediate_size": 11008,
            "vocab_size": 102400,
            "max_position_embeddings": 4096,
            "tie_word_embeddings": False,
            "torch_dtype": "bfloat16",
        }
        for kind in ("base", "chat")
    },
}
#: Reward models (sequence classifiers: the decoder and a score head of width 1), by Hub id, as their
#: ``config.json`` states them (source: https://huggingface.co/Skywork/Skywork-Reward-Llama-3.1-8B config.json).
REWARD_CONFIGS: Mapping[str, Mapping[str, object]] = {
    "Skywork/Skywork-Reward-Llama-3.1-8B": {
        **_llama(4096, 32, 32, 14336, False),
        "vocab_size": 128257,
        "architectures": ["LlamaForSequenceClassification"],
    },
}
#: Reward models whose model card names the model they were trained from (the decoder they keep), by Hub id:
#: (base model, source). Their size is the base's, an upper bound (the score head of width 1 replaces the vocabulary
#: head).
REWARD_BASES: Mapping[str, tuple[str, str]] = {
    "Skywork/Skywork-Reward-V2-Llama-3.2-3B": (
        "meta-llama/Llama-3.2-3B-Instruct",
        "the model table of github.com/SkyworkAI/Skywork-Reward-V2 README.md",
    ),
}
#: How metadata derived from these facts names where it came from.
KNOWN_SOURCE = "config.json facts shipped with rlvrambench-hf (the Hub's config.json could not be read)"
