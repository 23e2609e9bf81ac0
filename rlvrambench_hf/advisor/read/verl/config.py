"""A VERL run as a plan: its config tree (YAML, a mapping, or a launch script's overrides over a base config and
VERL's own defaults) read through :data:`~.mapping.VERL_MAPPING`.

VERL's defaults are those of the VERL installed where this runs, found without importing it
(``importlib.util.find_spec``): its packaged, Hydra-composed trainer config ``trainer/config/_generated_ppo_trainer
.yaml`` (older releases: a flat ``ppo_trainer.yaml``). Without VERL, a setting the config leaves out is a one-line
error listing every such key. OmegaConf interpolations of the mapped keys (``${data.max_prompt_length}``,
``${oc.select:key,default}``, ``${oc.env:NAME,default}``) are resolved over the merged tree.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ....data.schema.spec import Column
from ....errors import InputError
from ....userfile import parse_structured, read_text
from ...plan.conversions import _lora
from ...plan.mapping import (
    KL_KEYS,
    LORA_KEYS,
    NO_REFERENCE_FLAG,
    NULL_CONTEXT_FLAG,
    VERL_MAPPING,
    VERL_SCOPE,
    Mapped,
    Scope,
)
from ..checks import quoted
from .hydra import HydraSweep, hydra_value, plain

_ABSENT = object()
#: OmegaConf's value of a mandatory key not yet given.
MISSING_VALUE = "???"
_INTERPOLATION = re.compile(r"^\$\{(.*)\}$", re.S)
#: The packaged trainer configs of VERL, most complete first.
DEFAULT_CONFIGS = ("trainer/config/_generated_ppo_trainer.yaml", "trainer/config/ppo_trainer.yaml")


@dataclass(frozen=True)
class Config:
    """A merged config tree, what it was read from, and whether VERL's defaults are under it; ``given`` is the
    user's own tree (None: all of ``tree``), ``lines`` where each key was written (``run.sh line 12``) and ``notes``
    how a value was derived (a deprecated key converted)."""

    tree: dict[str, Any]
    origin: str
    defaults: str | None
    tool: str = "VERL"
    given: dict[str, Any] | None = None
    lines: Mapping[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)

    def source(self, key: str) -> str:
        """Where the value of ``key`` comes from: the user's file (and line), a conversion, or the defaults."""
        if key in self.notes:
            return self.notes[key]
        if self.given is None or _raw(self.given, key) is not _ABSENT:
            return self.lines.get(key, self.origin)
        if self.tool == "VERL" and self.defaults:
            return f"VERL's default ({short_path(self.defaults)})"
        return f"{self.tool}'s default"


def short_path(path: str) -> str:
    """A packaged config's path from ``verl/trainer/`` on."""
    path = path.replace(os.sep, "/")
    return path[path.rfind("verl/trainer/") :] if "verl/trainer/" in path else path


def verl_folders() -> list[Path]:
    """The folders of the installed ``verl`` package (found, never imported); empty when it is not installed."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("verl")
    except (ImportError, ValueError):
        return []
    return [Path(folder) for folder in (spec.submodule_search_locations or [])] if spec else []


def installed_defaults(relatives: Sequence[str] = DEFAULT_CONFIGS) -> tuple[dict[str, Any], str] | None:
    """VERL's packaged trainer config (the first of ``relatives`` found) and where it is, or None when VERL is not
    importable here."""
    for folder in verl_folders():
        for relative in relatives:
            path = folder / relative
            if path.is_file():
                tree = parse_structured(read_text(path, "VERL's trainer config"), str(path), ".yaml")
                if isinstance(tree, dict):
                    tree.pop("defaults", None)
                    return tree, str(path)
    return None


def merged(base: Mapping[str, Any], overrides: Sequence[tuple[str, str, str | None]], name: str) -> dict[str, Any]:
    """``base`` with Hydra overrides applied in order (``~key`` deletes, ``+`` / ``++`` add)."""
    tree = copy.deepcopy(dict(base))
    for prefix, key, text in overrides:
        parts = key.split(".")
        node = tree
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        if prefix == "~":
            node.pop(parts[-1], None)
            continue
        try:
            node[parts[-1]] = hydra_value(text)
        except HydraSweep as exc:
            raise HydraSweep(f"{name}: {prefix}{key}={exc}") from None
    return tree


def deep_update(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``top`` merged in, nested mappings key by key."""
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            deep_update(base[key], value)
        else:
            base[key] = plain(value)
    return base


def yaml_tree(path: str | os.PathLike[str], name: str, text: str | None = None) -> dict[str, Any]:
    """A VERL config YAML (``text`` when it was read already, e.g. from a pipe) as a tree, ``defaults:`` dropped."""
    if text is None:
        text = read_text(path, "VERL config")
    data = parse_structured(text, name, Path(path).suffix.lower())
    if not isinstance(data, dict):
        raise InputError(f"{name}: a VERL config is a mapping (actor_rollout_ref:, data:, trainer:, ...)")
    data.pop("defaults", None)
    return data


def with_defaults(
    top: Mapping[str, Any],
    origin: str,
    *,
    packaged: Sequence[str] = DEFAULT_CONFIGS,
    lines: Mapping[str, str] | None = None,
) -> Config:
    """``top`` over VERL's installed defaults (when VERL is importable; ``packaged``: which of its configs); what
    VERL does to it before a run is :func:`~.verlcheck.checked`'s."""
    found = installed_defaults(packaged)
    base, where = found if found else ({}, None)
    return Config(deep_update(copy.deepcopy(base), top), origin, where, given=copy.deepcopy(dict(top)),
                  lines=dict(lines or {}))  # fmt: skip


def lookup(tree: Mapping[str, Any], key: str, origin: str, depth: int = 0) -> object:
    """The value of a dotted ``key`` (:data:`_ABSENT` if absent, or OmegaConf's mandatory ``???`` that no one
    filled in, as VERL's own ``rollout.name``), interpolations resolved."""
    node = _raw(tree, key)
    if node is _ABSENT or node == MISSING_VALUE:
        return _ABSENT
    if isinstance(node, str) and _INTERPOLATION.match(node):
        return _interpolated(tree, key, node, origin, depth)
    return node


def _interpolated(tree: Mapping[str, Any], key: str, text: str, origin: str, depth: int) -> object:
    if depth > 20:
        raise InputError(f"{origin}: {key}: interpolation {quoted(text)} refers to itself")
    body = _INTERPOLATION.match(text).group(1).strip()  # type: ignore[union-attr]
    resolver, _, arguments = body.partition(":") if body.startswith("oc.") else ("", "", body)
    target, _, fallback = arguments.partition(",")
    if resolver == "oc.env":
        value = os.environ.get(target.strip())
        if value is not None:
            return hydra_value(value)
        if fallback:
            return hydra_value(fallback)
        raise InputError(f"{origin}: {key}: {quoted(text)} needs the environment variable {target.strip()}, not set")
    if resolver not in ("", "oc.select"):
        raise InputError(f"{origin}: {key}: the resolver of {quoted(text)} is not one this reader knows")
    target = target.strip()
    if target.startswith("."):
        target = ".".join(key.split(".")[:-1] + [target.lstrip(".")])
    found = lookup(tree, target, origin, depth + 1)
    if found is _ABSENT:
        if resolver == "oc.select":
            return hydra_value(fallback) if fallback else None
        raise InputError(f"{origin}: {key}: {quoted(text)} refers to {target}, which the config does not have")
    return found


def record_of(
    config: Config,
    columns: Mapping[str, Column],
    mapping: Sequence[Mapped] = VERL_MAPPING,
    scope: Sequence[Scope] = VERL_SCOPE,
    preset: Mapping[str, object] | None = None,
) -> tuple[dict[str, Any], dict[str, str], list[str], dict[str, str]]:
    """The settings of a VERL config (through the mapping table), each as written, its scope flags and where each
    setting's value comes from.

    ``columns`` maps each setting to its registry column; a key's value is checked against the type of the setting
    it gives before any conversion. A key whose setting is needed and that has no value is a one-line error listing
    them all. ``preset`` settings (given by the caller in the dataset's vocabulary) are taken as they are.
    """
    from ..checks import fail, type_problem

    settings: dict[str, object] = {}
    missing, flags = [], []
    sources: dict[str, str] = {}
    for mapped in mapping:
        if preset and mapped.setting in preset:
            settings[mapped.setting] = preset[mapped.setting]
            sources[mapped.setting] = "given setting"
            continue
        values = [lookup(config.tree, key, config.origin) for key in mapped.keys]
        used = [config.source(k) for k, v in zip(mapped.keys, values) if v is not _ABSENT and v is not None]
        sources[mapped.setting] = "; ".join(dict.fromkeys(used)) or f"not given ({mapped.conversion})"
        kinds = mapped.kinds or (columns[mapped.setting].kind,) * len(mapped.keys)
        for key, kind, value in zip(mapped.keys, kinds, values):
            column = Column(key, kind, key)
            problem = None if value is None or value is _ABSENT else type_problem(value, column)
            if problem:
                raise fail(f"{config.origin}: {key}", value, problem)
        given = [None if v is _ABSENT else v for v in values]
        settings[mapped.setting] = mapped.read(given, settings)
        if mapped.setting == "max_model_len" and given[0] is None and settings["max_model_len"] is not None:
            flags.append(NULL_CONTEXT_FLAG.format(key=mapped.keys[0], value=settings["max_model_len"]))
        if mapped.required and settings[mapped.setting] is None and not _waits_on_another(mapped, given, settings):
            missing += [k for k, v in zip(mapped.keys, given) if v is None and k not in mapped.optional]
    if missing:
        raise InputError(_missing_text(config, list(dict.fromkeys(missing))))
    written = {m.setting: m.written for m in mapping}
    return settings, written, scope_flags(config, scope) + flags, sources


def _waits_on_another(mapped: Mapped, given: list[object], settings: Mapping[str, object]) -> bool:
    """Whether ``mapped`` would be read from the setting it derives from, were that one given (so that only that
    one is named as missing)."""
    other = mapped.derived_from
    if other is None or settings.get(other) is not None:
        return False
    return mapped.read(given, {**settings, other: 1}) is not None


def _missing_text(config: Config, keys: list[str]) -> str:
    if config.tool != "VERL" and "max_prompt_length" in keys:  # GRPOConfig no longer has it (trl 1.16)
        where = (
            "not set (this TRL does not cap prompts: give the longest prompt of your data in tokens, "
            "--setting max_prompt_length=N)"
        )
    elif config.tool != "VERL":
        where = f"not set (give them in the {config.tool} config, or the accelerate config with --accelerate-config)"
    elif config.defaults:
        where = f"not set, and null in VERL's defaults ({short_path(config.defaults)})"
    else:
        where = "not set, and VERL is not installed here to give its defaults"
    if lookup(config.tree, "actor_rollout_ref.actor.use_dynamic_bsz", config.origin) is True:
        where += "; with use_dynamic_bsz its token budget per GPU (..._max_token_len_per_gpu) gives it"
    return fitting(keys, lambda named: f"{config.origin}: missing {config.tool} setting(s) {named}: {where}")


def fitting(items: Sequence[str], render: Callable[[str], str]) -> str:
    """``render`` of as many whole ``items`` as keep the line within the error length ("a, b and 3 more"), so that
    no name is ever cut."""
    from ....errors import MESSAGE_LIMIT

    for shown in range(len(items), 0, -1):
        text = render(whole_names(items, shown))
        if len(text) <= MESSAGE_LIMIT:
            return text
    return render(whole_names(items, 1))


def whole_names(items: Sequence[str], shown: int) -> str:
    """The first ``shown`` names, each whole (non-printable characters escaped, never cut), and how many more."""
    names = ["".join(c if c.isprintable() else repr(c)[1:-1] for c in str(item)) for item in items[:shown]]
    return ", ".join(names) + (f" and {len(items) - shown:,} more" if len(items) > shown else "")


def scope_flags(config: Config, scope: Sequence[Scope]) -> list[str]:
    """The flags of the keys whose value differs from the measured one (or that no config or default gives)."""
    flags = []
    lora = (lookup(config.tree, key, config.origin) for key in LORA_KEYS)
    rank, adapter = _lora([None if v is _ABSENT else v for v in lora])
    for s in scope:
        value = rank if s.key == LORA_KEYS[0] else lookup(config.tree, s.key, config.origin)
        if s.key == "actor_rollout_ref.model.lora_rank" and isinstance(adapter, str) and value in (0, None, _ABSENT):
            flags.append(f"LoRA rank not known: the adapter at lora_adapter_path {quoted(adapter)} is not here to read "
                         f"its r (the measurements use rank-64 adapters)")  # fmt: skip
            continue
        if s.key == "actor_rollout_ref.model.lora_rank" and value == 0:
            flags.append("full fine-tuning: lora_rank 0 (the measurements train rank-64 LoRA adapters)")
            continue
        if value is _ABSENT or value is None:
            measured = ", ".join(map(str, s.measured))
            if _raw(config.tree, s.key) == MISSING_VALUE:
                flags.append(f"{s.key} not given, and {config.tool} requires it (measured: {measured})")
            elif config.defaults is None and not s.absent_is_measured:
                flags.append(f"{s.key} not given (measured: {measured})")
            continue
        if value not in s.measured and not _same_text(value, s.measured):
            flags.append(s.flag.format(value=quoted(value)))
    kl = [lookup(config.tree, key, config.origin) for key in KL_KEYS]
    if True not in kl and any(v is not _ABSENT and v is not None for v in kl):
        flags.append(NO_REFERENCE_FLAG)
    return flags


def _raw(tree: Mapping[str, Any], key: str) -> object:
    """The value written at a dotted ``key`` (:data:`_ABSENT` if absent), nothing resolved."""
    node: object = tree
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _ABSENT
        node = node[part]
    return node


def _same_text(value: object, measured: tuple[object, ...]) -> bool:
    """Lists of target modules compare as their comma-joined text; strings case-insensitively."""
    text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
    return any(isinstance(m, str) and text.lower() == m.lower() for m in measured)
