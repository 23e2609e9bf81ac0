"""What the differences between two releases touch: the changes that move the metrics, found through the registry.

From the per-table differences (:mod:`.diff`) this module finds the configurations whose label or peak changed (a
column some tables copy is reported once, at its origin, with every table where it changed), then follows the
registry's foreign keys to the rows that point at changed configurations. From those it says what each benchmark
task sees: the transfer queries whose target label changed in the table the transfer metric scores against
(``outcomes``) or whose source configuration changed in the tables the tasks read (``outcomes``,
``configurations``), the admission candidates whose records or donor configuration changed, the estimator folds
whose pool configurations changed in those tables, and the follow-up studies whose tables changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from ..data.schema.registry import REGISTRY
from ..data.schema.spec import ConfigSpec

CONFIGURATION_KEY = ("configuration_id",)
PEAK_SUFFIX = "_peak_mib"
#: The transfer queries' columns that name their target and source configurations and their task.
TARGET, SOURCE, TASK = "target_configuration_id", "source_configuration_id", "task_id"
#: A decoded table of one side (``"old"`` or ``"new"``), or None when that side lacks it.
TableOf = Callable[[str, str], pa.Table | None]


class Cell(Protocol):
    """A changed cell: the row's key, the column and both values (:class:`.diff.CellChange`)."""

    @property
    def key(self) -> dict[str, Any]: ...
    @property
    def column(self) -> str: ...
    @property
    def old(self) -> object: ...
    @property
    def new(self) -> object: ...


class TableDiff(Protocol):
    """What :class:`.diff.ConfigDiff` gives: the table, its changed cells and the keys of added and removed rows."""

    @property
    def config(self) -> str: ...
    @property
    def cells(self) -> Sequence[Cell]: ...
    @property
    def added(self) -> Sequence[dict[str, Any]]: ...
    @property
    def removed(self) -> Sequence[dict[str, Any]]: ...


@dataclass
class Impact:
    """What the differences touch (see the module docstring); ids are sorted."""

    configurations: list[dict[str, Any]] = field(default_factory=list)
    touched: list[dict[str, Any]] = field(default_factory=list)
    transfer: dict[str, Any] = field(default_factory=dict)
    admission: dict[str, Any] = field(default_factory=dict)
    estimation: dict[str, Any] = field(default_factory=dict)
    followup: dict[str, Any] = field(default_factory=dict)

    def headline(self) -> str:
        """One sentence, the changes that move a metric first."""
        labels = [c for c in self.configurations if c["kind"] == "label"]
        peaks = [c for c in self.configurations if c["kind"] == "peak"]
        parts = [
            f"{_count(len({c['configuration_id'] for c in labels}), 'configuration')} changed label, "
            f"{_count(len({c['configuration_id'] for c in peaks}), 'configuration')} changed peak"
        ]
        t = self.transfer
        if t.get("label_queries") or t.get("input_queries"):
            parts.append(
                f"transfer labels change for {_count(len(t['label_queries']), 'query')} in "
                f"{_count(len(t['label_tasks']), 'task')}, inputs for {_count(len(t['input_queries']), 'query')} in "
                f"{_count(len(t['input_tasks']), 'task')}"
            )
        else:
            parts.append("transfer unaffected")
        a = self.admission.get("candidates") or []
        parts.append(f"admission: {_count(len(a), 'candidate')} touched" if a else "admission unaffected")
        e = self.estimation
        parts.append(
            f"estimation folds touched: {', '.join(e['folds'])} (pool configurations held out in "
            f"{', '.join(e['held_out_in'])})"
            if e.get("folds")
            else "estimation folds unaffected"
        )
        studies = [s for s, v in self.followup.items() if v["changed_rows"]]
        parts.append(f"follow-up changed: {', '.join(studies)}" if studies else "follow-up unaffected")
        return "; ".join(parts)

    def as_json(self) -> dict[str, Any]:
        return {
            "headline": self.headline(),
            "configurations": self.configurations,
            "transfer": self.transfer,
            "admission": self.admission,
            "estimation": self.estimation,
            "followup": self.followup,
            "touched": self.touched,
        }


def analyse(diffs: Sequence[TableDiff], table_of: TableOf, donors: Mapping[str, str] | None = None) -> Impact:
    """The impact of ``diffs`` (:class:`.diff.ConfigDiff` per table); ``table_of`` gives each side's decoded tables
    and ``donors`` maps admission candidates to their donor configuration (the new side's protocol)."""
    from ..transfer.api import LABELS_CONFIG, SETTINGS_CONFIG

    changed = {d.config: _changed_keys(d) for d in diffs}
    configurations = _label_and_peak_changes(diffs)
    any_ids = {k[0] for name, keys in changed.items() if REGISTRY[name].keys == CONFIGURATION_KEY for k in keys}
    read_ids = {k[0] for name in (LABELS_CONFIG, SETTINGS_CONFIG) for k in changed.get(name, ())}
    truth_ids = {c["configuration_id"] for c in configurations if c["kind"] == "label" and LABELS_CONFIG in c["tables"]}
    impact = Impact(configurations=configurations)
    impact.touched = [t for t in _references_to(any_ids, table_of) if t["rows"]]
    impact.transfer = _transfer(truth_ids, read_ids, table_of)
    impact.admission = _admission(changed, any_ids, table_of, donors or {})
    impact.estimation = _estimation(read_ids, table_of)
    impact.followup = _followup(changed)
    return impact


def _changed_keys(diff: TableDiff) -> set[tuple[Any, ...]]:
    keys = [c.key for c in diff.cells] + list(diff.added) + list(diff.removed)
    return {tuple(k.values()) for k in keys}


def origin(spec: ConfigSpec, column: str) -> tuple[str, str]:
    """The table and column a column of ``spec`` is copied from, following copies keyed like ``spec`` (itself when
    it copies it from nowhere)."""
    for copy in spec.copies:
        if column in copy.columns and copy.on == spec.keys == REGISTRY[copy.table].keys:
            return origin(REGISTRY[copy.table], copy.columns[column])
    return spec.name, column


def _label_and_peak_changes(diffs: Sequence[TableDiff]) -> list[dict[str, Any]]:
    """Label and peak changes of configuration-keyed tables, once per configuration and origin column."""
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    for diff in diffs:
        spec = REGISTRY[diff.config]
        if spec.keys != CONFIGURATION_KEY:
            continue
        labels = {c.name for c in spec.label_columns}
        for cell in diff.cells:
            if cell.column not in labels and not cell.column.endswith(PEAK_SUFFIX):
                continue
            table, column = origin(spec, cell.column)
            key = (cell.key["configuration_id"], table, column, cell.old, cell.new)
            entry = found.setdefault(
                key,
                {
                    "configuration_id": key[0],
                    "kind": "label" if cell.column in labels else "peak",
                    "origin": f"{table}.{column}",
                    "old": cell.old,
                    "new": cell.new,
                    "tables": [],
                },
            )
            entry["tables"].append(diff.config)
    return sorted(found.values(), key=lambda e: (e["kind"], e["configuration_id"], e["origin"]))


def _references_to(ids: set[str], table_of: TableOf) -> list[dict[str, Any]]:
    """For every foreign key into a configuration-keyed table: the rows (new side, else old) pointing at ``ids``."""
    out = []
    for spec in REGISTRY.values():
        for fk in spec.references:
            target = REGISTRY[fk.table]
            if len(fk.columns) != 1 or (fk.references or target.keys) != CONFIGURATION_KEY:
                continue
            column = fk.columns[0]
            rows = _rows(spec.name, table_of, _pointing(column, ids))
            keys = sorted("+".join(str(r[k]) for k in spec.keys) for r in rows)
            out.append({"table": spec.name, "column": column, "references": fk.table, "rows": len(rows), "keys": keys})
    return out


def _pointing(column: str, ids: set[str]) -> Callable[[dict[str, Any]], bool]:
    return lambda row: row[column] in ids


def _rows(name: str, table_of: TableOf, keep: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    """Rows of the new side's table ``name`` (the old side's when the new one lacks it) that ``keep`` accepts."""
    table = table_of("new", name)
    if table is None:
        table = table_of("old", name)
    return [] if table is None else [r for r in table.to_pylist() if keep(r)]


def _transfer(truth_ids: set[str], read_ids: set[str], table_of: TableOf) -> dict[str, Any]:
    """Queries whose target label changed (their truth) and whose source configuration changed (their inputs)."""
    from ..transfer.api import QUERIES_CONFIG

    labelled = _rows(QUERIES_CONFIG, table_of, _pointing(TARGET, truth_ids))
    inputs = _rows(QUERIES_CONFIG, table_of, _pointing(SOURCE, read_ids))
    return {
        "label_queries": sorted(r["query_id"] for r in labelled),
        "label_tasks": sorted({r[TASK] for r in labelled}),
        "input_queries": sorted(r["query_id"] for r in inputs),
        "input_tasks": sorted({r[TASK] for r in inputs}),
    }


def _admission(
    changed: Mapping[str, set[tuple[Any, ...]]], any_ids: set[str], table_of: TableOf, donors: Mapping[str, str]
) -> dict[str, Any]:
    """Candidates with a changed row in a table that names candidates, and candidates whose donor changed."""
    records: set[str] = set()
    for name, keys in changed.items():
        spec = REGISTRY[name]
        if not keys or "candidate_id" not in spec.column_names:
            continue
        for side in ("old", "new"):
            table = table_of(side, name)
            for row in [] if table is None else table.to_pylist():
                if tuple(row[k] for k in spec.keys) in keys and row["candidate_id"] is not None:
                    records.add(row["candidate_id"])
    donor_changed = {c for c, configuration in donors.items() if configuration in any_ids}
    return {
        "candidates": sorted(records | donor_changed),
        "records_changed": sorted(records),
        "donor_changed": sorted(donor_changed),
    }


def _estimation(read_ids: set[str], table_of: TableOf) -> dict[str, Any]:
    """Pool configurations of the estimator comparison that changed, the families they are held out in, and the
    folds they touch: a changed pool configuration is scored in its own family's fold and fitted in the others."""
    from ..estimation.features import coarse_family
    from ..estimation.folds import POOL_STUDIES

    pool = {
        r["configuration_id"]: coarse_family(r["model_id"])
        for r in _rows("configurations", table_of, _in_pool(POOL_STUDIES))
    }
    changed = sorted(i for i in read_ids if i in pool)
    families = sorted({f for f in pool.values() if f is not None})
    return {
        "pool_configurations": changed,
        "held_out_in": sorted({pool[i] for i in changed if pool[i] is not None}),
        "folds": families if changed else [],
    }


def _in_pool(studies: Iterable[str]) -> Callable[[dict[str, Any]], bool]:
    chosen = set(studies)
    return lambda r: r["study"] in chosen


def _followup(changed: Mapping[str, set[tuple[Any, ...]]]) -> dict[str, Any]:
    """Per follow-up study: the changed rows of its configurations and result records."""
    from ..followup.core import STUDIES

    return {
        study: {"changed_rows": sum(len(keys) for name, keys in changed.items() if name.startswith(f"{study}_"))}
        for study in STUDIES
    }


def _count(n: int, noun: str) -> str:
    plural = {"query": "queries"}.get(noun, noun + "s")
    return f"{n} {noun if n == 1 else plural}"
