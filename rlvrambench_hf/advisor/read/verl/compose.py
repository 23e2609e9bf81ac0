"""A VERL launch file's configs, as the run composes them: a config YAML, a mapping, or each launch of a script (its
overrides over the base config it names and the defaults of the VERL it runs on), EasyR1's launches by EasyR1's
schema (:mod:`.easyr1`). A value the script computes when it runs is refused only where the answer uses it (a
floor, a phase, the scope); anywhere else it is not read, and a ``read:`` line says so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ....errors import InputError, quote
from ....userfile import MAX_SCRIPT_BYTES, looks_structured, read_text
from ...plan.mapping import UNUSED_SETTINGS, VERL_MAPPING, VERL_SCOPE
from ..shell.environment import note_environment
from .checks import DEPRECATED, FORK_KEYS, checked
from .config import DEFAULT_CONFIGS, Config, merged, verl_folders, with_defaults, yaml_tree
from .hydra import plain
from .launch import Launch, Script, key_lines, read_script
from .versions import installed_version, version_for

_YAML = (".yaml", ".yml", ".json")
_SCRIPTS = (".sh", ".bash", ".sbatch", ".slurm")
#: VERL's packaged trainer configs a launch may name, which this package's defaults stand for without VERL.
PACKAGED = ("ppo_trainer", "ppo_megatron_trainer")


def verl_configs(
    plans: object,
    *,
    command_line: bool,
    preset: Mapping[str, object] = {},
    arguments: Sequence[str] | None = None,
    verl_version: str | None = None,
) -> list[Config]:
    """The configs of ``plans``: a mapping, a config YAML, a script or a command line (``command_line``)."""
    installed = installed_version()  # read once: its package metadata is looked for on the whole sys.path
    version = version_for(verl_version, installed)
    found = _source(plans, command_line)
    if isinstance(found, dict):  # a config tree (a mapping, a YAML)
        tree, origin = found["tree"], found["origin"]
        return [_finished(checked(with_defaults(tree, origin, version=version, installed=installed)))]
    text, name, folder = found
    script = read_script(text, name, arguments=arguments)
    configs: list[Config] = []
    for launch in script.launches:
        origin = f"{name} line {launch.line}"
        lines = key_lines(text, launch, name)
        for names in launch.environment.values():
            for variable in names:
                note_environment(variable, os.environ.get(variable, ""))
        if launch.tool == "EasyR1":
            from .easyr1 import easyr1_config

            configs.append(easyr1_config(launch, folder, origin, lines, preset))
            continue
        overrides, notes = _runtime_values(launch, origin, preset, lines)
        base, packaged = _base_config(launch, folder, origin)
        config = with_defaults(merged(base, overrides, origin), origin, packaged=packaged, lines=lines,
                               version=version, environment=launch.environment, installed=installed)  # fmt: skip
        config.notes.update(notes)
        config.reads.extend(f"not read: {n}" for n in notes.values())
        for prefix, key, _ in overrides:  # Hydra deletes the key from the composed config, its default too
            if prefix == "~":
                _delete(config.tree, key)
                config.removed.add(key)
        configs.append(_finished(checked(config)))
    for config in configs:
        config.reads[:0] = _script_reads(script, name, arguments)
    return configs


def _source(plans: object, command_line: bool) -> dict[str, Any] | tuple[str, str, Path]:
    """A config tree (``{"tree", "origin"}``) or a script's text, name and folder."""
    if isinstance(plans, Mapping):
        return {"tree": plain(plans), "origin": "VERL config"}
    if not isinstance(plans, (str, os.PathLike)):
        raise InputError(f"a {type(plans).__name__} is not a VERL config (give a path, a command line or a mapping)")
    if command_line:
        if len(str(plans)) > MAX_SCRIPT_BYTES:
            raise InputError(f"a command line of {len(str(plans)):,} characters is longer than a launch script is read")
        return str(plans), "command line", Path.cwd()
    path = Path(plans)
    if path.suffix.lower() in _YAML:
        return {"tree": yaml_tree(path, str(path)), "origin": str(path)}
    text = read_text(path, "VERL launch script", MAX_SCRIPT_BYTES)
    if path.suffix.lower() not in _SCRIPTS and looks_structured(text):  # a config YAML through a pipe
        return {"tree": yaml_tree(path, str(path), text), "origin": str(path)}
    return text, str(path), path.parent


def _delete(tree: dict[str, Any], key: str) -> None:
    *parents, leaf = key.split(".")
    node: Any = tree
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(leaf, None)


def _finished(config: Config) -> Config:
    """``config`` with the ``read:`` line of the VERL release it was read for."""
    if config.tool == "VERL" and config.version is not None:
        config.reads.insert(0, f"for {config.version.describe()}")
    return config


def _script_reads(script: Script, name: str, arguments: Sequence[str] | None) -> list[str]:
    """What the reading of the script says about its arguments."""
    if script.argument_line is None:
        return [f"{name} was given arguments it does not read"] if arguments else []
    if not script.arguments_given:
        return [
            f"{name} reads its arguments (line {script.argument_line}); none were given (advise --verl {name} -- "
            "ARGS...), so the values it sets by default are read"
        ]
    shown = " ".join(arguments or ())
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    return [f"{name} run with the arguments {shown} (read from line {script.argument_line})"]


def used_keys(preset: Mapping[str, object]) -> set[str]:
    """The keys whose values a floor, a phase or the scope reads (a setting ``preset`` gives is not read)."""
    keys = {k for m in VERL_MAPPING if m.setting not in UNUSED_SETTINGS and m.setting not in preset for k in m.keys}
    return keys | {s.key for s in VERL_SCOPE} | {old for old, _, _ in DEPRECATED} | set(FORK_KEYS)


def _runtime_values(
    launch: Launch, origin: str, preset: Mapping[str, object], lines: Mapping[str, str]
) -> tuple[list[tuple[str, str, str | None]], dict[str, str]]:
    """The launch's overrides, those of keys the answer reads but no floor, phase or scope uses with a value the
    script computes when it runs left null (with a note why); a one-line error for a key the answer uses."""
    from ....data.schema.registry import get_spec
    from ...plan.mapping import VERL_MAPPING as mapping
    from ...plan.plans import SETTINGS_CONFIG
    from ..shell.state import NO_ARGUMENT, unresolved

    presettable = set(get_spec(SETTINGS_CONFIG).column_names)
    used, read = used_keys(preset), {k for m in mapping for k in m.keys}
    kept: list[tuple[str, str, str | None]] = []
    notes: dict[str, str] = {}
    for prefix, key, text in launch.overrides:
        found = unresolved(text or "")
        if found is None or key not in read | used:
            kept.append((prefix, key, text))
            continue
        what, why = found
        if key not in used:
            where = lines.get(key, origin)
            notes[key] = f"{key} uses {what}, which is {why} ({where}); no floor, phase or scope uses it"
            kept.append((prefix, key, None))
            continue
        setting = next((m.setting for m in mapping if key == m.keys[0] and len(m.keys) <= 2), None)
        remedy = "give the script's arguments after -- (advise --verl FILE -- ARGS)" if why == NO_ARGUMENT else (
            f"write its value, set it, or give --setting {setting}=VALUE" if setting in presettable
            else "write its value or set it"
        )  # fmt: skip
        raise InputError(f"{origin}: {key} uses {what}, which is {why}; {remedy}")
    return kept, notes


def _base_config(launch: Launch, folder: Path, origin: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The config a launch's ``--config-path`` / ``--config-name`` name, as Hydra finds it: a relative path from
    the folder of VERL's trainer module (``main_ppo.py``; ``config`` when not given), else from the script's
    folder and the folders above it (a script run from its repository's root names paths from there); an absolute
    path as it is. A config VERL packages is its composed ``_generated_`` form, and becomes the defaults (the base
    is then empty; without VERL here, the defaults this package ships stand for it); the user's own YAML lies over
    VERL's ``ppo_trainer`` defaults."""
    from ..shell.state import unresolved

    name = launch.config_name
    if not name:
        return {}, DEFAULT_CONFIGS
    stem = name[: -len(".yaml")] if name.endswith(".yaml") else name
    given_path = launch.config_path or "config"
    computed = unresolved(given_path)
    where = Path(_after_marker(given_path)) if computed else Path(given_path)
    trainer = [] if where.is_absolute() else [f / "trainer" for f in verl_folders()]
    for root in trainer:
        if (root / where / f"{stem}.yaml").is_file():
            relative = (where / stem).as_posix()
            generated = (where / f"_generated_{stem}.yaml").as_posix()
            return {}, (f"trainer/{generated}", f"trainer/{relative}.yaml")
    if not trainer and not where.is_absolute() and where == Path("config") and stem in PACKAGED:
        return {}, (f"trainer/config/_generated_{stem}.yaml", f"trainer/config/{stem}.yaml")
    looked = [where] if where.is_absolute() and not computed else [f / where for f in (folder, *folder.parents)][:6]
    for place in looked:
        if (place / f"{stem}.yaml").is_file():
            return yaml_tree(place / f"{stem}.yaml", str(place / f"{stem}.yaml")), DEFAULT_CONFIGS
    module = (
        "" if where.is_absolute()
        else f"under VERL's trainer module ({', '.join(str(r / where) for r in trainer)}) nor "
        if trainer else "under VERL's trainer module (VERL is not installed here) nor "
    )  # fmt: skip
    raise InputError(
        f"{origin}: --config-name {quote(name)}: no {stem}.yaml {module}under {quote(str(looked[0]), 1000)}"
    )


def _after_marker(path: str) -> str:
    """A config path whose start the script computes when it runs (``$(pwd)/examples/config``, ``$PROJECT_DIR/...``)
    as the relative path after it, to be looked for from the script's folder and the folders above."""
    end = path.rfind("\ue001")
    return path[end + 1 :].lstrip("/") or "."
