"""The release's own failures of one kind (pure over its typed tables): how many processes and attempts failed that
way, at which stages, the measured configurations that did, and each one's within-margin neighbours — the measured
configurations that differ from it in one defining setting and stayed within the margin, i.e. the change that the
release itself saw work."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from ..assess.records import DEFINING_SETTINGS

#: Tables whose rows carry a ``failure_kind`` (eligible runs, every attempt, the follow-ups' processes).
KIND_TABLES = ("eligible_runs", "recorded_attempts", "larger_model_processes", "expanded_host_processes")
#: Tables :func:`release_failures` reads.
TABLES_NEEDED = (*KIND_TABLES, "all_configurations", "larger_model_configurations", "estimation_targets")
#: Defining settings compared between a failed configuration and its neighbours (all measured on the same device).
COMPARED = tuple(s for s in DEFINING_SETTINGS if s != "device_capacity_mib")
#: Configurations listed per kind, and neighbours per configuration.
SHOWN_CONFIGURATIONS, SHOWN_NEIGHBOURS = 5, 3
_SUMMARY = ("model_id", "workload_id", "gpu_count", "vllm_gpu_memory_utilization", "actor_micro_batch")


def release_failures(kind: str | None, tables: Mapping[str, pa.Table]) -> dict[str, Any]:
    """The release's record of ``kind`` (a ``failure_kind``): counts per table, the stages of the eligible runs, and
    up to :data:`SHOWN_CONFIGURATIONS` measured configurations that failed that way with their within-margin
    neighbours (empty when the release has no failure of that kind)."""
    counts = {name: _count(tables[name], kind) for name in KIND_TABLES if name in tables}
    stages = Counter(
        r["terminal_stage"]
        for r in _rows(tables.get("eligible_runs"), kind, ("terminal_stage",))
        if r["terminal_stage"]
    )
    ids = Counter(
        r["configuration_id"]
        for name in KIND_TABLES
        for r in _rows(tables.get(name), kind, ("configuration_id", "eligible"))
        if r["configuration_id"] and (name != "recorded_attempts" or not r["eligible"])  # eligible ones are runs
    )
    settings = _settings_by_id(tables)
    within = [s for s in settings.values() if s.get("observed_state") == "within_margin"]
    shown = []
    for configuration_id, processes in ids.most_common(SHOWN_CONFIGURATIONS):
        setting = settings.get(configuration_id, {})
        shown.append(
            {
                "configuration_id": configuration_id,
                "failed_processes": processes,
                "observed_state": setting.get("observed_state"),
                **{k: setting.get(k) for k in _SUMMARY},
                "within_margin_neighbours": neighbours(setting, within) if _is_failure(setting) else [],
            }
        )
    return {
        "failure_kind": kind,
        "counts": counts,
        "terminal_stages": dict(stages.most_common()),
        "configurations": shown,
        "configurations_total": len(ids),
    }


def neighbours(failed: Mapping[str, object], within: Sequence[Mapping[str, object]]) -> list[dict[str, Any]]:
    """The within-margin configurations that differ from ``failed`` in exactly one defining setting, closest peak to
    the margin first (none when ``failed`` does not record every setting)."""
    if any(failed.get(k) is None for k in COMPARED):
        return []
    found = []
    for other in within:
        differing = [k for k in COMPARED if other.get(k) is not None and failed[k] != other[k]]
        if len(differing) == 1:
            (name,) = differing
            found.append(
                {
                    "configuration_id": other["configuration_id"],
                    "setting": name,
                    "failed": failed[name],
                    "within_margin": other[name],
                    "max_completed_peak_mib": other.get("max_completed_run_peak_mib"),
                }
            )
    found.sort(key=lambda n: (-(n["max_completed_peak_mib"] or 0.0), n["configuration_id"]))  # type: ignore[operator]
    return found[:SHOWN_NEIGHBOURS]


def _is_failure(setting: Mapping[str, object]) -> bool:
    """A configuration the release labelled above the margin or a memory failure (not one whose failed attempt
    had another cause)."""
    return setting.get("observed_state") in ("memory_failure", "above_margin")


def _count(table: pa.Table, kind: str | None) -> int:
    if "failure_kind" not in table.column_names:
        return 0
    return sum(1 for k in table.column("failure_kind").to_pylist() if k == kind)


def _rows(table: pa.Table | None, kind: str | None, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    if table is None or "failure_kind" not in table.column_names:
        return []
    present = [c for c in columns if c in table.column_names]
    kinds = table.column("failure_kind").to_pylist()
    values = {c: table.column(c).to_pylist() for c in present}
    return [{c: values[c][i] if c in values else None for c in columns} for i, k in enumerate(kinds) if k == kind]


def _settings_by_id(tables: Mapping[str, pa.Table]) -> dict[str, dict[str, Any]]:
    """The settings and state of every measured configuration, by id (the 212 and the larger-model follow-up)."""
    out: dict[str, dict[str, Any]] = {}
    for name in ("estimation_targets", "larger_model_configurations", "all_configurations"):
        table = tables.get(name)
        if table is None:
            continue
        for row in table.to_pylist():
            out[row["configuration_id"]] = {**out.get(row["configuration_id"], {}), **row}
    return out
