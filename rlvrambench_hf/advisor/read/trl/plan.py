"""A TRL run as one plan, whichever way it is given: a GRPOConfig YAML / JSON (with ``--field value`` arguments over
it, as ``trl grpo --config`` takes them), a training script (:mod:`.script`), a shell launcher
(:mod:`.launcher`: ``accelerate launch ... script.py --config Y``), a mapping or a GRPOConfig-like object; with
the accelerate config it is launched with (the launcher's ``--config_file``, or ``--accelerate-config``) and the
launcher's own options over it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ....data.schema.spec import Column
from ....errors import InputError, quote
from ....userfile import MAX_SCRIPT_BYTES, parse_structured, read_text
from ...plan.mapping import TRL_MAPPING, TRL_SCOPE, mapped_keys
from ...plan.trl_mapping import ACCELERATE_KEYS
from ..verl.config import Config
from .config import accelerate_fields, check_accelerate, trl_fields, trl_record

_LAUNCHERS = (".sh", ".bash", ".sbatch", ".slurm")


def trl_plan(
    plans: object,
    columns: Mapping[str, Column],
    preset: Mapping[str, object],
    accelerate: object,
    arguments: Sequence[str] | None,
) -> tuple[tuple[dict[str, Any], dict[str, str], list[str], dict[str, str]], Config]:
    """The record of a TRL run (:func:`.config.trl_record`) and the config read."""
    read = mapped_keys(TRL_MAPPING, TRL_SCOPE) | set(ACCELERATE_KEYS.values())
    reads: list[str] = []
    options: dict[str, object] = {}
    option_source = ""
    if isinstance(plans, (str, os.PathLike)):
        path, name = Path(plans), str(plans)
        suffix = path.suffix.lower()
        if suffix in _LAUNCHERS:
            from .launcher import read_launcher, script_path
            from .script import argument_fields, script_fields

            launcher = read_launcher(read_text(path, "TRL launch script", MAX_SCRIPT_BYTES), name, path.parent,
                                     arguments)  # fmt: skip
            origin = f"{name} line {launcher.line}"
            script = script_path(launcher, path.parent)
            if script is not None and script.suffix.lower() == ".py":
                text = read_text(script, "TRL script", MAX_SCRIPT_BYTES)
                fields = script_fields(text, str(script), read, launcher.arguments, path.parent)
            else:
                fields = argument_fields(launcher.arguments, origin, path.parent)
            if launcher.config_file is not None:
                if accelerate is not None and Path(str(accelerate)).resolve() != launcher.config_file.resolve():
                    raise InputError(
                        f"{origin}: launches with --config_file {launcher.config_file}, not the --accelerate-config "
                        f"{quote(str(accelerate))} given"
                    )
                accelerate = launcher.config_file
            options, option_source = launcher.options, f"{origin} (accelerate launch)"
            shown = launcher.script or "trl grpo"
            reads.append(f"launched as {origin} runs it: {shown}" + (
                f" with the accelerate config {launcher.config_file}" if launcher.config_file else ""))  # fmt: skip
        elif suffix == ".py":
            from .script import script_fields

            text = read_text(path, "TRL script", MAX_SCRIPT_BYTES)
            fields, origin = script_fields(text, name, read, arguments, path.parent), name
        else:
            fields, origin = _config_file(path, name), name
            if arguments:
                from .script import argument_fields

                fields.update(argument_fields(arguments, name, path.parent))
        fields = {k: v for k, v in fields.items() if k not in options}  # the launch's own options win
        given = set(fields)
        with_model = True
    else:
        fields, given = trl_fields(plans)
        origin, with_model = "TRL config", isinstance(plans, Mapping)
    launched: dict[str, object] = {}
    where: dict[str, str] = {}
    if accelerate is not None:
        launched = accelerate_fields(accelerate, {k: v for k, v in fields.items() if k not in options}, origin)
        where = dict.fromkeys(launched, f"the accelerate config {accelerate}")
    if options:
        check_accelerate({**{k: v for k, v in launched.items() if k in ("num_machines", "num_processes")}, **options},
                         option_source)  # fmt: skip
        launched.update(options)
        where.update(dict.fromkeys(options, option_source))
    found, config = trl_record(fields, given, origin, columns, preset, with_model=with_model,
                               launcher=(launched, where) if launched else None)  # fmt: skip
    config.reads[:0] = reads
    return found, config


def _config_file(path: Path, name: str) -> dict[str, Any]:
    data = parse_structured(read_text(path, "TRL config"), name, path.suffix.lower())
    if not isinstance(data, dict):
        raise InputError(f"{name}: a TRL config is a mapping of GRPOConfig fields (num_generations: 8, ...)")
    return data
