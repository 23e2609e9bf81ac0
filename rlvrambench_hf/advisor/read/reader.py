"""``read_plans``: a user's config, whichever form it takes, to validated :class:`~.plans.Plans`.

The kinds: ``planned`` (the dataset's vocabulary: CSV, YAML, JSON, mappings), ``verl`` (a VERL YAML, a launch
script or command line of overrides, a VERL config mapping; EasyR1's launches too) and ``trl`` (a GRPOConfig as
YAML / JSON, a training script, an ``accelerate launch`` shell launcher, or an object with its fields). Every setting
is checked (:mod:`.checks`) before a plan is returned; the release gives the workloads, models and levels a plan is
read against (:mod:`.measured`). Values a launch file takes from the environment are named, never printed, in any
refusal (:mod:`.shell.environment`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal, TypedDict, Unpack

import pyarrow as pa
import pyarrow.compute as pc

from ...data.schema.registry import get_spec
from ...data.sources.resolve import SourceLike
from ...errors import InputError, quote, summary
from ...userfile import read_text
from ..plan.plans import SETTINGS_CONFIG, Plans
from .checks import Where, check_ranges, known_true, typed_from_text, typed_from_values
from .measured import LEVEL_SETTINGS, Measured, load_measured
from .records import config_records, is_command_line
from .shell.environment import named_environment

Kind = Literal["planned", "verl", "trl"]
KINDS = ("planned", "verl", "trl")
#: What every plan must give, whatever its kind (a plan in the dataset's vocabulary also names its workload).
REQUIRED: tuple[str, ...] = ("model_id", "gpu_count", *LEVEL_SETTINGS)
_VERL_SECTIONS = {"actor_rollout_ref", "trainer", "data", "algorithm", "critic", "reward_model"}
_YAML = (".yaml", ".yml", ".json")
_SCRIPTS = (".sh", ".bash", ".sbatch", ".slurm")
#: Fields only a GRPOConfig has (a planned mapping uses the dataset's names).
_TRL_FIELDS = {"num_generations", "per_device_train_batch_size", "max_completion_length", "use_vllm"}


class Launching(TypedDict, total=False):
    """How a launch file is run: the accelerate config a TRL run is launched with (``accelerate launch
    --config_file``), a launch script's own arguments as the user runs it (absent: run without, the values it sets by
    default are read) and the VERL release the run uses (absent: the installed one's, else not known)."""

    accelerate_config: str | os.PathLike[str] | None
    arguments: Sequence[str] | None
    verl_version: str | None


def read_plans(
    plans: object,
    *,
    kind: Kind | None = None,
    workload: str | None = None,
    settings: Mapping[str, object] | None = None,
    source: SourceLike = None,
    revision: str | None = None,
    **launching: Unpack[Launching],
) -> Plans:
    """Validated plans from ``plans``: a path (CSV / YAML / JSON / launch script), a command line, a list of
    mappings, a VERL config mapping or a GRPOConfig-like object.

    ``kind`` says which (None: ``.sh`` files and command lines are VERL, a mapping with VERL's sections is VERL, an
    object with GRPOConfig's fields is TRL, anything else is planned). ``workload`` names the workload of plans
    that do not give one (without it, a VERL or TRL run's is the one its data files name, :mod:`.workloads`);
    ``settings`` adds dataset settings to every plan where it gives none (e.g. ``{"gpu_count": 2}``). ``source`` /
    ``revision`` name the release read against. ``launching`` (:class:`Launching`): ``accelerate_config``,
    ``arguments``, ``verl_version``.
    """
    kind = kind or detect_kind(plans)
    if kind not in KINDS:
        raise InputError(f"unknown kind of plans {quote(kind)}; choose planned, verl or trl")
    if kind == "planned" and (launching.get("arguments") or launching.get("verl_version")):
        raise InputError("a script's arguments and --verl-version go with a VERL or TRL launch file, not --planned")
    with named_environment():
        return _read(plans, kind, workload, settings, (source, revision), launching)


def _read(
    plans: object,
    kind: str,
    workload: str | None,
    settings: Mapping[str, object] | None,
    release: tuple[SourceLike, str | None],
    launching: Launching,
) -> Plans:
    spec = get_spec(SETTINGS_CONFIG)
    settings = typed_settings(settings)
    measured = load_measured(*release)
    flags: list[list[str]] = []
    sources: list[dict[str, str]] = []
    notes: list[list[str]] = []
    hidden: list[dict[str, str]] = []
    if kind == "planned":
        from .planned import read_planned

        table, origins, written = read_planned(plans, spec)  # type: ignore[arg-type]
    else:
        accelerate = launching.get("accelerate_config")
        if accelerate is not None and kind != "trl":
            raise InputError("an accelerate config goes with a TRL run (--trl), not with a VERL one")
        found = config_records(
            plans, kind, measured, settings or {}, accelerate=accelerate, arguments=launching.get("arguments"),
            command_line=isinstance(plans, str) and is_command_line(plans), verl_version=launching.get("verl_version"),
            infer_workload=workload is None and "workload_id" not in settings,
        )  # fmt: skip
        records, origins, written = found.records, found.origins, found.written
        flags, sources, notes, hidden = found.flags, found.sources, found.notes, found.environment
        where = Where(list(origins).__getitem__, written, _hidden(hidden))
        table = _with_knobs(typed_from_values(records, spec.columns, where), records, where)
    where = Where(origins.__getitem__, written, _hidden(hidden))
    table = _filled(table, workload, settings, measured, where)
    required = REQUIRED + (("workload_id",) if kind == "planned" else ())
    _check_required(table, required, where, kind, sources, measured.workloads)
    _check_models(table, measured, where)
    check_ranges(table, where)
    table = table.set_column(
        table.schema.get_field_index("configuration_level"), "configuration_level", measured.infer_levels(table)
    )
    common = measured.scope_flags(table)
    per_row = [tuple(f) + c for f, c in zip(flags, common)] if flags else common
    return Plans(table, origins, written, per_row, sources, notes)


def _hidden(hidden: Sequence[Mapping[str, str]]) -> Callable[[str, int], str | None] | None:
    """Per setting and plan, the environment variable its value came from (named in errors, never printed)."""
    if not any(hidden):
        return None
    return lambda setting, row: hidden[row].get(setting) if row < len(hidden) else None


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
    from .models import local_folder

    models = table.column("model_id").to_pylist()
    for model in dict.fromkeys(models):
        if model in measured.models or local_folder(model) is not None:
            continue
        from huggingface_hub.errors import HFValidationError  # only for a name the release did not measure
        from huggingface_hub.utils import validate_repo_id  # type: ignore[attr-defined]  # public, not re-exported in its typing

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
        if path.suffix.lower() in _SCRIPTS or (isinstance(plans, str) and is_command_line(plans)):
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


def _check_required(
    table: pa.Table,
    required: Sequence[str],
    where: Where,
    kind: str,
    sources: Sequence[Mapping[str, str]] = (),
    workloads: Sequence[str] = (),
) -> None:
    """A one-line error naming the required settings a plan does not give (a ``max_model_len`` left null for the
    model's own context length is given: the answer reads it from the model's config.json)."""
    from .lengths import MODEL_CONTEXT

    open_context = [MODEL_CONTEXT in row.get("max_model_len", "") for row in sources]
    missing = []
    for name in required:
        nulls = table.column(name).is_null().to_pylist() if table.column(name).null_count else []
        if any(null and not (name == "max_model_len" and i < len(open_context) and open_context[i])
               for i, null in enumerate(nulls)):  # fmt: skip
            missing.append(name)
    if not missing:
        return
    rows = pc.is_null(table.column(missing[0]))
    first, count = pc.index(rows, True).as_py(), pc.sum(rows).as_py()
    listed = f": {', '.join(workloads)}" if workloads else ""
    hint = f" (name the measured one it resembles with --workload{listed})" if missing == ["workload_id"] else ""
    written = ", ".join(where.name(m) for m in missing)
    scope = "" if table.num_rows == 1 else f" ({count} of {table.num_rows} plans, the first: {where.origin(first)})"
    prefix = where.origin(first) if table.num_rows == 1 else "plans"
    raise InputError(f"{prefix}: missing setting(s) {written}{hint}{scope}")
