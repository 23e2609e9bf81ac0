"""``read_plans``: a user's config, whichever form it takes, to validated :class:`~.plans.Plans`.

The kinds: ``planned`` (the dataset's vocabulary: CSV, YAML, JSON, mappings), ``verl`` (a VERL YAML, a launch
script or command line of overrides, a VERL config mapping) and ``trl`` (a GRPOConfig as YAML / JSON, or an object
with its fields). Every setting is checked (:mod:`.checks`) before a plan is returned; the release gives the
workloads, models and levels a plan is read against (:mod:`.measured`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from ...data.schema.registry import get_spec
from ...data.sources.resolve import SourceLike
from ...errors import InputError, quote, summary
from ...userfile import MAX_SCRIPT_BYTES, looks_structured, read_text
from ..plan.mapping import VERL_MAPPING, VERL_SCOPE, mapped_keys
from ..plan.plans import SETTINGS_CONFIG, Plans
from .checks import Where, check_ranges, known_true, typed_from_text, typed_from_values
from .measured import LEVEL_SETTINGS, Measured, load_measured
from .verl.launch import Launch, read_launches, unresolved

if TYPE_CHECKING:  # pragma: no cover
    from .verl.config import Config

Kind = Literal["planned", "verl", "trl"]
KINDS = ("planned", "verl", "trl")
#: What every plan must give, whatever its kind (a plan in the dataset's vocabulary also names its workload).
REQUIRED: tuple[str, ...] = ("model_id", "gpu_count", *LEVEL_SETTINGS)
_VERL_SECTIONS = {"actor_rollout_ref", "trainer", "data", "algorithm", "critic", "reward_model"}
_YAML = (".yaml", ".yml", ".json")
_SCRIPTS = (".sh", ".bash")
#: Fields only a GRPOConfig has (a planned mapping uses the dataset's names).
_TRL_FIELDS = {"num_generations", "per_device_train_batch_size", "max_completion_length", "use_vllm"}


def read_plans(
    plans: object,
    *,
    kind: Kind | None = None,
    workload: str | None = None,
    settings: Mapping[str, object] | None = None,
    source: SourceLike = None,
    revision: str | None = None,
    accelerate_config: str | os.PathLike[str] | None = None,
) -> Plans:
    """Validated plans from ``plans``: a path (CSV / YAML / JSON / launch script), a command line, a list of
    mappings, a VERL config mapping or a GRPOConfig-like object.

    ``kind`` says which (None: ``.sh`` files and command lines are VERL, a mapping with VERL's sections is VERL, an
    object with GRPOConfig's fields is TRL, anything else is planned). ``workload`` names the workload of plans
    that do not give one (VERL and TRL configs never do); ``settings`` adds dataset settings to every plan where it
    gives none (e.g. ``{"gpu_count": 2}``). ``source`` / ``revision`` name the release read against.
    ``accelerate_config`` is the accelerate config a TRL run is launched with (``accelerate launch --config_file``).
    """
    kind = kind or detect_kind(plans)
    if kind not in KINDS:
        raise InputError(f"unknown kind of plans {quote(kind)}; choose planned, verl or trl")
    spec = get_spec(SETTINGS_CONFIG)
    settings = typed_settings(settings)
    measured = load_measured(source, revision)
    if kind == "planned":
        from .planned import read_planned

        table, origins, written = read_planned(plans, spec)  # type: ignore[arg-type]
        flags: list[list[str]] = []
        sources: list[dict[str, str]] = []
    else:
        if accelerate_config is not None and kind != "trl":
            raise InputError("an accelerate config goes with a TRL run (--trl), not with a VERL one")
        records, origins, written, flags, sources = _config_records(
            plans, kind, measured, settings or {}, accelerate_config
        )
        where = Where(list(origins).__getitem__, written)
        table = _with_knobs(typed_from_values(records, spec.columns, where), records, where)
    where = Where(origins.__getitem__, written)
    table = _filled(table, workload, settings, measured, where)
    required = REQUIRED + (("workload_id",) if kind == "planned" else ())
    _check_required(table, required, where, kind)
    _check_models(table, measured, where)
    check_ranges(table, where)
    table = table.set_column(
        table.schema.get_field_index("configuration_level"), "configuration_level", measured.infer_levels(table)
    )
    common = measured.scope_flags(table)
    per_row = [tuple(f) + c for f, c in zip(flags, common)] if flags else common
    return Plans(table, origins, written, per_row, sources)


def _with_knobs(table: pa.Table, records: Sequence[Mapping[str, object]], where: Where) -> pa.Table:
    """``table`` with the knobs (:mod:`..plan.knobs`) the records give as extra columns, typed as there."""
    from ..plan.knobs import knob_columns

    columns = [c for name, c in knob_columns().items() if any(r.get(name) is not None for r in records)]
    knobs = typed_from_values(records, columns, where)
    for name in knobs.column_names:
        table = table.append_column(knobs.schema.field(name), knobs.column(name))
    return table


def _check_models(table: pa.Table, measured: Measured, where: Where) -> None:
    """Every model is one the release measured or a Hub repository name (its metadata can then be read); anything
    else (a local folder that names no measured model, invisible characters) is refused, naming the row."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id  # type: ignore[attr-defined]  # public there, not re-exported in its typing

    from .models import local_folder

    models = table.column("model_id").to_pylist()
    for model in dict.fromkeys(models):
        if model in measured.models or local_folder(model) is not None:
            continue
        try:
            validate_repo_id(model)
        except HFValidationError:
            raise InputError(
                f"{where('model_id', models.index(model))}: {quote(model)} is neither a model the release measured "
                f"({', '.join(measured.models)}), nor a folder here with a config.json, nor a Hub model repository "
                "name"
            ) from None


def detect_kind(plans: object) -> Kind:
    """The kind of ``plans`` when the caller does not say it: by suffix, by a YAML / JSON file's top-level keys, by
    a mapping's keys, by an object's fields."""
    if isinstance(plans, (str, os.PathLike)):
        path = Path(plans)
        if path.suffix.lower() in _SCRIPTS or (isinstance(plans, str) and _is_command_line(plans)):
            return "verl"
        if path.suffix.lower() in _YAML:
            from ...userfile import parse_structured

            data = parse_structured(read_text(path, "config"), str(path), path.suffix.lower())
            return detect_kind(data) if isinstance(data, Mapping) else "planned"
        return "planned"
    if isinstance(plans, Mapping):
        keys = {str(k) for k in plans}
        if any(isinstance(plans.get(section), Mapping) for section in _VERL_SECTIONS):  # planned: algorithm: GRPO
            return "verl"
        return "trl" if _TRL_FIELDS & keys else "planned"
    if isinstance(plans, Sequence):
        return "planned"
    return "trl"


def _is_command_line(text: str) -> bool:
    if not (("\n" in text or " " in text) and "=" in text):
        return False
    try:
        return not Path(text).exists()
    except (OSError, ValueError):  # a name too long for a path is no file
        return True


def _config_records(
    plans: object, kind: str, measured: Measured, preset: Mapping[str, object], accelerate: object = None
) -> tuple[list[dict[str, Any]], list[str], dict[str, str], list[list[str]], list[dict[str, str]]]:
    """One record per VERL launch or config (TRL: one), with origins, written names, scope flags and sources."""
    from ..plan.knobs import knob_columns
    from .models import model_of_path
    from .verl.config import record_of

    columns = {c.name: c for c in get_spec(SETTINGS_CONFIG).columns} | knob_columns()
    if kind == "trl":
        from .trl.config import accelerate_fields, trl_fields, trl_file, trl_record

        if isinstance(plans, (str, os.PathLike)):
            fields = trl_file(plans)
            given, origin = set(fields), str(plans)
        else:
            fields, given = trl_fields(plans)
            origin = "TRL config"
        launcher = accelerate_fields(accelerate, fields, origin) if accelerate is not None else {}
        with_model = isinstance(plans, (str, os.PathLike, Mapping))  # what trl grpo reads, model keys included
        found = [
            trl_record(
                fields, given, origin, columns, preset, with_model=with_model,
                launcher=(launcher, str(accelerate)) if accelerate is not None else None,
            )
        ]  # fmt: skip
        origins = [origin]
    else:
        from .verl.checks import DEPRECATED, unread_flag

        configs = _verl_configs(plans)
        found = [record_of(config, columns, preset=preset) for config in configs]
        read = mapped_keys(VERL_MAPPING, VERL_SCOPE) | {old for old, _, _ in DEPRECATED}
        for config, (_, _, row_flags_, _) in zip(configs, found):
            row_flags_ += unread_flag(config, read)
        origins = [c.origin for c in configs]
    records, flags, sources = [], [], []
    for settings, _, row_flags_, row_sources in found:
        if isinstance(settings.get("model_id"), str):
            settings["model_id"], note = model_of_path(settings["model_id"], measured.models)
            if note:
                row_sources["model_id"] = f"{row_sources.get('model_id', '')} ({note})"
        records.append(settings)
        flags.append(row_flags_)
        sources.append(row_sources)
    return records, origins, found[0][1], flags, sources


def _verl_configs(plans: object) -> list[Config]:
    from .verl.checks import checked
    from .verl.config import merged, with_defaults, yaml_tree
    from .verl.hydra import plain
    from .verl.launch import key_lines

    if isinstance(plans, Mapping):
        return [checked(with_defaults(plain(plans), "VERL config"))]  # type: ignore[arg-type]
    if not isinstance(plans, (str, os.PathLike)):
        raise InputError(f"a {type(plans).__name__} is not a VERL config (give a path, a command line or a mapping)")
    if isinstance(plans, str) and _is_command_line(plans):
        text, name, folder = plans, "command line", Path.cwd()
        if len(text) > MAX_SCRIPT_BYTES:
            raise InputError(f"a command line of {len(text):,} characters is longer than a launch script is read")
    else:
        path = Path(plans)
        if path.suffix.lower() in _YAML:
            return [checked(with_defaults(yaml_tree(path, str(path)), str(path)))]
        text, name, folder = read_text(path, "VERL launch script", MAX_SCRIPT_BYTES), str(path), path.parent
        if path.suffix.lower() not in _SCRIPTS and looks_structured(text):  # a config YAML through a pipe
            return [checked(with_defaults(yaml_tree(path, name, text), name))]
    configs: list[Config] = []
    for launch in read_launches(text, name):
        origin = f"{name} line {launch.line}"
        _refuse_unresolved(launch.overrides, origin)
        base, packaged = _base_config(launch, folder, origin)
        lines = key_lines(text, launch, name)
        configs.append(
            checked(with_defaults(merged(base, launch.overrides, origin), origin, packaged=packaged, lines=lines))
        )
    return configs


def _refuse_unresolved(overrides: Sequence[tuple[str, str, str | None]], origin: str) -> None:
    """A one-line error for the first override of a key the advisor reads whose value the script computes."""
    from .verl.checks import DEPRECATED

    used = mapped_keys(VERL_MAPPING, VERL_SCOPE) | {old for old, _, _ in DEPRECATED}
    for _, key, text in overrides:
        missing = unresolved(text or "")
        if key in used and missing:
            how = (
                "is arithmetic over a value the script does not give" if missing.startswith("$((")
                else "is computed when the script runs" if "(" in missing
                else "is not set in the script or environment"
            )  # fmt: skip
            raise InputError(f"{origin}: {key} uses {missing}, which {how}; write its value or set it")


def _base_config(launch: Launch, folder: Path, origin: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The config a launch's ``--config-path`` / ``--config-name`` name, as Hydra finds it: a relative path from
    the folder of VERL's trainer module (``main_ppo.py``; ``config`` when not given), else from the script's
    folder; an absolute path as it is. A config VERL packages is its composed ``_generated_`` form, and becomes the
    defaults (the base is then empty); the user's own YAML lies over VERL's ``ppo_trainer`` defaults."""
    from .verl.config import DEFAULT_CONFIGS, verl_folders, yaml_tree

    name = launch.config_name
    if not name:
        return {}, DEFAULT_CONFIGS
    stem = name[: -len(".yaml")] if name.endswith(".yaml") else name
    where = Path(launch.config_path or "config")
    trainer = [] if where.is_absolute() else [f / "trainer" for f in verl_folders()]
    for root in trainer:
        if (root / where / f"{stem}.yaml").is_file():
            relative = (where / stem).as_posix()
            generated = (where / f"_generated_{stem}.yaml").as_posix()
            return {}, (f"trainer/{generated}", f"trainer/{relative}.yaml")
    looked = [folder / where] if not where.is_absolute() else [where]
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


def typed_settings(settings: Mapping[str, object] | None) -> dict[str, object]:
    """The caller's ``settings`` (dataset vocabulary; text such as ``"1024"`` as a CSV cell would be) typed and
    checked as a plan's are, before any conversion reads them."""
    spec = get_spec(SETTINGS_CONFIG)
    given = dict(settings or {})
    unknown = sorted(set(given) - set(spec.column_names))
    if unknown:
        raise InputError(f"unknown setting(s) {summary(unknown)} (use the columns of {spec.path})")
    where = Where(lambda _: "given settings", {})
    text = {name: value for name, value in given.items() if isinstance(value, str)}
    raw = pa.table({name: pa.array([value], pa.string()) for name, value in text.items()})
    parts = [
        typed_from_text(raw, [spec.column(name) for name in text], where),
        typed_from_values([given], [spec.column(name) for name in given if name not in text], where),
    ]
    typed = {name: part.column(name)[0].as_py() for part in parts for name in part.column_names}
    check_ranges(pa.table({name: [value] for name, value in typed.items()}), where)
    return typed


def _filled(
    table: pa.Table, workload: str | None, settings: Mapping[str, object], measured: Measured, where: Where
) -> pa.Table:
    """``table`` with ``workload`` and ``settings`` (typed) filled in where the plans give none; a plan that gives
    another value is an error."""
    extra = dict(settings)
    if workload is not None:
        extra["workload_id"] = measured.workload_id(workload)
    spec = get_spec(SETTINGS_CONFIG)
    for name, value in extra.items():
        column = spec.column(name)
        filled = typed_from_values([{name: value}], [column], Where(lambda _: "given settings", {}))
        scalar = filled.column(0)[0]
        current = table.column(name)
        differs = known_true(pc.not_equal(current, scalar))
        if pc.any(differs).as_py():
            row = pc.index(differs, True).as_py()
            raise InputError(
                f"{where(name, row)}: the plan gives {quote(current[row].as_py())}, not the {quote(value)} asked for"
            )
        table = table.set_column(table.schema.get_field_index(name), name, pc.fill_null(current, scalar))
    return table


def _check_required(table: pa.Table, required: Sequence[str], where: Where, kind: str) -> None:
    missing = [name for name in required if table.column(name).null_count]
    if not missing:
        return
    rows = pc.is_null(table.column(missing[0]))
    first, count = pc.index(rows, True).as_py(), pc.sum(rows).as_py()
    hint = " (name it with --workload)" if missing == ["workload_id"] else ""
    written = ", ".join(where.name(m) for m in missing)
    scope = "" if table.num_rows == 1 else f" ({count} of {table.num_rows} plans, the first: {where.origin(first)})"
    prefix = where.origin(first) if table.num_rows == 1 else "plans"
    raise InputError(f"{prefix}: missing setting(s) {written}{hint}{scope}")
