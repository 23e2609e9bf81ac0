"""The relations the registry declares, checked over typed tables: every foreign key and every copied column.

Pure functions over decoded tables (labels by name). Each relation gives one :class:`Finding`; a relation that
does not hold says so in one line naming the table and its file, the column, the row's key and both values, with
the number of further rows that break it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from ..errors import quote
from .schema.registry import REGISTRY
from .schema.spec import ConfigSpec, Copy, ForeignKey

Key = tuple[object, ...]


@dataclass(frozen=True)
class Finding:
    """One declared relation: its name and, when it does not hold, the problem (None when it holds)."""

    relation: str
    problem: str | None
    rows: int = 0  # rows of the referencing table it was checked on


def relation_findings(tables: Mapping[str, pa.Table], specs: Iterable[ConfigSpec] | None = None) -> list[Finding]:
    """Check every relation of ``specs`` (all registry entries) whose two tables are in ``tables``."""
    findings = []
    for spec in specs if specs is not None else REGISTRY.values():
        here = tables.get(spec.name)
        if here is None:
            continue
        for fk in spec.references:
            if fk.table in tables:
                findings.append(check_foreign_key(spec, fk, here, tables[fk.table]))
        for copy in spec.copies:
            if copy.table in tables:
                findings.append(check_copy(spec, copy, here, tables[copy.table]))
    return findings


def foreign_key_name(spec: ConfigSpec, fk: ForeignKey) -> str:
    target = REGISTRY[fk.table]
    return f"{spec.name}.{'+'.join(fk.columns)} → {target.name}.{'+'.join(fk.references or target.keys)}"


def copy_name(spec: ConfigSpec, copy: Copy) -> str:
    shown = ", ".join(copy.columns) if len(copy.columns) <= 3 else f"{len(copy.columns)} columns"
    return f"{spec.name} copies {shown} from {copy.table} (by {'+'.join(copy.on)})"


def check_foreign_key(spec: ConfigSpec, fk: ForeignKey, here: pa.Table, there: pa.Table) -> Finding:
    """Whether every row of ``here`` points at a row of ``there`` as ``fk`` declares."""
    target = REGISTRY[fk.table]
    counts = Counter(_keys(there, fk.references or target.keys))
    selected = _selection(here, fk.where)
    problems = []
    for row, key in enumerate(_keys(here, fk.columns)):
        null = any(v is None for v in key)
        if selected is not None and not selected[row]:
            if not null:
                problems.append((row, f"has {_show(fk.columns, key)} although {fk.where} is not true"))
        elif null:
            if selected is not None:
                problems.append((row, f"has no {'+'.join(fk.columns)} although {fk.where} is true"))
        elif counts[key] == 0 or (fk.exactly_one and counts[key] != 1):
            found = "no row" if counts[key] == 0 else f"{counts[key]} rows"
            problems.append((row, f"points at {_show(fk.columns, key)}, but {_where(target)} has {found} with it"))
    return _finding(foreign_key_name(spec, fk), spec, here, problems)


def check_copy(spec: ConfigSpec, copy: Copy, here: pa.Table, there: pa.Table) -> Finding:
    """Whether every copied column of ``here`` equals its origin in ``there`` on the row ``copy.on`` names."""
    origin = REGISTRY[copy.table]
    rows_there = {key: i for i, key in enumerate(_keys(there, origin.keys))}
    values_here = {name: here.column(name).to_pylist() for name in copy.columns}
    values_there = {name: there.column(name).to_pylist() for name in copy.columns.values()}
    problems = []
    for row, key in enumerate(_keys(here, copy.on)):
        if any(v is None for v in key):
            continue
        at = rows_there.get(key)
        if at is None:
            problems.append((row, f"has {_show(copy.on, key)}, which {_where(origin)} does not have"))
            continue
        for name, name_there in copy.columns.items():
            mine, theirs = values_here[name][row], values_there[name_there][at]
            if mine != theirs:
                problems.append(
                    (row, f"has {name} {quote(mine)}, but {_where(origin)} has {name_there} {quote(theirs)}")
                )
                break
    return _finding(copy_name(spec, copy), spec, here, problems)


def _finding(name: str, spec: ConfigSpec, table: pa.Table, problems: Sequence[tuple[int, str]]) -> Finding:
    if not problems:
        return Finding(name, None, table.num_rows)
    row, text = problems[0]
    key = _show(spec.keys, tuple(table.column(k)[row].as_py() for k in spec.keys))
    more = f" (and {len(problems) - 1} more row(s))" if len(problems) > 1 else ""
    return Finding(name, f"{_where(spec)}, row {key}: {text}{more}", table.num_rows)


def _keys(table: pa.Table, names: Sequence[str]) -> list[Key]:
    return list(zip(*(table.column(name).to_pylist() for name in names)))


def _selection(table: pa.Table, column: str | None) -> list[bool] | None:
    if column is None:
        return None
    return [bool(v) for v in table.column(column).to_pylist()]


def _show(names: Sequence[str], values: Key) -> str:
    return ", ".join(f"{n}={quote(v)}" for n, v in zip(names, values))


def _where(spec: ConfigSpec) -> str:
    return f"{spec.name} ({spec.path})"
