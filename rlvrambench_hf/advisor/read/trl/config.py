"""A TRL GRPO run as a plan: a ``GRPOConfig`` as the YAML / JSON that ``trl grpo --config`` takes (GRPOConfig
fields, the model's ``model_name_or_path`` / ``use_peft`` / ``lora_r``, and accelerate's ``num_processes``), or any
object with GRPOConfig's fields (trl itself is not needed), read through :data:`~.mapping.TRL_MAPPING`.

Every plan read from TRL carries :data:`~.mapping.TRL_STACK_FLAG`; the keys given that have no counterpart in the
measured settings are named once, in one flag.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....data.schema.spec import Column
from ....errors import InputError, quote
from ....userfile import parse_json, parse_structured, read_text
from ...plan.mapping import TRL_MAPPING, TRL_SCOPE, TRL_STACK_FLAG, mapped_keys
from ...plan.trl_mapping import ACCELERATE_KEYS
from ..verl.config import Config
from ..verl.hydra import plain
from ..verl.record import record_of

if TYPE_CHECKING:  # pragma: no cover
    from ...plan.mapped import Scope

#: How many unmapped keys the flag names before it counts the rest.
NAMED = 8

#: What a key a TRL config leaves out is, as ``trl grpo`` runs it: the defaults of GRPOConfig and of transformers'
#: TrainingArguments (trl 1.16), and of accelerate (one machine).
TRL_DEFAULTS: dict[str, object] = {
    "num_machines": 1,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "generation_batch_size": None,
    "steps_per_generation": None,
    "num_generations": 8,
    "max_completion_length": 512,
    "use_vllm": False,
    "vllm_mode": "colocate",
    "vllm_enable_sleep_mode": False,
    "vllm_gpu_memory_utilization": 0.3,
    "vllm_tensor_parallel_size": 1,
    "vllm_max_model_length": None,
    "max_steps": -1,
    "save_strategy": "steps",
    "save_steps": 500,
    "eval_strategy": "no",
    "gradient_checkpointing": True,
    "distributed_type": None,
    "offload_param_device": "none",
    "offload_optimizer_device": "none",
    "fsdp_offload_params": False,
}
#: The model's keys that ``trl grpo`` reads from the same file (TRL's ModelConfig defaults); a GRPOConfig object
#: has none of them, so its adaptation is not known.
TRL_MODEL_DEFAULTS: dict[str, object] = {
    "use_peft": False,
    "lora_r": 16,
    "load_in_4bit": False,
    "load_in_8bit": False,
    "dtype": "float32",
}
TRL_CONSTANTS: dict[str, object] = {"algorithm": "GRPO", "advantage_estimator": "grpo"}
#: Keys ``trl grpo --config`` takes that set no memory-relevant setting here (neither mapped nor said unmapped).
TRL_QUIET = frozenset(
    """output_dir run_name dataset_name dataset_config dataset_train_split dataset_test_split logging_steps
    report_to seed learning_rate lr_scheduler_type warmup_ratio warmup_steps push_to_hub hub_model_id
    logging_dir reward_funcs reward_model_name_or_path torch_dtype dtype lora_alpha lora_dropout
    num_train_epochs bf16 fp16 use_liger_kernel loss_type scale_rewards temperature top_p top_k epsilon
    log_completions num_completions_to_print hub_strategy overwrite_output_dir do_eval per_device_eval_batch_size
    gradient_checkpointing_kwargs max_grad_norm lr_scheduler_kwargs reward_weights chat_template system_prompt
    dataset_prompt_column dataset_mixture callbacks model_revision attn_implementation trust_remote_code
    hub_private_repo save_total_limit save_only_model wandb_entity wandb_project log_level""".split()
)


def trl_fields(config: object) -> tuple[dict[str, Any], set[str]]:
    """The fields of a GRPOConfig-like object (a dataclass, or anything with attributes) as plain values, and the
    fields it sets (those of a dataclass that differ from their defaults)."""
    if isinstance(config, Mapping):
        fields = {str(k): plain(v) for k, v in config.items()}
        return fields, set(fields)
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        fields = {f.name: plain(getattr(config, f.name, None)) for f in dataclasses.fields(config)}
        given = {f.name for f in dataclasses.fields(config) if fields[f.name] != plain(_default(f))}
        return fields, given
    found = {k: v for k, v in vars(config).items() if not k.startswith("_")} if hasattr(config, "__dict__") else {}
    if "num_generations" not in found and "per_device_train_batch_size" not in found:
        raise InputError(
            f"a {type(config).__name__} is not a GRPOConfig (it has no num_generations, per_device_train_batch_size)"
        )
    fields = {k: plain(v) for k, v in found.items()}
    return fields, set(fields)


def _default(field: dataclasses.Field[Any]) -> object:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def accelerate_fields(path: object, fields: Mapping[str, Any], origin: str) -> dict[str, Any]:
    """The keys of an accelerate config (``accelerate launch --config_file``) a plan reads, flattened; a key the TRL
    config gives too must agree (accelerate's ``num_processes`` is the total over all machines)."""
    name = str(path)
    if not isinstance(path, (str, os.PathLike)):
        raise InputError("the accelerate config is a file path (YAML or JSON)")
    data = parse_structured(read_text(path, "accelerate config"), name, Path(path).suffix.lower() or ".yaml")
    if not isinstance(data, dict) or not ({"distributed_type", "num_processes", "compute_environment"} & set(data)):
        raise InputError(f"{name}: an accelerate config is a mapping (distributed_type:, num_processes:, ...)")
    check_accelerate(data, name)
    found: dict[str, object] = {}
    for dotted, key in ACCELERATE_KEYS.items():
        section, _, leaf = dotted.rpartition(".")
        node = data.get(section) if section else data
        if isinstance(node, Mapping) and node.get(leaf) is not None:
            found[key] = node[leaf]
    deepspeed = data.get("deepspeed_config")
    if isinstance(deepspeed, Mapping) and deepspeed.get("deepspeed_config_file"):
        found = {**_deepspeed_file(deepspeed["deepspeed_config_file"], Path(name)), **found}
    for key, value in found.items():
        if key in fields and fields[key] != value:
            raise InputError(
                f"{origin}: {key} = {quote(fields[key])} but the accelerate config {name} gives {quote(value)}"
            )
    return found


#: The DeepSpeed config's keys a plan reads (``zero_optimization`` section), as the accelerate keys they stand for.
DEEPSPEED_KEYS = {
    ("zero_optimization", "stage"): "zero_stage",
    ("zero_optimization", "offload_param", "device"): "offload_param_device",
    ("zero_optimization", "offload_optimizer", "device"): "offload_optimizer_device",
}


def _deepspeed_file(given: object, accelerate: Path) -> dict[str, Any]:
    """The ZeRO stage and offload devices of the DeepSpeed JSON an accelerate config names
    (``deepspeed_config.deepspeed_config_file``), looked for from the accelerate config's folder up, then from here;
    ``"auto"`` values are left to accelerate (not read)."""

    where = f"{accelerate}: deepspeed_config.deepspeed_config_file"
    if not isinstance(given, str):
        raise InputError(f"{where} is not a path: {quote(given)}")
    path = Path(given)
    places = [path] if path.is_absolute() else [f / path for f in (accelerate.parent, *accelerate.parent.parents)][:6]
    found = next((p for p in [*places, path] if p.is_file()), None)
    if found is None:
        raise InputError(f"{where}: {quote(given)} is not here (looked from {accelerate.parent} up)")
    label = f"{where}: the DeepSpeed config"
    data = parse_json(read_text(found, label), f"{label} {quote(str(found))}")  # depth and digits bounded
    out: dict[str, Any] = {}
    for keys, name in DEEPSPEED_KEYS.items():
        node: object = data
        for key in keys:
            node = node.get(key) if isinstance(node, Mapping) else None
        if node is not None and node != "auto":
            out[name] = node
    return out


#: The ``distributed_type`` values accelerate has (``accelerate.utils.DistributedType``).
DISTRIBUTED_TYPES = (
    *("NO", "MULTI_CPU", "MULTI_GPU", "MULTI_NPU", "MULTI_MLU", "MULTI_SDAA", "MULTI_MUSA", "MULTI_XPU", "MULTI_HPU"),
    *("DEEPSPEED", "FSDP", "XLA", "MEGATRON_LM"),
)


def check_accelerate(data: Mapping[str, Any], name: str) -> None:
    """What accelerate and DeepSpeed refuse before launching: a key that is not what it shows (an invisible or
    control character in it), a ``distributed_type`` accelerate does not have, a ZeRO stage outside 0-3, more
    machines than processes (``num_processes`` counts them over all machines)."""
    import unicodedata

    for key in _keys(data):
        if any(unicodedata.category(c) in ("Cc", "Cf") for c in key):
            raise InputError(f"{name}: key {quote(key)} holds an invisible or control character")
    kind = data.get("distributed_type")
    if kind is not None and str(kind).upper() not in DISTRIBUTED_TYPES:
        known = ", ".join(DISTRIBUTED_TYPES[:3])
        raise InputError(f"{name}: distributed_type {quote(kind)} is not one accelerate has ({known}, DEEPSPEED, ...)")
    deepspeed = data.get("deepspeed_config")
    stage = deepspeed.get("zero_stage") if isinstance(deepspeed, Mapping) else None
    if stage is not None and (isinstance(stage, bool) or stage not in (0, 1, 2, 3)):
        raise InputError(f"{name}: deepspeed_config.zero_stage {quote(stage)} is not a ZeRO stage (0, 1, 2 or 3)")
    machines, processes = data.get("num_machines"), data.get("num_processes")
    if machines is not None and not _count(machines):
        raise InputError(f"{name}: num_machines {quote(machines)} is not a count of machines (1 or more)")
    if _count(machines) and _count(processes) and machines > processes:  # type: ignore[operator]
        raise InputError(
            f"{name}: num_machines {quote(machines)} is more than num_processes {quote(processes)}: accelerate's "
            "num_processes counts the processes of all machines"
        )


def _keys(node: object) -> list[str]:
    if not isinstance(node, Mapping):
        return []
    return [str(k) for k in node] + [k for v in node.values() for k in _keys(v)]


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def trl_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The fields of a TRL config file (YAML or JSON), or of a TRL training script (``.py``, :mod:`.script`)."""
    name = str(path)
    if Path(path).suffix.lower() == ".py":
        from ....userfile import MAX_SCRIPT_BYTES
        from .script import script_fields

        text = read_text(path, "TRL script", MAX_SCRIPT_BYTES)
        return script_fields(text, name, mapped_keys(TRL_MAPPING, TRL_SCOPE) | set(ACCELERATE_KEYS.values()))
    data = parse_structured(read_text(path, "TRL config"), name, Path(path).suffix.lower())
    if not isinstance(data, dict):
        raise InputError(f"{name}: a TRL config is a mapping of GRPOConfig fields (num_generations: 8, ...)")
    return data


#: Fields of TRL's SFTConfig that GRPOConfig does not have, and GRPOConfig's own: a config with the first and none
#: of the second is a supervised fine-tuning run (TRL 1.16's ``sft_config.py`` and ``grpo_config.py``; older TRL's
#: ``max_seq_length``; open-r1's ``reward_funcs`` script argument).
SFT_ONLY = frozenset(
    {"packing", "packing_strategy", "padding_free", "dataset_text_field", "completion_only_loss", "assistant_only_loss",
     "max_length", "max_seq_length", "eval_packing"}
)  # fmt: skip
GRPO_ONLY = frozenset(
    {"num_generations", "max_completion_length", "reward_funcs", "reward_weights", "use_vllm", "beta",
     "generation_batch_size", "steps_per_generation", "vllm_mode", "num_iterations"}
)  # fmt: skip


def trl_record(
    fields: Mapping[str, Any],
    given: set[str],
    origin: str,
    columns: Mapping[str, Column],
    preset: Mapping[str, object],
    *,
    with_model: bool,
    launcher: tuple[Mapping[str, object], Mapping[str, str]] | None = None,
) -> tuple[tuple[dict[str, Any], dict[str, str], list[str], dict[str, str]], Config]:
    """Settings, how each was written, the scope flags and each setting's source of one TRL config (``given``: the
    fields it sets; ``with_model``: a file or mapping for ``trl grpo``, whose model keys take ModelConfig's
    defaults; ``launcher``: the keys the launch gives (its accelerate config and options) and where each is from),
    and the config read."""
    odd = sorted(k for k in given if not (k.isascii() and k.isidentifier()))
    if odd:  # no field of GRPOConfig, ModelConfig or accelerate: an invisible character or a look-alike letter
        raise InputError(f"{origin}: key {quote(odd[0])} is not a TRL field name (those are ASCII identifiers)")
    trainer = sorted(given & SFT_ONLY)
    if trainer and not given & GRPO_ONLY:  # TRL's parser would refuse these fields for a GRPO run
        raise InputError(
            f"{origin}: an SFTConfig ({', '.join(trainer[:3])}), not a GRPOConfig: the advisor answers GRPO runs "
            "(num_generations, max_completion_length, use_vllm, ...)"
        )
    accelerate, launched = launcher or ({}, {})
    user = {**accelerate, **{k: fields[k] for k in given if k in fields}}
    if "torch_dtype" in user and "dtype" not in user:  # older TRL's name wins over ModelConfig's default
        user["dtype"] = user["torch_dtype"]
    tree = {**TRL_DEFAULTS, **(TRL_MODEL_DEFAULTS if with_model else {}), **fields, **user}
    lines = dict(launched)
    config = Config(tree, origin, None, "TRL", given=user, lines=lines)
    settings, written, flags, sources = record_of(config, columns, TRL_MAPPING, _scope(tree), preset)
    if isinstance(settings.get("train_batch_size"), float):
        raise InputError(
            f"{origin}: per_device_train_batch_size × GPUs × steps per generation = "
            f"{int(settings['train_batch_size'] * settings['rollout_n'])} completions is not divisible by "
            f"num_generations = {settings['rollout_n']}"
        )
    if tree.get("use_vllm") is not True or tree.get("vllm_mode") != "colocate":  # no vLLM here: no context
        flags = [f for f in flags if not f.startswith("vllm_max_model_length not set")]
    settings.update(TRL_CONSTANTS)
    sources.update(dict.fromkeys(TRL_CONSTANTS, "trl grpo"))
    peft = tree.get("use_peft")
    adaptation = "LoRA" if peft is True else "none" if peft is False else None  # None: not known (an object)
    settings["adaptation"] = preset.get("adaptation", adaptation)
    sources["adaptation"] = config.source("use_peft")
    unmapped = sorted(given - mapped_keys(TRL_MAPPING, TRL_SCOPE) - TRL_QUIET)
    if unmapped:
        named = ", ".join(unmapped[:NAMED]) + (f" and {len(unmapped) - NAMED} more" if len(unmapped) > NAMED else "")
        flags.append(f"TRL settings with no counterpart in the measurements, not taken into account: {named}")
    quiet = sorted((given & TRL_QUIET) | set(unmapped[NAMED:]))
    if quiet:
        config.reads.append(f"not used by the answer (no floor, phase or scope reads them): {', '.join(quiet)}")
    return (settings, written, [TRL_STACK_FLAG, *flags], sources), config


def _scope(tree: Mapping[str, Any]) -> tuple[Scope, ...]:
    """The scope rows that apply: LoRA's rank and targets only with PEFT, vLLM's mode only with vLLM (so that no
    flag contradicts another)."""
    skip = set()
    if tree.get("use_peft") is not True:
        skip |= {"lora_r", "lora_target_modules"}
    if tree.get("use_vllm") is not True:
        skip.add("vllm_mode")
    return tuple(s for s in TRL_SCOPE if s.key not in skip)
