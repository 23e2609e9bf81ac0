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


def _is_lora(rank: object, adapter: object) -> bool | None:
    """VERL's rule (``ref_in_actor``): LoRA when the rank is above 0 or an adapter path is given; None: unknown."""
    if adapter is not None:
        return True
    if rank is None or isinstance(rank, bool) or not isinstance(rank, int):
        return None
    return rank > 0


def _adaptation(values: Values, settings: Mapping[str, object]) -> object:
    lora = _is_lora(*values)
    return None if lora is None else "LoRA" if lora else "none"


def _rank_of(value: object, settings: Mapping[str, object]) -> Values:
    """A ``write`` gives None for a key it leaves as the user has it."""
    return (64 if value == "LoRA" else 0, None)


def _ref_or_rollout(values: Values, settings: Mapping[str, object]) -> object:
    """VERL with LoRA computes the reference log-probabilities in the actor, at the rollout's micro-batch."""
    ref, rank, adapter = values
    if ref is not None:
        return ref
    return settings.get("rollout_logprob_micro_batch") if _is_lora(rank, adapter) else None


def _ref_back(value: object, settings: Mapping[str, object]) -> Values:
    return (value, 64 if settings.get("adaptation") == "LoRA" else 0, None)


def _lora_rank(values: Values, settings: Mapping[str, object]) -> object:
    """The adapter's rank; null when only an adapter path says LoRA (its rank is in the adapter's own config)."""
    rank, adapter = values
    return None if adapter is not None and not (isinstance(rank, int) and rank > 0) else rank


def _rank_back(value: object, settings: Mapping[str, object]) -> Values:
    return (value, None)


def _colocated(values: Values, settings: Mapping[str, object]) -> object:
    return None if values[0] is None else "colocate" if values[0] else "server"


def _hybrid(value: object, settings: Mapping[str, object]) -> Values:
    return (value == "colocate",)


_DTYPES = {"fp32": "fp32", "float32": "fp32", "bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16"}


def _dtype(values: Values, settings: Mapping[str, object]) -> object:
    given = next((v for v in values if v is not None), None)
    return _DTYPES.get(given.lower()) if isinstance(given, str) else None


def _knob(key: str, setting: str, conversion: str = "same") -> Mapped:
    """A knob (:mod:`.knobs`) read from one key as it is; never required."""
    return Mapped((key,), setting, conversion, _same, _as_is, False)


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
        (
            "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
            "actor_rollout_ref.model.lora_rank",
            "actor_rollout_ref.model.lora_adapter_path",
        ),
        "ref_logprob_micro_batch",
        "same; absent with LoRA: the rollout's (the actor then computes the reference log-probabilities)",
        _ref_or_rollout,
        _ref_back,
        kinds=("int64", "int64", "string"),
        optional=("actor_rollout_ref.model.lora_rank", "actor_rollout_ref.model.lora_adapter_path"),
        derived_from="rollout_logprob_micro_batch",
    ),  # fmt: skip
    Mapped(("data.train_batch_size",), "train_batch_size", "same (prompts per step)", _same, _as_is),
    Mapped(("trainer.total_training_steps",), "total_training_steps", "same", _same, _as_is, False),
    Mapped(("trainer.save_freq",), "save_freq", "same (-1: no checkpoints)", _same, _as_is, False),
    Mapped(("trainer.test_freq",), "test_freq", "same (-1: no validation)", _same, _as_is, False),
    Mapped(("algorithm.adv_estimator",), "algorithm", "upper case (grpo: GRPO)", _upper, _lower, False),
    Mapped(
        ("actor_rollout_ref.model.lora_rank", "actor_rollout_ref.model.lora_adapter_path"),
        "adaptation",
        "LoRA when the rank is above 0 or an adapter path is given, else none",
        _adaptation,
        _rank_of,
        False,
        ("int64", "string"),
        optional=("actor_rollout_ref.model.lora_adapter_path",),
    ),  # fmt: skip
    # the knobs (.knobs): what else the memory model reads
    _knob("trainer.nnodes", "nnodes"),
    Mapped(
        ("actor_rollout_ref.model.lora_rank", "actor_rollout_ref.model.lora_adapter_path"),
        "lora_rank",
        "same; null when only an adapter path is given",
        _lora_rank,
        _rank_back,
        False,
        ("int64", "string"),
    ),  # fmt: skip
    _knob("actor_rollout_ref.actor.strategy", "strategy"),
    _knob("actor_rollout_ref.rollout.name", "rollout_engine"),
    Mapped(
        ("actor_rollout_ref.hybrid_engine",),
        "vllm_mode",
        "true: colocate, false: server",
        _colocated,
        _hybrid,
        False,
        ("bool",),
    ),  # fmt: skip
    _knob("algorithm.adv_estimator", "advantage_estimator"),
    _knob("actor_rollout_ref.model.enable_gradient_checkpointing", "gradient_checkpointing"),
    _knob("actor_rollout_ref.model.use_remove_padding", "use_remove_padding"),
    _knob("actor_rollout_ref.rollout.layered_summon", "layered_summon"),
    Mapped(
        ("actor_rollout_ref.actor.fsdp_config.model_dtype",),
        "actor_param_dtype",
        "fp32 / float32: fp32, bf16 / bfloat16: bf16",
        _dtype,
        _as_is,
        False,
        ("string",),
    ),  # fmt: skip
    _knob("actor_rollout_ref.rollout.enforce_eager", "enforce_eager"),
    _knob("actor_rollout_ref.rollout.load_format", "load_format"),
    _knob("actor_rollout_ref.rollout.max_num_batched_tokens", "max_num_batched_tokens"),
    _knob("actor_rollout_ref.actor.use_dynamic_bsz", "use_dynamic_bsz"),
    _knob("actor_rollout_ref.actor.ppo_max_token_len_per_gpu", "max_token_len_per_gpu"),
    _knob("actor_rollout_ref.actor.ulysses_sequence_parallel_size", "ulysses_sp_size"),
)

#: What the measurements used, where VERL lets a run differ (the adapters are rank-64 LoRA on all linear layers).
VERL_SCOPE: tuple[Scope, ...] = (
    Scope(
        "actor_rollout_ref.model.lora_rank",
        (64,),
        "LoRA rank {value} (the measurements use rank-64 adapters)",
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


def _peft_rank(values: Values, settings: Mapping[str, object]) -> object:
    peft, rank = values
    return rank if peft is True else 0 if peft is False else None


def _peft_back(value: object, settings: Mapping[str, object]) -> Values:
    lora = isinstance(value, int) and value > 0
    return (lora, value if lora else None)


def _generation(values: Values, settings: Mapping[str, object]) -> object:
    return None if values[0] is None else "vllm" if values[0] else "hf"


def _generation_back(value: object, settings: Mapping[str, object]) -> Values:
    return (value == "vllm",)


def _vllm_mode(values: Values, settings: Mapping[str, object]) -> object:
    use_vllm, mode = values
    return mode if use_vllm else None


def _vllm_mode_back(value: object, settings: Mapping[str, object]) -> Values:
    return (None if value is None else True, value)


_STRATEGIES = {"DEEPSPEED": "deepspeed", "FSDP": "fsdp", "MULTI_GPU": "ddp", "NO": "ddp", "MULTI_NPU": "ddp"}


def _strategy(values: Values, settings: Mapping[str, object]) -> object:
    kind, version = values
    if kind is None:
        return "ddp"  # accelerate launch without a config: plain data parallelism
    found = _STRATEGIES.get(str(kind).upper(), str(kind).lower())
    return "fsdp2" if found == "fsdp" and version == 2 else found


def _strategy_back(value: object, settings: Mapping[str, object]) -> Values:
    back = {"deepspeed": "DEEPSPEED", "fsdp": "FSDP", "fsdp2": "FSDP", "ddp": "MULTI_GPU"}
    return (back.get(str(value), value), 2 if value == "fsdp2" else None)


def _quant_bits(values: Values, settings: Mapping[str, object]) -> object:
    four, eight = values
    return 4 if four is True else 8 if eight is True else None


def _quant_back(value: object, settings: Mapping[str, object]) -> Values:
    return (value == 4, value == 8)


def _dtype_back(value: object, settings: Mapping[str, object]) -> Values:
    names = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
    return (names.get(str(value), value), None)


def _offloaded(values: Values, settings: Mapping[str, object]) -> object:
    """DeepSpeed's ``offload_*_device`` (cpu, nvme: offloaded) or FSDP's ``fsdp_offload_params``."""
    device, fsdp = values
    if isinstance(device, str) and device.lower() in ("cpu", "nvme"):
        return True
    return fsdp is True


def _offload_back(value: object, settings: Mapping[str, object]) -> Values:
    fsdp = str(settings.get("strategy", "")).startswith("fsdp")
    return (None if fsdp else "cpu" if value else "none", bool(value) if fsdp else None)


def _steps(values: Values, settings: Mapping[str, object]) -> object:
    return None if values[0] is None or values[0] == -1 else values[0]


def _interval(values: Values, settings: Mapping[str, object]) -> object:
    """Steps between saves (evaluations); a float below 1 is a ratio of the total steps, as transformers takes it
    (null when the total is not known); -1 when the strategy is ``no``."""
    import math

    steps, strategy = values
    if isinstance(strategy, str) and strategy.lower() == "no":
        return -1
    if isinstance(strategy, str) and strategy.lower() != "steps":  # epoch, best: not a number of steps
        return None
    if isinstance(steps, float):
        total = settings.get("total_training_steps")
        if steps < 1:
            return math.ceil(steps * total) if isinstance(total, int) and total > 0 else None
        return int(steps)
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
        ("num_processes",), "gpu_count", "same (accelerate's processes over all machines, one GPU each)", _same, _as_is
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
        "save_steps (a ratio of max_steps below 1); -1 when save_strategy is no, null for epoch",
        _interval,
        _interval_back,
        False,
        ("float64", "string"),
    ),  # fmt: skip
    Mapped(
        ("eval_steps", "eval_strategy"),
        "test_freq",
        "eval_steps (a ratio of max_steps below 1); -1 when eval_strategy is no, null for epoch",
        _interval,
        _interval_back,
        False,
        ("float64", "string"),
    ),  # fmt: skip
    # the knobs (.knobs)
    _knob("num_machines", "nnodes", "same (accelerate's machines)"),
    Mapped(
        ("use_peft", "lora_r"),
        "lora_rank",
        "lora_r with use_peft, else 0",
        _peft_rank,
        _peft_back,
        False,
        ("bool", "int64"),
    ),  # fmt: skip
    Mapped(
        ("distributed_type", "fsdp_version"),
        "strategy",
        "accelerate's distributed_type: DEEPSPEED deepspeed, FSDP fsdp (fsdp2 with fsdp_version 2), MULTI_GPU or "
        "none ddp",
        _strategy,
        _strategy_back,
        False,
        ("string", "int64"),
    ),  # fmt: skip
    _knob("zero_stage", "zero_stage", "same (deepspeed_config.zero_stage of the accelerate config)"),
    Mapped(
        ("use_vllm",),
        "rollout_engine",
        "true: vllm, false: hf (transformers' generate)",
        _generation,
        _generation_back,
        False,
        ("bool",),
    ),  # fmt: skip
    Mapped(
        ("use_vllm", "vllm_mode"),
        "vllm_mode",
        "same, with use_vllm",
        _vllm_mode,
        _vllm_mode_back,
        False,
        ("bool", "string"),
    ),  # fmt: skip
    _knob("gradient_checkpointing", "gradient_checkpointing"),
    Mapped(
        ("load_in_4bit", "load_in_8bit"),
        "base_quant_bits",
        "4 with load_in_4bit, 8 with load_in_8bit",
        _quant_bits,
        _quant_back,
        False,
        ("bool", "bool"),
    ),  # fmt: skip
    Mapped(
        ("dtype", "torch_dtype"),
        "actor_param_dtype",
        "float32: fp32, bfloat16: bf16 (auto: not known)",
        _dtype,
        _dtype_back,
        False,
        ("string", "string"),
    ),  # fmt: skip
    Mapped(
        ("offload_param_device", "fsdp_offload_params"),
        "parameter_offload",
        "DeepSpeed offload_param_device cpu / nvme, or FSDP fsdp_offload_params",
        _offloaded,
        _offload_back,
        False,
        ("string", "bool"),
    ),  # fmt: skip
    Mapped(
        ("offload_optimizer_device", "fsdp_offload_params"),
        "optimizer_offload",
        "DeepSpeed offload_optimizer_device cpu / nvme, or FSDP fsdp_offload_params",
        _offloaded,
        _offload_back,
        False,
        ("string", "bool"),
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
    "execution stack: TRL (accelerate), not the measured VERL/vLLM stack; settings are mapped where their meaning holds"
)


def mapped_keys(mapping: Sequence[Mapped], scope: Sequence[Scope]) -> set[str]:
    return {k for m in mapping for k in m.keys} | {s.key for s in scope}
