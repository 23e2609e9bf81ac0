"""Planned configurations for the advisor: a YAML or JSON mapping (or list of them) or a CSV file with the columns
of ``benchmark/estimation/targets.csv``, typed by the registry like every release table."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import InputError, first_line

TARGETS_CONFIG = "estimation_targets"
SUFFIXES = (".yaml", ".yml", ".json", ".csv")


def read_planned(
    planned: str | os.PathLike | Sequence[Mapping] | Mapping, required: Sequence[str], optional: Sequence[str] = ()
) -> list[dict]:
    """Typed planned configurations; a one-line error lists missing settings or unknown columns."""
    from ..data.schema.registry import get_spec
    from ..data.tables.reader import typed_records

    name = "planned configurations"
    records: object
    if isinstance(planned, (str, os.PathLike)):
        name = str(planned)
        records = _read_file(Path(planned))
    elif isinstance(planned, Mapping):
        records = [planned]
    else:
        records = list(planned)
    if isinstance(records, Mapping):
        records = records.get("configurations", [records])
    if not isinstance(records, list) or not records or not all(isinstance(r, Mapping) for r in records):
        raise InputError(f"{name}: expected a mapping of settings, a list of them, or a CSV with one row per plan")
    spec = get_spec(TARGETS_CONFIG)
    known = set(spec.column_names)
    unknown = sorted({k for r in records for k in r} - known)
    if unknown:
        raise InputError(f"{name}: unknown setting(s) {', '.join(unknown)} (use the columns of {spec.path})")
    missing = [k for k in required if any(r.get(k) in (None, "") for r in records)]
    if missing:
        raise InputError(f"{name}: missing setting(s) {', '.join(missing)}")
    present = [c for c in spec.columns if any(c.name in r for r in records)]
    cleaned = [{k: (None if v == "" else v) for k, v in r.items()} for r in records]
    typed = typed_records(cleaned, present, name).to_pylist()
    return [{k: v for k, v in row.items() if v is not None} for row in typed]


def _read_file(path: Path) -> object:
    if path.suffix.lower() not in SUFFIXES:
        raise InputError(f"planned configurations {path}: use a {', '.join(SUFFIXES)} file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read planned configurations {path}: {first_line(exc)}") from None
    if path.suffix.lower() == ".csv":
        return _read_csv(path, text)
    try:
        if path.suffix.lower() == ".json":
            return json.loads(text)
        import yaml

        return yaml.safe_load(text)
    except Exception as exc:
        raise InputError(
            f"planned configurations {path}: not valid {path.suffix[1:].upper()}: {first_line(exc)}"
        ) from None


def _read_csv(path: Path, text: str) -> list[dict]:
    import io

    import pyarrow as pa
    import pyarrow.csv as pacsv

    from ..data.schema.registry import get_spec

    columns = {name: pa.string() for name in get_spec(TARGETS_CONFIG).column_names}
    options = pacsv.ConvertOptions(column_types=columns, strings_can_be_null=False, null_values=[])
    try:
        table = pacsv.read_csv(io.BytesIO(text.encode()), convert_options=options)
    except pa.ArrowInvalid as exc:
        raise InputError(f"planned configurations {path}: cannot be read as CSV: {first_line(exc)}") from None
    return table.to_pylist()
