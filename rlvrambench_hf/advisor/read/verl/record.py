"""A config tree as a record in the dataset's vocabulary, through the mapping table (:data:`~.mapping.VERL_MAPPING`,
or TRL's): each key read as OmegaConf reads it (:mod:`.values`), type-checked against the setting it gives, converted,
and named where it came from; a setting that is needed and not given is one line naming every such key; the scope
flags of the keys whose values the measurements did not use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ....data.schema.spec import Column
from ....errors import InputError
from ...plan.conversions import _lora
from ...plan.mapping import KL_KEYS, LORA_KEYS, NO_REFERENCE_FLAG, VERL_MAPPING, VERL_SCOPE, Mapped, Scope
from ..checks import quoted
from .config import _ABSENT, MISSING_VALUE, Config, _raw, lookup, short_path
from .values import as_omegaconf


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
    missing: list[str] = []
    sources: dict[str, str] = {}
    for mapped in mapping:
        if preset and mapped.setting in preset:
            settings[mapped.setting] = preset[mapped.setting]
            sources[mapped.setting] = "given setting"
            continue
        kinds = mapped.kinds or (columns[mapped.setting].kind,) * len(mapped.keys)
        values, changed = [], []
        for key, kind in zip(mapped.keys, kinds):
            value, note = _typed(lookup(config.tree, key, config.origin), kind)
            problem = None if value is None or value is _ABSENT else type_problem(value, Column(key, kind, key))
            names = config.environment.get(key)
            if problem and names:
                named = f"the value of ${names[0]} (from the environment)"
                raise InputError(f"{config.origin}: {key}: {named} is {problem}")
            if problem:
                raise fail(f"{config.origin}: {key}", value, problem)
            values.append(value)
            changed += [f"{key.rsplit('.', 1)[-1]}: {note}"] if note else []
        used = [config.source(k) for k, v in zip(mapped.keys, values) if (v is not _ABSENT and v is not None)
                or k in config.notes]  # fmt: skip
        own = [u for u in used if not u.endswith(_DEFAULTED) and "'s default (" not in u]  # the user's own first
        sources[mapped.setting] = "; ".join(dict.fromkeys(own or used)) or f"not given ({mapped.conversion})"
        if changed:
            sources[mapped.setting] += f" ({'; '.join(changed)})"
        given = [None if v is _ABSENT else v for v in values]
        settings[mapped.setting] = mapped.read(given, settings)
        if mapped.required and settings[mapped.setting] is None and not _waits_on_another(mapped, given, settings):
            missing += [k for k, v in zip(mapped.keys, given) if v is None and k not in mapped.optional]
    missing = [k for k in missing if k not in config.notes]  # not read on purpose: its reading says why
    if missing:
        raise InputError(_missing_text(config, list(dict.fromkeys(missing))))
    written = {m.setting: m.written for m in mapping}
    return settings, written, scope_flags(config, scope) + list(config.flags), sources


_DEFAULTED = "'s default"


def _typed(value: object, kind: str) -> tuple[object, str | None]:
    """A looked-up value as OmegaConf's node of ``kind`` reads it (absent and null stay so)."""
    if value is _ABSENT or value is None:
        return value, None
    return as_omegaconf(value, kind)


def _waits_on_another(mapped: Mapped, given: list[object], settings: Mapping[str, object]) -> bool:
    """Whether ``mapped`` would be read from the setting it derives from, were that one given (so that only that
    one is named as missing)."""
    other = mapped.derived_from
    if other is None or settings.get(other) is not None:
        return False
    return mapped.read(given, {**settings, other: 1}) is not None


def _missing_text(config: Config, keys: list[str]) -> str:
    if config.tool == "TRL":
        hints = []
        if "num_processes" in keys:
            hints.append("the GPU count: --setting gpu_count=N, or --accelerate-config FILE")
        if "max_prompt_length" in keys:  # GRPOConfig no longer has it (trl 1.16)
            hints.append("this TRL does not cap prompts: --setting max_prompt_length=N")
        if set(keys) - {"num_processes", "max_prompt_length"}:
            hints.append("the others in the TRL config" if hints else "give them in the TRL config")
        where = f"not set ({'; '.join(hints)})"
    elif config.defaults:
        where = f"not set, and null in {config.label}'s defaults ({short_path(config.defaults)})"
    else:
        where = f"not set, and {config.tool} gives no default"
    if set(keys) & config.removed:
        where += "; deleted with ~ (Hydra deletes a key and its default: VERL then fails without it)"
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


def _same_text(value: object, measured: tuple[object, ...]) -> bool:
    """Lists of target modules compare as their comma-joined text; strings case-insensitively."""
    text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
    return any(isinstance(m, str) and text.lower() == m.lower() for m in measured)
