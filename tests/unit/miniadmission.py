"""The admission panel of the mini world as rows of its tables: candidates, attempts and the result records (slot
inventory, allocations, validated runs, realized work, stage measurements, collection summary), labels by name and
blanks as None.

Everything is counted from the slots :mod:`miniworld` designs: each slot is in the inventory with its allocation
and, when it has attempts, the validated run of its last one; every attempt has its realized work and the stages it
reached; the collection summary counts the attempts, their states and their recorded GPU-seconds (elapsed time times
the candidate's GPUs). Columns that another table repeats are set where they originate (:mod:`minirelease` copies
them); the other columns are generated from their kind.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from rlvrambench_hf.data.schema.pins import OUTCOME_LABELS

import miniworld as world

W, A, F, U = world.W, world.A, world.F, world.U
MEMORY_FAILURE_PEAK_MIB = 40950.0  # what the sampler saw when a process ran out of memory
CANDIDATE_GPUS = 2  # every admission candidate runs on two GPUs


def admission_panel() -> dict[str, list[dict]]:
    """The rows of every admission table, by config name."""
    attempts = admission_attempts()
    return {
        "admission_candidates": admission_candidates(),
        "admission_attempts": attempts,
        **admission_records(attempts),
    }


def admission_attempts() -> list[dict]:
    """Every recorded attempt of the admission panel, in slot order, each with its own scheduler job."""
    rows = []
    for (candidate, seed), attempts in world.SLOT_ATTEMPTS.items():
        for index, (state, peak, known_failure, repair, seconds) in enumerate(attempts, start=1):
            rows.append(
                {
                    "attempt_id": f"att-{candidate}-s{seed}-{index}",
                    "attempt_index": index,
                    "slot_id": world.slot_id(candidate, seed),
                    "candidate_id": candidate,
                    "case_id": world.CANDIDATES[candidate][0],
                    "role": "screen" if seed == world.SCREEN_SEED else "evaluation",
                    "training_seed": seed,
                    "job_id": str(world.FIRST_ADMISSION_JOB + len(rows)),
                    "state": state,
                    "known_memory_failure": known_failure,
                    "peak_mib": peak,
                    "completed_final_operations": state in (W, A),
                    "wrapper_exit_code": 0 if state in (W, A) else 1,
                    "elapsed_seconds": seconds,
                    "validation_error": None,
                    "repair_reason": repair,
                    "source_head": world.ADMISSION_SOURCE_HEAD,
                    "last_completed_step": 5 if state in (W, A) else 0,
                }
            )
    return rows


def admission_candidates() -> list[dict]:
    rows = []
    for candidate, (case, level, micro, reservation, donor, _) in world.CANDIDATES.items():
        screens = world.SLOT_ATTEMPTS.get((candidate, world.SCREEN_SEED), ())
        evaluations = [a for s in world.EVALUATION_SEEDS for a in world.SLOT_ATTEMPTS[(candidate, s)]]
        peaks = [a[1] for a in evaluations if a[1] is not None]
        family, dataset = world.ADMISSION_CASES[case]
        rows.append(
            {
                "candidate_id": candidate,
                "case_id": case,
                "model_family": family,
                "dataset": dataset,
                "configuration_level": level,
                "actor_micro_batch": micro,
                "reservation": reservation,
                "evaluation_state": world.TRUTH[candidate],
                "screen_state": screens[-1][0] if screens else None,
                "screen_peak_mib": screens[-1][1] if screens else None,
                "source_state": world.STATE_OF[donor],
                "evaluation_known_memory_failure": any(a[0] == F or a[2] for a in evaluations),
                "evaluation_known_above_margin": any(a[0] == A for a in evaluations),
                "evaluation_max_completed_peak_mib": max(peaks) if peaks else None,
                "recorded_screen_attempts": len(screens),
                "recorded_evaluation_attempts": len(evaluations),
                "gpu_count": CANDIDATE_GPUS,
            }
        )
    return rows


def admission_records(attempts: Sequence[dict]) -> dict[str, list[dict]]:
    """The inventory, allocation and validated run of every slot, and the realized work and stage measurements of
    every attempt, with the collection summary."""
    inventory, allocated, runs = [], [], []
    for candidate, seed in world.slots():
        slot = world.slot_id(candidate, seed)
        mine = [a for a in attempts if a["slot_id"] == slot]
        inventory.append(
            {
                "slot_id": slot,
                "recorded_attempts": len(mine),
                "allocation_records": 1,
                "status": "has_invocations" if mine else "no_invocation",
            }
        )
        final = mine[-1] if mine else None  # the allocation and run of a replaced slot are its last attempt's
        allocated.append(
            {
                "slot_id": slot,
                "job_id": None if final is None else final["job_id"],
                "status": "complete" if final else "failed",
                "process_started": final is not None,
                "error": None if final else "allocation ended before the process started",
            }
        )
        if final is not None:
            runs.append(validated_run(final))
    return {
        "admission_slot_inventory": inventory,
        "admission_allocations": allocated,
        "admission_validated_runs": runs,
        "admission_realized_work": [realized_work(a) for a in attempts],
        "admission_stage_measurements": [m for a in attempts for m in stage_measurements(a)],
        "admission_collection_summary": [collection_summary(attempts, len(inventory))],
    }


def validated_run(attempt: dict) -> dict:
    completed = attempt["completed_final_operations"]
    steps = list(range(1, 6)) if completed else None
    peak = attempt["peak_mib"] if completed else MEMORY_FAILURE_PEAK_MIB
    return {
        "experiment_id": attempt["slot_id"],
        "job_id": attempt["job_id"],
        "candidate_id": attempt["candidate_id"],
        "training_seed": attempt["training_seed"],
        "seed_role": attempt["role"],
        "success": completed,
        "safe": attempt["state"] == W,
        "completed_requested_run": completed,
        "peak_gpu_memory_mib": peak,
        "overall_peak_gpu_memory_mib": peak,
        "failure_kind": None if completed else "rollout_init_memory",
        "elapsed_seconds": attempt["elapsed_seconds"],
        "observed_positive_steps": 5 if completed else 0,
        "requested_steps": 5,
        "terminal_phase": "checkpoint" if completed else "initializing",
        "per_gpu_peak_mib": f'{{"0": {peak}, "1": {peak}}}',
        "phase_steps_initializing": [0],
        **{f"phase_steps_{phase}": steps for phase in ("rollout", "actor_update", "weight_sync")},
        **{f"phase_steps_{phase}": None for phase in ("reference_logprob", "idle", "checkpoint", "validation")},
        "phase_steps_unknown": None,
        "source_head": attempt["source_head"],
    }


def realized_work(attempt: dict) -> dict:
    steps = 5 if attempt["completed_final_operations"] else 0
    return {"attempt_id": attempt["attempt_id"], "logged_steps": steps, "maximum_logged_step": steps}


def stage_measurements(attempt: dict) -> list[dict]:
    """The phases an attempt reached: initializing, and rollout and actor update when it completed."""
    completed = attempt["completed_final_operations"]
    phases = ("initializing", "rollout", "actor_update") if completed else ("initializing",)
    failed = attempt["state"] == F
    return [
        {
            "attempt_id": attempt["attempt_id"],
            "phase": phase,
            "observed_peak_mib": attempt["peak_mib"]
            if phase == "actor_update"
            else MEMORY_FAILURE_PEAK_MIB
            if failed
            else None,
            "completed_process": completed,
            "failure_kind": "rollout_init_memory" if failed else None,
        }
        for phase in phases
    ]


def collection_summary(attempts: Sequence[dict], planned_slots: int) -> dict:
    """The collection's counts and recorded GPU-seconds (elapsed times the candidate's GPUs); the seals' digests
    are filled in by :mod:`unit.miniseals`."""
    states = Counter(a["state"] for a in attempts)
    truth = Counter(world.TRUTH.values())
    seconds = [a["elapsed_seconds"] * CANDIDATE_GPUS for a in attempts if a["elapsed_seconds"] is not None]
    return {
        "planned_slots": planned_slots,
        "recorded_attempts": len(attempts),
        "validated_memory_outcomes": sum(n for s, n in states.items() if s != U),
        **{f"attempt_states.{label}": states[label] for label in OUTCOME_LABELS},
        **{f"hidden_evaluation_states.{label}": truth[label] for label in OUTCOME_LABELS},
        "source_heads": [world.ADMISSION_SOURCE_HEAD],
        "physical_recorded_gpu_seconds": math.fsum(seconds),
        "gpu_seconds_scope": "Invocation elapsed times times allocated GPUs; no queue time.",
    }
