"""A model-based reward (VERL ``reward_model.enable``) as the mapping reads it: the keys that set its memory, and the
reward model's size from the ``config.json`` facts the package ships (:mod:`rlvrambench_hf.estimation.knownconfigs`).

VERL serves the reward model in one of two ways. Its reward loop (``reward_model.use_reward_loop``, and the only
way from VERL 0.7 on, where ``reward_model.rollout.name`` names the engine: ``verl/experimental/reward_loop/
reward_model.py``) runs a second inference engine of ``reward_model.rollout.*`` on the training GPUs (or on its own
with ``enable_resource_pool``), woken for the reward and put to sleep after it. Before it, a FSDP worker holds the
reward model's bf16 weights (``reward_model.model.fsdp_config.param_offload``) and scores micro-batches of
``reward_model.micro_batch_size_per_gpu`` sequences (or ``forward_max_token_len_per_gpu`` tokens with
``use_dynamic_bsz``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache

from .conversions import Values
from .mapped import Mapped, _knob

#: The sizes of a reward model the per-phase model reads (knobs of the same names).
SIZES = ("reward_params", "reward_unit", "reward_hidden", "reward_layers")
_LOOP_KEYS = ("reward_model.use_reward_loop", "reward_model.rollout.name")


@lru_cache(maxsize=64)
def reward_sizes(path: str) -> tuple[str, dict[str, float]] | None:
    """(the Hub id, its sizes) of the reward model a path names (a Hub id, or a folder named as one), from shipped
    facts; None where none are shipped. A sequence classifier keeps its decoder and replaces the vocabulary head
    by a score head of width 1: parameters = decoder + embeddings + ``hidden`` (an untied vocabulary head is not
    counted); a model known only by its base is sized as the base (an upper bound)."""
    from ...estimation.hubmeta import architecture_metadata
    from ...estimation.knownconfigs import KNOWN_CONFIGS, REWARD_BASES, REWARD_CONFIGS

    name = path.rstrip("/").rsplit("/", 1)[-1].lower()
    ids = [m for m in (*REWARD_CONFIGS, *REWARD_BASES, *KNOWN_CONFIGS) if m == path or m.split("/")[-1].lower() == name]
    if not ids:
        return None
    model = ids[0]
    config = REWARD_CONFIGS.get(model) or KNOWN_CONFIGS[REWARD_BASES[model][0] if model in REWARD_BASES else model]
    meta = architecture_metadata(model, config)
    hidden, vocab = int(config["hidden_size"]), int(config["vocab_size"])  # type: ignore[call-overload]
    untied = config.get("tie_word_embeddings", True) is False
    params = float(meta["floating_checkpoint_elements"]) - (vocab * hidden if untied else 0) + hidden
    unit = max(float(meta["largest_transformer_layer_elements"]), float(vocab * hidden))
    return model, {
        "reward_params": params,
        "reward_unit": unit,
        "reward_hidden": float(hidden),
        "reward_layers": float(config["num_hidden_layers"]),  # type: ignore[arg-type]
    }


def _size(field: str) -> Callable[[Values, Mapping[str, object]], object]:
    def read(values: Values, settings: Mapping[str, object]) -> object:
        path = values[0]
        found = reward_sizes(path) if isinstance(path, str) and settings.get("reward_model") is True else None
        return None if found is None else found[1][field]

    return read


def _loop(values: Values, settings: Mapping[str, object]) -> object:
    """Served by an inference engine (VERL's reward loop): ``use_reward_loop`` where given, else whether the config
    names the reward's engine (``reward_model.rollout.name``, required from VERL 0.7 on); null without a reward."""
    if settings.get("reward_model") is not True:
        return None
    flag, engine = values
    return flag if isinstance(flag, bool) else engine is not None


def _no_key(value: object, settings: Mapping[str, object]) -> Values:
    return (None,)


def _loop_back(value: object, settings: Mapping[str, object]) -> Values:
    return (value, None)


REWARD_MAPPING: tuple[Mapped, ...] = (
    _knob("reward_model.enable", "reward_model"),
    Mapped(
        _LOOP_KEYS,
        "reward_loop",
        "use_reward_loop where given, else on when reward_model.rollout.name names an engine (VERL 0.7 on)",
        _loop,
        _loop_back,
        False,
        ("bool", "string"),
    ),  # fmt: skip
    _knob("reward_model.enable_resource_pool", "reward_pool"),
    _knob("reward_model.rollout.gpu_memory_utilization", "reward_vllm_utilization"),
    _knob("reward_model.rollout.tensor_model_parallel_size", "reward_tp_size"),
    _knob("reward_model.rollout.free_cache_engine", "reward_free_cache_engine"),
    _knob("reward_model.model.fsdp_config.param_offload", "reward_param_offload"),
    _knob("reward_model.micro_batch_size_per_gpu", "reward_micro_batch"),
    _knob("reward_model.use_dynamic_bsz", "reward_dynamic_bsz"),
    _knob("reward_model.forward_max_token_len_per_gpu", "reward_max_token_len"),
    *(
        Mapped(
            ("reward_model.model.path",),
            size,
            "the reward model's size from its config.json facts (a sequence classifier: no vocabulary head)",
            _size(size),
            _no_key,
            False,
            ("string",),
        )
        for size in SIZES
    ),
)
