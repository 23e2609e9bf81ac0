"""TRL's rows of the mapping table: a ``GRPOConfig`` (with the model's keys and the accelerate config's) to the
dataset's settings and the knobs, and the keys that become scope flags. :mod:`.mapping` re-exports them."""

from __future__ import annotations

from .conversions import (
    _as_is,
    _dtype,
    _dtype_back,
    _generation,
    _generation_back,
    _interval,
    _interval_back,
    _offload_back,
    _offloaded,
    _or_prompt_plus_response,
    _peft_back,
    _peft_rank,
    _positive,
    _positive_back,
    _quant_back,
    _quant_bits,
    _same,
    _steps,
    _strategy,
    _strategy_back,
    _trl_batch,
    _trl_batch_back,
    _vllm_mode,
    _vllm_mode_back,
)
from .mapped import Mapped, Scope, _knob

#: The accelerate config's keys a plan reads (nested sections flattened: ``deepspeed_config.zero_stage`` is
#: ``zero_stage``), as accelerate names them.
ACCELERATE_KEYS = {
    "num_processes": "num_processes",
    "num_machines": "num_machines",
    "distributed_type": "distributed_type",
    "deepspeed_config.zero_stage": "zero_stage",
    "deepspeed_config.offload_param_device": "offload_param_device",
    "deepspeed_config.offload_optimizer_device": "offload_optimizer_device",
    "fsdp_config.fsdp_offload_params": "fsdp_offload_params",
    "fsdp_config.fsdp_version": "fsdp_version",
}
#: The accelerate config's place of each key a plan reads from it (``zero_stage`` → ``deepspeed_config.zero_stage``).
ACCELERATE_PLACES = {flat: dotted for dotted, flat in ACCELERATE_KEYS.items()}

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

TRL_MAPPING = (
    *TRL_MAPPING,
    Mapped(
        ("beta",),
        "reference_model",
        "on when beta > 0 (TRL then loads a reference model; with PEFT the base model, adapters disabled)",
        _positive,
        _positive_back,
        False,
        ("float64",),
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

#: Flagged on every row of a TRL config.
TRL_STACK_FLAG = (
    "execution stack: TRL (accelerate), not the measured VERL/vLLM stack; settings are mapped where their meaning holds"
)
