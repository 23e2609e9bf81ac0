"""The follow-up panels of the mini world as rows of their tables: each study's configurations and its five result
records (processes, pairs, summary, costs, cost totals), labels by name and blanks as None.

Everything is counted from the slots :mod:`miniworld` designs, so the tables agree with each other as the real
release's do: each process points at its configuration, its pair and its allocation; the summary and the cost
totals are the counts and sums of the records. Columns that another table repeats are set where they originate
(:mod:`minirelease` copies them); the other columns are generated from their kind.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from rlvrambench_hf.data.schema.panel_columns import COST_LEDGERS

import miniworld as world

W, A, F, U = world.W, world.A, world.F, world.U
#: Cost ledger → (record, column) whose values it totals.
LEDGER_SOURCES = {
    "batch_step_time": ("costs", "batch_step_gpu_seconds"),
    "invocation_reservation_time": ("processes", "invocation_reservation_gpu_seconds"),
    "observed_allocation_time": ("costs", "observed_allocation_gpu_seconds"),
    "task_provisioned_time": ("processes", "task_gpu_seconds"),
    "whole_allocation_time": ("costs", "whole_allocation_gpu_seconds"),
}
assert set(LEDGER_SOURCES) == set(COST_LEDGERS), "every cost ledger of the registry is totalled here"
MEMORY_FAILURE_PEAK_MIB = 40950.0  # what the sampler saw when a process ran out of memory


def followup_panels() -> dict[str, list[dict]]:
    """The rows of both follow-up studies' tables, by config name."""
    return {name: rows for study in world.PANELS for name, rows in followup_tables(study).items()}


def outcome(slots: Sequence[world.Slot]) -> dict:
    """A configuration's repeated label and evidence from its three slots."""
    eligible = [s for s in slots if s[0] != U]
    peaks = [s[1] for s in slots if s[1] is not None]
    states = {s[0] for s in eligible}
    resolved = len(eligible) == len(slots)
    state = U if not resolved else F if F in states else A if A in states else W
    return {
        "observed_state": state,
        "unresolved": not resolved,
        "completed_peak_mib": max(peaks) if resolved and peaks else None,
        "maximum_known_completed_peak_mib": max(peaks) if peaks else None,
        "completed_processes": len(peaks),
        "known_memory_failure": F in states,
        "known_margin_exceedance": A in states,
    }


def settings_of(study: str, configuration_id: str) -> tuple[str, str, int]:
    """(workload, level, GPUs) of a follow-up configuration."""
    if study == "expanded_host":
        return world.HOST_SETTINGS[configuration_id]
    return next((w, level, g) for w, level, g in world.TARGETS if world.target_id(w, level, g) == configuration_id)


def panel_rows(study: str) -> list[dict]:
    """The rows of a follow-up panel: frozen predictions, outcome and seed evidence of each configuration."""
    panel, seeds, _ = world.PANELS[study]
    rows = []
    for configuration_id, (slots, *predictions) in panel.items():
        eligible = [str(seed) for seed, s in zip(seeds, slots) if s[0] != U]
        pending = [str(seed) for seed, s in zip(seeds, slots) if s[0] == U]
        row = {"configuration_id": configuration_id, **outcome(slots), "required_seeds": len(seeds)}
        row.update(eligible_seed_count=len(eligible), eligible_seeds=eligible, unresolved_seeds=pending or None)
        row["all_three_seeds_eligible"] = not pending
        if study == "expanded_host":  # the larger-model panel copies its settings from the estimation targets
            workload, level, gpus = world.HOST_SETTINGS[configuration_id]
            row.update(model=world.TARGET_MODEL, workload=workload, configuration_level=level, gpu_count=gpus)
        for method, (predicted, predicted_peak) in zip(world.FROZEN_METHODS, predictions):
            row[f"{method}_predicted_state"] = predicted
            row[f"{method}_predicted_peak_mib"] = predicted_peak
            row[f"{method}_unscored_approval"] = row["unresolved"] and predicted == W
        rows.append(row)
    return rows


def pair_id(study: str, workload: str, level: str, seed: int) -> str:
    return f"{world.PANELS[study][2]}-{workload}-{level}-s{seed}"


def processes(study: str) -> list[dict]:
    """One process per planned seed slot of ``study``, without its job (:func:`allocations` adds it)."""
    panel, seeds, _ = world.PANELS[study]
    rows = []
    for configuration_id, (slots, *_) in panel.items():
        workload, level, gpus = settings_of(study, configuration_id)
        for seed, (state, peak, kind, stage, launched) in zip(seeds, slots):
            seconds = world.INVOCATION_SECONDS[state] if launched else 0.0
            rows.append(
                {
                    "experiment_id": f"{configuration_id}-s{seed}",
                    "configuration_id": configuration_id,
                    "pair_id": pair_id(study, workload, level, seed),
                    "task_gpu_count": gpus,
                    "state": state,
                    "eligible": state != U,
                    "completed": peak is not None,
                    "launched": launched,
                    "dispatched": launched,
                    "durable_terminal_record_present": True,
                    "failure_kind": kind,
                    "failure_stage": stage,
                    "completed_peak_mib": peak,
                    "observed_task_peak_mib": MEMORY_FAILURE_PEAK_MIB if state == F else peak,
                    "known_memory_failure": state == F,
                    "known_margin_exceedance": state == A,
                    "online_status": state if state != U else "infrastructure_invalid" if launched else "not_launched",
                    "reason": None if launched else "ValueError: Scheduler returned a different allocation",
                    "invocation_elapsed_seconds": seconds,
                    "invocation_reservation_gpu_seconds": seconds * world.ALLOCATION_GPUS,
                    "task_gpu_seconds": seconds * gpus,
                    "task_runtime_seconds": seconds - 60.0 if peak is not None else None,
                    "allocation_gpu_count": world.ALLOCATION_GPUS,
                    "validation_errors": "[]",
                }
            )
    return rows


def pairs(study: str, rows: Sequence[dict]) -> list[dict]:
    """The matched pairs of ``study``: the two GPU counts of one seed; a count the panel does not plan is null."""
    out = []
    for pair in dict.fromkeys(r["pair_id"] for r in rows):
        mine = {r["task_gpu_count"]: r for r in rows if r["pair_id"] == pair}
        two, four = mine.get(2), mine.get(4)
        workload, level, _ = settings_of(study, next(iter(mine.values()))["configuration_id"])
        both = two is not None and four is not None
        completed = both and two["completed"] and four["completed"]
        out.append(
            {
                "pair_id": pair,
                "training_seed": int(pair.rsplit("-s", 1)[1]),
                "configuration_level": level,
                "dataset": workload,
                "first_task_gpu_count": 2 if two is not None else 4,
                "two_gpu_state": None if two is None else two["state"],
                "four_gpu_state": None if four is None else four["state"],
                "both_eligible": both and two["eligible"] and four["eligible"],
                "both_completed": completed,
                "peak_difference_4_minus_2_mib": four["completed_peak_mib"] - two["completed_peak_mib"]
                if completed
                else None,
                "runtime_difference_4_minus_2_seconds": 0.0 if completed else None,
            }
        )
    return out


def allocations(study: str, rows: list[dict]) -> list[dict]:
    """One scheduler allocation per pair with a launched process; each launched process gets its pair's job (the
    others none)."""
    launched = list(dict.fromkeys(r["pair_id"] for r in rows if r["launched"]))
    job_of = {pair: str(world.FIRST_FOLLOWUP_JOB[study] + i) for i, pair in enumerate(launched)}
    for r in rows:
        r["job_id"] = job_of[r["pair_id"]] if r["launched"] else None
    seconds = world.ALLOCATION_SECONDS[study]
    out = []
    for i, pair in enumerate(launched):
        known = pair != world.UNACCOUNTED_PAIR
        start = 1_800_000_000.0 + 10_000.0 * i
        whole = world.ALLOCATION_GPUS * seconds if known else None
        out.append(
            {
                "job_id": job_of[pair],
                "pair_id": pair,
                "allocation_gpu_count": world.ALLOCATION_GPUS,
                "accounting_valid": known,
                "errors": None if known else ["no outer scheduler record"],
                "scheduler_state": "COMPLETED" if known else None,
                "scheduler_started_at_epoch": start if known else None,
                "scheduler_ended_at_epoch": start + seconds if known else None,
                "batch_started_at_epoch": start if known else None,
                "batch_ended_at_epoch": start + seconds if known else None,
                "batch_minus_outer_end_seconds": 0.0 if known else None,
                "ledger_ended_at_epoch": start + seconds - 1.0,
                "ledger_minus_outer_end_seconds": -1.0 if known else None,
                "batch_step_gpu_seconds": whole,
                "whole_allocation_gpu_seconds": whole,
                "observed_allocation_gpu_seconds": world.ALLOCATION_GPUS * (seconds - 1.0),
                "timestamp_precision_seconds": 1,
            }
        )
    return out


def followup_tables(study: str) -> dict[str, list[dict]]:
    """The configurations and five result records of ``study``, by config name."""
    configurations, slots = panel_rows(study), processes(study)
    costs = allocations(study, slots)
    matched = pairs(study, slots)
    summary = {
        "planned_configurations": len(configurations),
        "resolved_configurations": sum(not r["unresolved"] for r in configurations),
        "planned_pairs": len(matched),
        "planned_processes": len(slots),
        "known_launched_processes": sum(r["launched"] for r in slots),
        "unknown_launch_status_processes": 0,
        "eligible_processes": sum(r["eligible"] for r in slots),
        "completed_processes": sum(r["completed"] for r in slots),
        "unresolved_processes": sum(r["state"] == U for r in slots),
        "pair_errors": None,
        "schema_version": 1,
    }
    records = {"processes": slots, "costs": costs}
    totals: dict = {
        "scope": "Missing records are unknown, not zero cost.",
        "scheduler_scope_note": "Never add ledgers.",
    }
    for ledger, (record, column) in LEDGER_SOURCES.items():
        totals.update({f"{ledger}.{k}": v for k, v in ledger_totals(r[column] for r in records[record]).items()})
    return {
        f"{study}_configurations": configurations,
        f"{study}_processes": slots,
        f"{study}_pairs": matched,
        f"{study}_summary": [summary],
        f"{study}_costs": costs,
        f"{study}_cost_totals": [totals],
    }


def ledger_totals(values: Iterable[float | None]) -> dict:
    """A ledger's totals: GPU-seconds of the known records, their count, the unknown ones and the complete total."""
    listed = list(values)
    known = [v for v in listed if v is not None]
    unknown = len(listed) - len(known)
    total = math.fsum(known)
    return {
        "complete_total_gpu_seconds": total if unknown == 0 else None,
        "known_gpu_seconds": total,
        "known_records": len(known),
        "unknown_records": unknown,
    }
