"""The one mapping table: VERL's and TRL's config keys to the dataset's settings, and the keys that become scope flags.

Each :class:`Mapped` row reads one or more keys of the user's config and gives one setting of
``benchmark/configurations.csv`` (its type and range are the registry's and :mod:`.checks`'); ``conversion`` says
how, in words, and ``read`` / ``write`` do it both ways (``write`` gives the keys' values for a setting's value,
so that a measured configuration can be written back as a VERL command line). Each :class:`Scope` row compares a
key with what the measurements used and raises a flag when it differs. docs/advisor.md prints these tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

Values = Sequence[object]


@dataclass(frozen=True)
class Mapped:
    """``keys`` of the config → ``setting``; ``read(values, settings so far)`` and ``write(value, settings)``."""

    keys: tuple[str, ...]
    setting: str
    conversion: str
    read: Callable[[Values, Mapping[str, object]], object]
    write: Callable[[object, Mapping[str, object]], Values]
    required: bool = True
    kinds: tuple[str, ...] = ()  # per key, its kind when it is not the setting's
    optional: tuple[str, ...] = ()  # keys that may be null (the conversion then uses other values)
    derived_from: str | None = None  # a setting the conversion may take instead: missing, only it is named

    @property
    def written(self) -> str:
        """How errors name the setting: its keys, multiplied where the conversion is their product."""
        return (" × " if self.conversion.startswith("product") else ", ").join(self.keys)


@dataclass(frozen=True)
class Scope:
    """``key`` compared with the ``measured`` value(s); ``flag`` (formatted with ``value``) when it differs."""

    key: str
    measured: tuple[object, ...]
    flag: str
    absent_is_measured: bool = False  # the tool's default, when the key is left out, is what was measured


def _same(values: Values, settings: Mapping[str, object]) -> object:
    return values[0]


def _as_is(value: object, settings: Mapping[str, object]) -> Values:
    return (value,)


def _product(values: Values, settings: Mapping[str, object]) -> object:
    a, b = values
    return None if a is None or b is None else a * b  # type: ignore[operator]


def _on_one_node(value: object, settings: Mapping[str, object]) -> Values:
    return (value, 1)


def _or_prompt_plus_response(values: Values, settings: Mapping[str, object]) -> object:
    if values[0] is not None:
        return values[0]
    prompt, response = settings.get("max_prompt_length"), settings.get("max_response_length")
    return None if prompt is None or response is None else prompt + response  # type: ignore[operator]


def _upper(values: Values, settings: Mapping[str, object]) -> object:
    return values[0].upper() if isinstance(values[0], str) else values[0]


def _lower(value: object, settings: Mapping[str, object]) -> Values:
    return (value.lower() if isinstance(value, str) else value,)


def _adaptation(values: Values, settings: Mapping[str, object]) -> object:
    rank = values[0]
    if rank is None or isinstance(rank, bool) or not isinstance(rank, int):
        return None
    return "LoRA" if rank > 0 else "none"


def _rank_of(value: object, settings: Mapping[str, object]) -> Values:
    return (64 if value == "LoRA" else 0,)


def _ref_or_rollout(values: Values, settings: Mapping[str, object]) -> object:
    """VERL with LoRA computes the reference log-probabilities in the actor, at the rollout's micro-batch."""
    ref, rank = values
    if ref is not None:
        return ref
    lora = isinstance(rank, int) and not isinstance(rank, bool) and rank > 0
    return settings.get("rollout_logprob_micro_batch") if lora else None


def _ref_back(value: object, settings: Mapping[str, object]) -> Values:
    return (value, 64 if settings.get("adaptation") == "LoRA" else 0)


#: Ordered so that a conversion reads only settings made before it (max_model_len after the lengths).
VERL_MAPPING: tuple[Mapped, ...] = (
    Mapped(
        ("actor_rollout_ref.model.path",),
        "model_id",
        "the Hub id; a local folder named as a measured model is that model",
        _same,
        _as_is,
    ),  # fmt: skip
    Mapped(("trainer.n_gpus_per_node", "trainer.nnodes"), "gpu_count", "product", _product, _on_one_node),
    Mapped(("actor_rollout_ref.rollout.tensor_model_parallel_size",), "rollout_tp_size", "same", _same, _as_is),
    Mapped(
        ("actor_rollout_ref.rollout.gpu_memory_utilization",), "vllm_gpu_memory_utilization", "same", _same, _as_is
    ),  # fmt: skip
    Mapped(("actor_rollout_ref.rollout.free_cache_engine",), "free_cache_engine", "same", _same, _as_is, False),
    Mapped(("data.max_prompt_length",), "max_prompt_length", "same", _same, _as_is),
    Mapped(("data.max_response_length",), "max_response_length", "same", _same, _as_is),
    Mapped(
        ("actor_rollout_ref.rollout.max_model_len",),
        "max_model_len",
        "same; null: prompt + response",
        _or_prompt_plus_response,
        _as_is,
        optional=("actor_rollout_ref.rollout.max_model_len",),
    ),  # fmt: skip
    Mapped(("actor_rollout_ref.rollout.max_num_seqs",), "max_num_seqs", "same", _same, _as_is, False),
    Mapped(("actor_rollout_ref.rollout.n",), "rollout_n", "same", _same, _as_is),
    Mapped(
        ("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",),
        "rollout_logprob_micro_batch",
        "same",
        _same,
        _as_is,
    ),  # fmt: skip
    Mapped(("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",), "actor_micro_batch", "same", _same, _as_is),
    Mapped(("actor_rollout_ref.actor.fsdp_config.param_offload",), "parameter_offload", "same", _same, _as_is),
    Mapped(("actor_rollout_ref.actor.fsdp_config.optimizer_offload",), "optimizer_offload", "same", _same, _as_is),
    Mapped(
        ("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu", "actor_rollout_ref.model.lora_rank"),
        "ref_logprob_micro_batch",
        "same; absent with LoRA: the rollout's (the actor then computes the reference log-probabilities)",
        _ref_or_rollout,
        _ref_back,
        kinds=("int64", "int64"),
        optional=("actor_rollout_ref.model.lora_rank",),
        derived_from="rollout_logprob_micro_batch",
    ),  # fmt: skip
    Mapped(("data.train_batch_size",), "train_batch_size", "same (prompts per step)", _same, _as_is),
    Mapped(("trainer.total_training_steps",), "total_training_steps", "same", _same, _as_is, False),
    Mapped(("trainer.save_freq",), "save_freq", "same (-1: no checkpoints)", _same, _as_is, False),
    Mapped(("trainer.test_freq",), "test_freq", "same (-1: no validation)", _same, _as_is, False),
    Mapped(("algorithm.adv_estimator",), "algorithm", "upper case (grpo: GRPO)", _upper, _lower, False),
    Mapped(
        ("actor_rollout_ref.model.lora_rank",),
        "adaptation",
        "LoRA when the rank is above 0, else none",
        _adaptation,
        _rank_of,
        False,
        ("int64",),
    ),  # fmt: skip
)

#: What the measurements used, where VERL lets a run differ (the adapters are rank-64 LoRA on all linear layers).
VERL_SCOPE: tuple[Scope, ...] = (
    Scope(
        "actor_rollout_ref.model.lora_rank",
        (64,),
        "LoRA rank {value} (the measurements use rank-64 adapters; rank 0 is full fine-tuning)",
    ),  # fmt: skip
    Scope(
        "actor_rollout_ref.model.target_modules",
        ("all-linear",),
        "LoRA target modules {value} (the measurements adapt all linear layers)",
    ),  # fmt: skip
    Scope(
        "algorithm.adv_estimator",
        ("grpo",),
        "advantage estimator {value} (the measurements run GRPO; gae adds a critic)",
    ),  # fmt: skip
    Scope("actor_rollout_ref.rollout.name", ("vllm",), "rollout engine {value} (the measurements generate with vLLM)"),
    Scope(
        "actor_rollout_ref.actor.strategy",
        ("fsdp", "fsdp2"),
        "actor strategy {value} (the measurements train with FSDP)",
    ),  # fmt: skip
    Scope(
        "actor_rollout_ref.hybrid_engine",
        (True,),
        "hybrid_engine {value} (the measurements colocate generation and training)",
    ),  # fmt: skip
    Scope(
        "actor_rollout_ref.actor.use_dynamic_bsz",
        (False,),
        "use_dynamic_bsz {value}: micro-batches sized by tokens (the measurements use fixed per-GPU micro-batches)",
        absent_is_measured=True,
    ),  # fmt: skip
)


def _trl_batch(values: Values, settings: Mapping[str, object]) -> object:
    """Prompts per generation round: completions per round / generations per prompt, the completions being
    ``generation_batch_size`` or per-device batch × GPUs × steps per generation (GRPOConfig's own rule)."""
    per_device, generation_batch, steps, accumulation, generations = values
    gpus, rounds = settings.get("gpu_count"), steps if steps is not None else accumulation
    if generation_batch is not None and generations is not None:
        completions: int = generation_batch  # type: ignore[assignment]
    elif None in (per_device, rounds, generations, gpus):
        return None
    else:
        completions = per_device * gpus * rounds  # type: ignore[operator]
    whole, rest = divmod(completions, generations)  # type: ignore[operator]
    return whole if rest == 0 else completions / generations  # type: ignore[operator]


def _trl_batch_back(value: object, settings: Mapping[str, object]) -> Values:
    n, gpus = settings["rollout_n"], settings["gpu_count"]
    per_device = settings["actor_micro_batch"]
    return (per_device, None, value * n // (per_device * gpus), None, n)  # type: ignore[operator]


def _steps(values: Values, settings: Mapping[str, object]) -> object:
    return None if values[0] is None or values[0] == -1 else values[0]


def _interval(values: Values, settings: Mapping[str, object]) -> object:
    steps, strategy = values
    if isinstance(strategy, str) and strategy.lower() == "no":
        return -1
    return steps


def _interval_back(value: object, settings: Mapping[str, object]) -> Values:
    return (None, "no") if value is None or value == -1 else (value, "steps")


#: TRL's GRPOConfig (with the model and accelerate keys that ``trl grpo --config`` takes) in vLLM colocate mode.
TRL_MAPPING: tuple[Mapped, ...] = (
    Mapped(
        ("model_name_or_path",),
        "model_id",
        "the Hub id; a local folder named as a measured model is that model",
        _same,
        _as_is,
    ),  # fmt: skip
    Mapped(
        ("num_processes", "num_machines"),
        "gpu_count",
        "product (accelerate's processes, one GPU each; num_machines 1 when absent)",
        _product,
        _on_one_node,
    ),  # fmt: skip
    Mapped(("vllm_tensor_parallel_size",), "rollout_tp_size", "same", _same, _as_is),
    Mapped(("vllm_gpu_memory_utilization",), "vllm_gpu_memory_utilization", "same", _same, _as_is),
    Mapped(
        ("vllm_enable_sleep_mode",),
        "free_cache_engine",
        "same (sleep mode releases vLLM's memory between generation and training)",
        _same,
        _as_is,
        False,
    ),  # fmt: skip
    Mapped(
        ("max_prompt_length",),
        "max_prompt_length",
        "same (older TRL; newer TRL does not truncate prompts)",
        _same,
        _as_is,
    ),  # fmt: skip
    Mapped(("max_completion_length",), "max_response_length", "same", _same, _as_is),
    Mapped(
        ("vllm_max_model_length",),
        "max_model_len",
        "same; null: prompt + completion",
        _or_prompt_plus_response,
        _as_is,
        optional=("vllm_max_model_length",),
    ),  # fmt: skip
    Mapped(("num_generations",), "rollout_n", "same", _same, _as_is),
    Mapped(
        ("per_device_train_batch_size",), "actor_micro_batch", "same (completions per device and step)", _same, _as_is
    ),  # fmt: skip
    Mapped(
        ("per_device_train_batch_size",),
        "rollout_logprob_micro_batch",
        "same (old log-probabilities are computed in training batches)",
        _same,
        _as_is,
    ),  # fmt: skip
    Mapped(
        ("per_device_train_batch_size",), "ref_logprob_micro_batch", "same (so are the reference's)", _same, _as_is
    ),  # fmt: skip
    Mapped(
        (
            "per_device_train_batch_size",
            "generation_batch_size",
            "steps_per_generation",
            "gradient_accumulation_steps",
            "num_generations",
        ),
        "train_batch_size",
        "generation_batch_size, else per-device batch × GPUs × steps per generation (default: gradient "
        "accumulation), / generations",
        _trl_batch,
        _trl_batch_back,
        optional=("generation_batch_size", "steps_per_generation"),
    ),  # fmt: skip
    Mapped(("max_steps",), "total_training_steps", "same (-1: from the epochs, not known)", _steps, _as_is, False),
    Mapped(
        ("save_steps", "save_strategy"),
        "save_freq",
        "save_steps; -1 when save_strategy is no",
        _interval,
        _interval_back,
        False,
        ("int64", "string"),
    ),  # fmt: skip
    Mapped(
        ("eval_steps", "eval_strategy"),
        "test_freq",
        "eval_steps; -1 when eval_strategy is no",
        _interval,
        _interval_back,
        False,
        ("int64", "string"),
    ),  # fmt: skip
)

TRL_SCOPE: tuple[Scope, ...] = (
    Scope("use_vllm", (True,), "use_vllm {value}: generation without vLLM (the measurements generate with vLLM)"),
    Scope("vllm_mode", ("colocate",), "vllm_mode {value}: generation on other GPUs (the measurements colocate it)"),
    Scope("use_peft", (True,), "use_peft {value}: full fine-tuning (the measurements train LoRA adapters)"),
    Scope("lora_r", (64,), "LoRA rank {value} (the measurements use rank-64 adapters)"),
    Scope(
        "lora_target_modules", ("all-linear",), "LoRA target modules {value} (the measurements adapt all linear layers)"
    ),  # fmt: skip
)
#: Flagged where a config leaves vLLM's context length null (VERL from 0.7 and TRL then use the model's own).
NULL_CONTEXT_FLAG = (
    "{key} not set: read as prompt + response = {value} tokens, as every measured run set it; VERL 0.7 and later "
    "and TRL give vLLM the model's own context length instead (set it to compare like with like)"
)
#: Flagged on every row of a TRL config.
TRL_STACK_FLAG = (
    "execution stack: TRL (accelerate, vLLM colocate), not the measured VERL/vLLM stack; settings are mapped where "
    "their meaning holds"
)


def mapped_keys(mapping: Sequence[Mapped], scope: Sequence[Scope]) -> set[str]:
    return {k for m in mapping for k in m.keys} | {s.key for s in scope}
