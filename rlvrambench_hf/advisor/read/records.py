"""VERL, EasyR1 and TRL configs as records in the dataset's vocabulary, before they are typed and checked: one per
VERL launch or config (TRL: one), with how each setting was written, the scope flags the config raises, where each
value came from, the ``read:`` lines of the reading and, per setting, the environment variable its value came from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...data.schema.registry import get_spec
from ..plan.plans import SETTINGS_CONFIG
from .lengths import vllm_context
from .measured import Measured


@dataclass
class Records:
    records: list[dict[str, Any]] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)
    written: dict[str, str] = field(default_factory=dict)
    flags: list[list[str]] = field(default_factory=list)
    sources: list[dict[str, str]] = field(default_factory=list)
    notes: list[list[str]] = field(default_factory=list)
    environment: list[dict[str, str]] = field(default_factory=list)


def config_records(
    plans: object,
    kind: str,
    measured: Measured,
    preset: Mapping[str, object],
    *,
    command_line: bool = False,
    accelerate: object = None,
    infer_workload: bool = False,
    **launch: Any,
) -> Records:
    """The records of a VERL (or EasyR1) launch file or a TRL config, script or launcher (``launch``: the script's
    ``arguments``, the ``verl_version``); with ``infer_workload``, each record's workload from its data files
    (:mod:`.workloads`)."""
    arguments: Sequence[str] | None = launch.get("arguments")
    verl_version: str | None = launch.get("verl_version")
    from ..plan.knobs import knob_columns

    columns = {c.name: c for c in get_spec(SETTINGS_CONFIG).columns} | knob_columns()
    out = Records()
    if kind == "trl":
        from .trl.plan import trl_plan

        found, config = trl_plan(plans, columns, preset, accelerate, arguments)
        _add(out, found, config, measured, "TRL", infer_workload)
        return out
    from ..plan.mapping import VERL_MAPPING, VERL_SCOPE, mapped_keys
    from .verl.checks import DEPRECATED, FORK_KEYS, unread_flag, unread_keys
    from .verl.compose import verl_configs
    from .verl.record import record_of

    configs = verl_configs(plans, command_line=command_line, preset=preset, arguments=arguments,
                           verl_version=verl_version)  # fmt: skip
    read = mapped_keys(VERL_MAPPING, VERL_SCOPE) | {old for old, _, _ in DEPRECATED} | set(FORK_KEYS)
    for config in configs:
        found = record_of(config, columns, preset=preset)
        if config.tool == "EasyR1":
            from .verl.easyr1 import easyr1_written

            found = (found[0], easyr1_written(found[1]), found[2], found[3])
        else:
            flag = unread_flag(config, read)
            found[2].extend(flag)
            config.reads.extend(unread_keys(config, read, flag))
        _add(out, found, config, measured, config.tool, infer_workload)
    return out


def _add(out: Records, found: tuple[Any, ...], config: Any, measured: Measured, tool: str, infer: bool) -> None:
    from .models import model_of_path

    settings, written, flags, sources = found
    if infer:
        _workload(settings, sources, config, measured)
    if isinstance(settings.get("model_id"), str):
        settings["model_id"], note = model_of_path(settings["model_id"], measured.models)
        if note:
            sources["model_id"] = f"{sources.get('model_id', '')} ({note})"
    vllm_context(settings, sources, config, tool, measured)
    out.records.append(settings)
    out.origins.append(config.origin)
    out.written = out.written or written
    out.flags.append(flags)
    out.sources.append(sources)
    out.notes.append(list(config.reads))
    out.environment.append(_environment(config, written))


def _workload(settings: dict[str, Any], sources: dict[str, str], config: Any, measured: Measured) -> None:
    """The workload the config's data files name (:func:`.workloads.infer_workload`), with its ``read:`` line; the
    keys it read leave the line of keys the answer does not use."""
    from .workloads import DATA_KEYS, infer_workload

    given = config.given if config.given is not None else config.tree
    where = {key: config.source(key) for key in DATA_KEYS}
    workload, key, line = infer_workload(given, where, measured, config.origin)
    if workload is not None and key is not None:
        settings["workload_id"] = workload
        sources["workload_id"] = f"{key} ({where[key]})"
    config.reads[:] = [line, *(text for text in (_without(r, DATA_KEYS) for r in config.reads) if text)]


#: The ``read:`` line that names the keys no floor, phase or scope reads.
UNUSED_LINE = "not used by the answer (no floor, phase or scope reads them): "


def _without(line: str, keys: Sequence[str]) -> str:
    """``line`` without ``keys`` when it is the line of unused keys (empty when none is left)."""
    if not line.startswith(UNUSED_LINE):
        return line
    kept = [k for k in line[len(UNUSED_LINE) :].split(", ") if k not in keys]
    return UNUSED_LINE + ", ".join(kept) if kept else ""


def _environment(config: Any, written: Mapping[str, str]) -> dict[str, str]:
    """Per setting, the environment variable its value came from (the first of its keys that has one)."""
    names: Mapping[str, list[str]] = getattr(config, "environment", {}) or {}
    out: dict[str, str] = {}
    for setting, keys in written.items():
        for key in keys.replace(" × ", ", ").split(", "):
            if names.get(key):
                out[setting] = names[key][0]
                break
    return out


def is_command_line(text: str) -> bool:
    """Whether ``text`` is a command line of overrides rather than a file's path."""
    from pathlib import Path

    if not (("\n" in text or " " in text) and "=" in text):
        return False
    try:
        return not Path(text).exists()
    except (OSError, ValueError):  # a name too long for a path is no file
        return True
