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

from ..data.schema.spec import Column
from ..errors import InputError
from .mapping import TRL_DEFAULTS, TRL_MAPPING, TRL_QUIET, TRL_SCOPE, TRL_STACK_FLAG, mapped_keys
from .userfile import parse_structured, read_text
from .verl import Config, plain, record_of

#: How many unmapped keys the flag names before it counts the rest.
NAMED = 8


def trl_fields(config: object) -> tuple[dict, set[str]]:
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


def _default(field: dataclasses.Field) -> object:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def trl_file(path: str | os.PathLike) -> dict:
    name = str(path)
    data = parse_structured(read_text(path, "TRL config"), name, Path(path).suffix.lower())
    if not isinstance(data, dict):
        raise InputError(f"{name}: a TRL config is a mapping of GRPOConfig fields (num_generations: 8, ...)")
    return data


def trl_record(
    fields: Mapping, given: set[str], origin: str, columns: Mapping[str, Column], preset: Mapping[str, object]
) -> tuple[dict, dict[str, str], list[str]]:
    """Settings, how each was written and the scope flags of one TRL config (``given``: the fields it sets)."""
    from .mapping import TRL_CONSTANTS

    tree = {**TRL_DEFAULTS, **{k: v for k, v in fields.items()}}
    settings, written, flags = record_of(Config(tree, origin, None, "TRL"), columns, TRL_MAPPING, TRL_SCOPE, preset)
    if isinstance(settings.get("train_batch_size"), float):
        raise InputError(
            f"{origin}: per_device_train_batch_size × GPUs × steps per generation = "
            f"{int(settings['train_batch_size'] * settings['rollout_n'])} completions is not divisible by "
            f"num_generations = {settings['rollout_n']}"
        )
    settings.update(TRL_CONSTANTS)
    settings["adaptation"] = "LoRA" if fields.get("use_peft") else "none"
    unmapped = sorted(given - mapped_keys(TRL_MAPPING, TRL_SCOPE) - TRL_QUIET)
    if unmapped:
        named = ", ".join(unmapped[:NAMED]) + (f" and {len(unmapped) - NAMED} more" if len(unmapped) > NAMED else "")
        flags.append(f"TRL settings with no counterpart in the measurements, not taken into account: {named}")
    return settings, written, [TRL_STACK_FLAG, *flags]
