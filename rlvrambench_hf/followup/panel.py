"""The facts of a follow-up panel beside its scores: what happened to every planned seed slot, what the panel cost,
and the always-failure reference rule.

Pure functions over decoded rows of the study's result records (``<study>_processes``, ``_costs``,
``_cost_totals``, ``_summary``). Each fact is counted from the records themselves; the panel's own summary and
cost totals are compared with the counts, and any disagreement is reported beside them, never hidden.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..data.schema.pins import UNRESOLVED
from .core import MethodPredictions

#: The result records of a follow-up study, as the registry names them (``<study>_<record>``).
RECORDS = ("processes", "pairs", "summary", "costs", "cost_totals")
#: The reference rule scored beside the frozen methods: reject every configuration as a memory failure.
ALWAYS_FAILURE = "always_failure"
MEMORY_FAILURE = "memory_failure"
SECONDS_PER_HOUR = 3600.0
#: The scheduler's state of an allocation killed for exhausting its host memory (Slurm's cgroup limit).
HOST_OOM_STATE = "OUT_OF_MEMORY"
#: How an unresolved slot whose allocation the scheduler killed for host memory is named among the failure kinds.
HOST_MEMORY_FAILURE = "host_memory_failure"
#: The card's separate device preflight of the expanded-host follow-up, and the file that records it.
PREFLIGHT_GPU_HOURS = 0.08
PREFLIGHT_FILE = "benchmark/host_capacity/execution_history.json"
#: Summary member → the slot fact it publishes.
_SUMMARY_FACTS = {
    "planned_processes": "planned_processes",
    "known_launched_processes": "launched_processes",
    "eligible_processes": "eligible_processes",
    "completed_processes": "completed_processes",
    "unresolved_processes": "unresolved_processes",
    "planned_configurations": "planned_configurations",
    "resolved_configurations": "resolved_configurations",
}


def record_config(study: str, record: str) -> str:
    """The registry config of one result record of ``study`` (e.g. ``larger_model_processes``)."""
    return f"{study}_{record}"


def reference_predictions(rows: Sequence[Mapping[str, Any]]) -> dict[str, MethodPredictions]:
    """The always-failure reference: every planned configuration predicted ``memory_failure``, no peak."""
    return {ALWAYS_FAILURE: MethodPredictions(states={r["configuration_id"]: MEMORY_FAILURE for r in rows})}


def slot_facts(
    processes: Sequence[Mapping[str, Any]],
    scores: Mapping[str, Any],
    summary: Mapping[str, Any] | None = None,
    allocations: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Planned, launched, eligible and completed processes, the eligible memory failures with their failure kind
    and stage, the unresolved slots with their failure kind, and the resolved configurations (from ``scores``);
    ``summary`` (the study's summary record) is compared with them.

    An unresolved slot whose scheduler allocation (``allocations``, the study's cost records) ended
    ``OUT_OF_MEMORY`` is a **host-memory failure** (the scheduler killed the job for its host-memory limit; the
    training log records it as ``vllm_executor_failure``): it is named ``host_memory_failure`` among the failure
    kinds and counted in ``host_memory_failures``. It is not a GPU-memory outcome and stays unresolved."""
    eligible = [p for p in processes if p["eligible"]]
    failures = [p for p in eligible if p["state"] == MEMORY_FAILURE]
    unresolved = [p for p in processes if p["state"] == UNRESOLVED]
    host_killed = {a["job_id"] for a in allocations or () if a.get("scheduler_state") == HOST_OOM_STATE}
    host = [p for p in unresolved if p["job_id"] in host_killed]
    facts: dict[str, Any] = {
        "planned_processes": len(processes),
        "launched_processes": sum(bool(p["launched"]) for p in processes),
        "eligible_processes": len(eligible),
        "completed_processes": sum(bool(p["completed"]) for p in processes),
        "eligible_memory_failures": len(failures),
        "eligible_memory_failure_kinds": _counts(p["failure_kind"] for p in failures),
        "eligible_memory_failure_stages": _counts(p["failure_stage"] for p in failures),
        "unresolved_processes": len(unresolved),
        "unresolved_failure_kinds": _counts(
            HOST_MEMORY_FAILURE if p["job_id"] in host_killed else p["failure_kind"] for p in unresolved
        ),
        "host_memory_failures": len(host),
        "host_memory_failures_logged_as": _counts(p["failure_kind"] for p in host),
        "planned_configurations": scores["planned_configurations"],
        "resolved_configurations": scores["resolved_configurations"],
    }
    facts["summary_disagreements"] = [
        f"summary {member} is {summary[member]!r}, the records give {facts[fact]!r}"
        for member, fact in _SUMMARY_FACTS.items()
        if summary is not None and summary.get(member) is not None and summary[member] != facts[fact]
    ]
    return facts


def cost_facts(
    allocations: Sequence[Mapping[str, Any]],
    processes: Sequence[Mapping[str, Any]],
    totals: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Allocation GPU time (every scheduler allocation, outer start to end) and task GPU time (every planned
    process's task-provisioned time), in seconds and hours, with the records whose time is unknown; ``totals``
    (the study's cost totals) is compared with them."""
    allocation = [a["whole_allocation_gpu_seconds"] for a in allocations]
    task = [p["task_gpu_seconds"] for p in processes]
    facts: dict[str, Any] = {
        "allocations": len(allocations),
        "allocation_gpu_seconds": _known_sum(allocation),
        "unknown_allocation_records": allocation.count(None),
        "task_gpu_seconds": _known_sum(task),
        "unknown_task_records": task.count(None),
    }
    facts["allocation_gpu_hours"] = facts["allocation_gpu_seconds"] / SECONDS_PER_HOUR
    facts["task_gpu_hours"] = facts["task_gpu_seconds"] / SECONDS_PER_HOUR
    facts["scope"] = totals.get("scope") if totals else None
    facts["totals_disagreements"] = _total_disagreements(facts, totals) if totals else []
    return facts


def _total_disagreements(facts: Mapping[str, Any], totals: Mapping[str, Any]) -> list[str]:
    out = []
    for ledger, fact in (
        ("whole_allocation_time", "allocation_gpu_seconds"),
        ("task_provisioned_time", "task_gpu_seconds"),
    ):
        published = totals.get(f"{ledger}.known_gpu_seconds")
        if published is not None and not math.isclose(published, facts[fact], rel_tol=1e-9, abs_tol=1e-6):
            out.append(f"cost totals {ledger} is {published!r} GPU-seconds, the records give {facts[fact]!r}")
    return out


def _known_sum(values: Sequence[float | None]) -> float:
    return math.fsum(v for v in values if v is not None)


def _counts(values: Iterable[object]) -> dict[str, int]:
    """Value → count, the most frequent first; a null value is counted as ``none``."""
    counts = Counter("none" if v is None else str(v) for v in values)
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
