"""The conversions of the mapping table (:mod:`.mapping`): each ``read(values, settings so far)`` turns the values
of a row's keys into one setting, each ``write(value, settings)`` gives the keys' values back (None: a key the
write leaves as the user has it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Values = Sequence[object]


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


def _lora(values: Values) -> tuple[object, object]:
    """(rank, adapter path) of VERL's two ways to write them: ``model.lora_rank`` / ``model.lora_adapter_path``
    (FSDP) and ``model.lora.rank`` / ``model.lora.adapter_path`` (Megatron); VERL takes LoRA when either says so."""
    rank, adapter, nested_rank, nested_adapter = (*values, None, None)[:4]
    ranks: list[object] = [r for r in (rank, nested_rank) if isinstance(r, int) and not isinstance(r, bool)]
    positive = [r for r in ranks if isinstance(r, int) and r > 0]
    return (positive or ranks or [rank])[0], adapter if adapter is not None else nested_adapter


def _adaptation(values: Values, settings: Mapping[str, object]) -> object:
    lora = _is_lora(*_lora(values))
    return None if lora is None else "LoRA" if lora else "none"


def _rank_of(value: object, settings: Mapping[str, object]) -> Values:
    """A ``write`` gives None for a key it leaves as the user has it."""
    return (64 if value == "LoRA" else 0, None, None, None)


def _ref_or_rollout(values: Values, settings: Mapping[str, object]) -> object:
    """VERL computes no reference log-probabilities without a KL term (``need_reference_policy``: use_kl_loss or
    use_kl_in_reward), and with LoRA computes them in the actor: in both cases the log-prob passes are the
    rollout's micro-batch."""
    ref, kl_loss, kl_reward = values[0], values[-2], values[-1]
    if kl_loss is not True and kl_reward is not True and (kl_loss is not None or kl_reward is not None):
        return settings.get("rollout_logprob_micro_batch")
    if ref is not None:
        return ref
    return settings.get("rollout_logprob_micro_batch") if _is_lora(*_lora(values[1:-2])) else None


def _ref_back(value: object, settings: Mapping[str, object]) -> Values:
    return (value, 64 if settings.get("adaptation") == "LoRA" else 0, None, None, None, None, None)


def _lora_rank(values: Values, settings: Mapping[str, object]) -> object:
    """The adapter's rank; null when only an adapter path says LoRA (its rank is in the adapter's own config)."""
    rank, adapter = _lora(values)
    return None if adapter is not None and not (isinstance(rank, int) and rank > 0) else rank


def _rank_back(value: object, settings: Mapping[str, object]) -> Values:
    return (value, None, None, None)


def _colocated(values: Values, settings: Mapping[str, object]) -> object:
    return None if values[0] is None else "colocate" if values[0] else "server"


def _hybrid(value: object, settings: Mapping[str, object]) -> Values:
    return (value == "colocate",)


_DTYPES = {"fp32": "fp32", "float32": "fp32", "bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16"}


def _dtype(values: Values, settings: Mapping[str, object]) -> object:
    given = next((v for v in values if v is not None), None)
    return _DTYPES.get(given.lower()) if isinstance(given, str) else None


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
    if not all(isinstance(v, int) and v > 0 for v in (completions, generations)):
        return 0  # not counts: the range checks of the settings they come from say so, before this one's
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


def _any_on(values: Values, settings: Mapping[str, object]) -> object:
    """On when any of the keys is true (VERL's ``need_reference_policy``: use_kl_loss or use_kl_in_reward); null when
    none is given."""
    if all(v is None for v in values):
        return None
    return any(v is True for v in values)


def _first_on(value: object, settings: Mapping[str, object]) -> Values:
    return (value, None)


def _positive(values: Values, settings: Mapping[str, object]) -> object:
    """TRL loads a reference model when ``beta`` (the KL coefficient) is above 0."""
    beta = values[0]
    return None if beta is None else isinstance(beta, (int, float)) and not isinstance(beta, bool) and beta > 0


def _positive_back(value: object, settings: Mapping[str, object]) -> Values:
    return (0.04 if value else 0.0,)


def _other_model(values: Values, settings: Mapping[str, object]) -> object:
    """Whether the first path names another model than the second (their last parts differ); null without it."""
    mine, theirs = values
    if not isinstance(mine, str) or not isinstance(theirs, str):
        return None
    return mine.rstrip("/").rsplit("/", 1)[-1].lower() != theirs.rstrip("/").rsplit("/", 1)[-1].lower()


def _no_keys(value: object, settings: Mapping[str, object]) -> Values:
    return (None, None)
