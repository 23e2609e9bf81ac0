"""Compare two releases table by table, matching rows by the registry's key columns.

Every table the registry describes is compared, the card's configs and the supporting tables (outcomes,
configurations, estimation inputs, follow-up and admission records). Each side is a
:class:`~rlvrambench_hf.data.sources.base.Source` (a folder or a Hub revision). Labels are compared by name, so a
configuration moving from ``within_margin`` to ``memory_failure`` is reported as exactly that; :mod:`.impact` then
says which queries, candidates, folds and studies the changes touch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..data.schema.registry import REGISTRY, get_spec
from ..data.schema.spec import ConfigSpec
from ..data.sources.base import Source
from ..data.sources.resolve import open_source, request
from ..data.tables.reader import load_table
from ..errors import InputError, MissingFileError, quote
from .impact import Impact, analyse

Key = tuple[Any, ...]


@dataclass(frozen=True)
class CellChange:
    key: dict[str, Any]
    column: str
    old: object
    new: object


@dataclass
class ConfigDiff:
    config: str
    status: str  # unchanged, changed, added, removed, absent
    old_rows: int | None
    new_rows: int | None
    added: list[dict[str, Any]] = field(default_factory=list)  # keys of rows only in NEW
    removed: list[dict[str, Any]] = field(default_factory=list)  # keys of rows only in OLD
    changed_rows: int = 0
    cells: list[CellChange] = field(default_factory=list)
    label_columns: tuple[str, ...] = ()

    @property
    def changed_columns(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for cell in self.cells:
            counts[cell.column] = counts.get(cell.column, 0) + 1
        return counts

    @property
    def label_changes(self) -> list[CellChange]:
        return [c for c in self.cells if c.column in self.label_columns]

    def as_json(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "status": self.status,
            "old_rows": self.old_rows,
            "new_rows": self.new_rows,
            "added": self.added,
            "removed": self.removed,
            "changed_rows": self.changed_rows,
            "changed_columns": self.changed_columns,
            "label_changes": [_cell_json(c) for c in self.label_changes],
            "changes": [_cell_json(c) for c in self.cells],
        }


@dataclass
class ReleaseDiff:
    old: str
    new: str
    configs: list[ConfigDiff]
    impact: Impact = field(default_factory=Impact)

    @property
    def changed(self) -> bool:
        return any(c.status not in ("unchanged", "absent") for c in self.configs)

    def as_json(self) -> dict[str, Any]:
        return {
            "old": self.old,
            "new": self.new,
            "changed": self.changed,
            "impact": self.impact.as_json(),
            "configs": [c.as_json() for c in self.configs],
        }


def _cell_json(c: CellChange) -> dict[str, Any]:
    return {"key": c.key, "column": c.column, "old": c.old, "new": c.new}


def diff_tables(spec: ConfigSpec, old: pa.Table | None, new: pa.Table | None) -> ConfigDiff:
    """Rows added, removed and changed between two decoded tables of ``spec`` (``None``: config absent)."""
    label_columns = tuple(c.name for c in spec.label_columns)
    if old is None and new is None:
        return ConfigDiff(spec.name, "absent", None, None, label_columns=label_columns)
    old_rows = _rows_by_key(spec, old, "OLD") if old is not None else {}
    new_rows = _rows_by_key(spec, new, "NEW") if new is not None else {}
    result = ConfigDiff(
        spec.name,
        "unchanged",
        None if old is None else old.num_rows,
        None if new is None else new.num_rows,
        label_columns=label_columns,
    )
    result.added = [_key_dict(spec, k) for k in new_rows if k not in old_rows]
    result.removed = [_key_dict(spec, k) for k in old_rows if k not in new_rows]
    for key, before in old_rows.items():
        after = new_rows.get(key)
        if after is None:
            continue
        cells = [
            CellChange(_key_dict(spec, key), name, before[name], after[name])
            for name in spec.column_names
            if before[name] != after[name]
        ]
        if cells:
            result.changed_rows += 1
            result.cells.extend(cells)
    if old is None:
        result.status = "added"
    elif new is None:
        result.status = "removed"
    elif result.added or result.removed or result.cells:
        result.status = "changed"
    return result


def _rows_by_key(spec: ConfigSpec, table: pa.Table, side: str) -> dict[Key, dict[str, Any]]:
    rows: dict[Key, dict[str, Any]] = {}
    for row in table.to_pylist():
        key = tuple(row[k] for k in spec.keys)
        if key in rows:
            raise InputError(f"{side}: config {spec.name} has two rows with key {_key_text(spec, key)}")
        rows[key] = row
    return dict(sorted(rows.items(), key=lambda item: tuple("" if v is None else str(v) for v in item[0])))


def _key_dict(spec: ConfigSpec, key: Key) -> dict[str, Any]:
    return dict(zip(spec.keys, key))


def _key_text(spec: ConfigSpec, key: Key) -> str:
    return ",".join(f"{k}={v}" for k, v in zip(spec.keys, key))


def read_side(spec: ConfigSpec, src: Source) -> pa.Table | None:
    """The decoded table of ``spec`` in ``src``, or ``None`` when that revision lacks its file."""
    try:
        return load_table(spec.name, src, decode=True)
    except MissingFileError:
        return None


def diff_releases(old: Source, new: Source, configs: list[str] | None = None) -> ReleaseDiff:
    """Compare every table of the registry (or the named ``configs``) of two releases, and say what the changes
    touch (the tables the impact needs are read even when ``configs`` leaves them out)."""
    specs = [get_spec(name) for name in configs] if configs else list(REGISTRY.values())
    sides = {"old": old, "new": new}
    cache: dict[tuple[str, str], pa.Table | None] = {}

    def table_of(side: str, name: str) -> pa.Table | None:
        if (side, name) not in cache:
            cache[side, name] = read_side(get_spec(name), sides[side])
        return cache[side, name]

    diffs = [diff_tables(s, table_of("old", s.name), table_of("new", s.name)) for s in specs]
    return ReleaseDiff(old.label, new.label, diffs, analyse(diffs, table_of, donor_configurations(new)))


def donor_configurations(src: Source) -> dict[str, str]:
    """Admission candidate → its donor configuration, from the release's admission protocol (empty without one)."""
    from ..admission.api import load_protocol

    try:
        protocol = load_protocol(src)
    except MissingFileError:
        return {}
    return {cid: donor.configuration_id for case in protocol.cases for cid, donor in case.donors.items()}


def resolve_side(text: str, base_source: str | None = None) -> Source:
    """A diff side: a folder, ``REPO_ID@REVISION``, or a revision of the Hub repo ``base_source``."""
    if os.path.isdir(os.path.expanduser(text)):
        return open_source(os.path.expanduser(text))
    if "@" in text:
        repo_id, _, revision = text.rpartition("@")
        if not repo_id or not revision:
            raise InputError(f"{quote(text)}: expected REPO_ID@REVISION")
        return open_source(repo_id, revision)
    base = request(base_source)
    if base.local:
        raise InputError(
            f"{quote(text)} is neither a folder nor REPO_ID@REVISION (and --source {base.location} is a folder)"
        )
    return open_source(base.location, text)
