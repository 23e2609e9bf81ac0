"""The columns of the follow-up and admission panels' result records, with their kind and one-line meaning (data).

Part of the registry's vocabulary (:data:`.columns.VOCABULARY` merges it): the process, pair, cost and summary
records of the two follow-up studies and the realized-work, allocation, validated-run, stage and collection
records of the admission panel. A name shared with the static tables keeps its kind and meaning there.
Columns of nested JSON objects are named ``outer.inner``.
"""

from __future__ import annotations

#: The time ledgers of a follow-up study's ``costs.json``, each with its totals.
COST_LEDGERS: dict[str, str] = {
    "batch_step_time": "scheduler batch-step spans (overlap the outer records: never add them)",
    "invocation_reservation_time": "invocations times the GPUs their allocation reserved",
    "observed_allocation_time": "allocation time observed until the runner finalized",
    "task_provisioned_time": "invocations times the GPUs their task was given",
    "whole_allocation_time": "scheduler allocations from their reported outer start to end",
}
_LEDGER_FIELDS: dict[str, tuple[str, str]] = {
    "complete_total_gpu_seconds": ("float64", "total GPU-seconds; null unless every record is known"),
    "known_gpu_seconds": ("float64", "GPU-seconds of the known records"),
    "known_records": ("int64", "records with a known time"),
    "unknown_records": ("int64", "records without a known time (unknown, not zero cost)"),
}
#: The admission panel's per-phase columns of a validated run (``phase_peak_<phase>_mib``, ``phase_steps_<phase>``).
RUN_PHASES = (
    "initializing",
    "rollout",
    "reference_logprob",
    "actor_update",
    "weight_sync",
    "idle",
    "checkpoint",
    "validation",
    "unknown",
)


_STATES = ("within_margin", "above_margin", "memory_failure")


def _c(kind: str, description: str) -> tuple[str, str]:
    return kind, description


PANEL_VOCABULARY: dict[str, tuple[str, str]] = {
    # follow-up processes (one row per planned seed slot)
    "allocation_gpu_count": _c("int64", "GPUs of the scheduler allocation"),
    "completed": _c("bool", "The process completed its requested training"),
    "dispatched": _c("bool", "The slot was dispatched to an allocation"),
    "durable_terminal_record_present": _c("bool", "A durable terminal record of the slot exists"),
    "expected_execution_commit": _c("string", "Source commit the slot was to run"),
    "failure_stage": _c("string", "Stage of a failure: device_preflight, not_started or training"),
    "invocation_elapsed_seconds": _c("float64", "Elapsed wall time of the invocation, seconds"),
    "invocation_id": _c("string", "Invocation id; null when the slot never launched"),
    "invocation_reservation_gpu_seconds": _c("float64", "Invocation time times the allocation's GPUs"),
    "launched": _c("bool", "The slot's process was launched"),
    "observed_task_peak_mib": _c("float64", "Maximum sampled per-device memory of the task, MiB; null if none"),
    "online_status": _c("string", "Status the online validator gave the slot"),
    "reason": _c("string", "Why a slot was not launched; null otherwise"),
    "task_gpu_count": _c("int64", "GPUs given to the task"),
    "task_gpu_seconds": _c("float64", "Task-provisioned time: invocation time times the task's GPUs"),
    "task_runtime_seconds": _c("float64", "Runtime of the training task, seconds; null if it never ran"),
    "validation_errors": _c("string", "Validation errors of the slot, as a JSON list"),
    "worker_initialization": _c("string", "Worker initialization status; null when not reached"),
    # follow-up pairs (the two GPU counts of one seed)
    "both_completed": _c("bool", "Both invocations of the pair completed"),
    "both_eligible": _c("bool", "Both invocations of the pair are eligible"),
    "first_task_gpu_count": _c("int64", "GPU count of the pair's first invocation"),
    "peak_difference_4_minus_2_mib": _c("float64", "Four-GPU minus two-GPU completed peak, MiB; null unless both"),
    "runtime_difference_4_minus_2_seconds": _c("float64", "Four-GPU minus two-GPU runtime, seconds; null unless both"),
    # follow-up summary
    "known_launched_processes": _c("int64", "Planned processes known to have launched"),
    "pair_errors": _c("string_list", "Errors of matched pairs, as pair=error; null when none"),
    "planned_configurations": _c("int64", "Planned configurations"),
    "planned_pairs": _c("int64", "Planned matched pairs"),
    "planned_processes": _c("int64", "Planned processes (seed slots)"),
    "resolved_configurations": _c("int64", "Configurations with a resolved repeated label"),
    "schema_version": _c("int64", "Version of the record's layout"),
    "unknown_launch_status_processes": _c("int64", "Planned processes whose launch status is unknown"),
    "unresolved_processes": _c("int64", "Planned processes without an eligible outcome"),
    # follow-up cost records (one per scheduler allocation)
    "accounting_valid": _c("bool", "The allocation's accounting records agree"),
    "batch_ended_at_epoch": _c("float64", "End of the scheduler batch step, Unix seconds"),
    "batch_minus_outer_end_seconds": _c("float64", "Batch-step end minus outer-record end, seconds"),
    "batch_started_at_epoch": _c("float64", "Start of the scheduler batch step, Unix seconds"),
    "batch_state": _c("string", "Scheduler state of the batch step"),
    "batch_step_gpu_seconds": _c("float64", "Batch-step span times the allocation's GPUs"),
    "errors": _c("string_list", "Accounting errors of the allocation; null when none"),
    "ledger_ended_at_epoch": _c("float64", "End of the runner's ledger, Unix seconds"),
    "ledger_minus_outer_end_seconds": _c("float64", "Ledger end minus outer-record end, seconds"),
    "observed_allocation_gpu_seconds": _c("float64", "Observed allocation time times its GPUs; null if unknown"),
    "pair_ledger_sha256": _c("string", "SHA-256 of the pair's ledger in the evidence archive"),
    "pair_manifest_sha256": _c("string", "SHA-256 of the pair's allocation manifest in the evidence archive"),
    "raw_record_provenance.batch.line": _c("string", "Scheduler accounting line of the batch step"),
    "raw_record_provenance.batch.line_number": _c("int64", "Line number of the batch-step record"),
    "raw_record_provenance.batch.sha256": _c("string", "SHA-256 of the batch-step line"),
    "raw_record_provenance.format_fields": _c("string_list", "Fields of the scheduler accounting lines"),
    "raw_record_provenance.outer.line": _c("string", "Scheduler accounting line of the outer job record"),
    "raw_record_provenance.outer.line_number": _c("int64", "Line number of the outer job record"),
    "raw_record_provenance.outer.sha256": _c("string", "SHA-256 of the outer job line"),
    "raw_record_provenance.source_sha256": _c("string", "SHA-256 of the scheduler accounting export"),
    "raw_record_provenance.time_format": _c("string", "Time format of the accounting export"),
    "raw_record_provenance.timezone": _c("string", "Time zone of the accounting export"),
    "scheduler_ended_at_epoch": _c("float64", "Reported end of the allocation, Unix seconds"),
    "scheduler_scope": _c("string", "Which scheduler record the allocation time comes from"),
    "scheduler_started_at_epoch": _c("float64", "Reported start of the allocation, Unix seconds"),
    "scheduler_state": _c("string", "Scheduler state of the allocation"),
    "timestamp_interval": _c("string", "What a reported timestamp stands for"),
    "timestamp_precision_seconds": _c("int64", "Precision of the reported timestamps, seconds"),
    "whole_allocation_gpu_seconds": _c("float64", "Whole allocation (outer start to end) times its GPUs"),
    # follow-up cost totals
    "scheduler_scope_note": _c("string", "How the scheduler totals may and may not be combined"),
    **{
        f"{ledger}.{name}": _c(kind, f"{meaning[0].upper()}{meaning[1:]} of {what}")
        for ledger, what in COST_LEDGERS.items()
        for name, (kind, meaning) in _LEDGER_FIELDS.items()
    },
    # admission realized work (one row per attempt)
    "logged_steps": _c("int64", "Training steps with a logged record"),
    "maximum_logged_step": _c("int64", "Highest logged training step"),
    "original_train_examples": _c("int64", "Training examples before selection"),
    "selected_before_filter": _c("int64", "Training examples selected before the prompt-length filter"),
    "train_examples_after_filter": _c("int64", "Training examples after the prompt-length filter"),
    "filtered_train_examples": _c("int64", "Training examples removed by the prompt-length filter"),
    "positive_gradient_steps": _c("int64", "Steps with a positive gradient norm"),
    "steps_with_gradient_metric": _c("int64", "Steps that logged a gradient norm"),
    "cap_reaching_batches": _c("int64", "Batches with a response reaching the length cap"),
    "batches_with_length_metrics": _c("int64", "Batches that logged length metrics"),
    "fixed_order_batches_per_epoch": _c("int64", "Batches per epoch in the fixed data order"),
    "fixed_order_distinct_train_examples_derived": _c("int64", "Distinct training examples the logged steps used"),
    "fixed_order_wraps_derived": _c("int64", "Times the fixed data order wrapped around"),
    "prompt_mean_over_logged_batches": _c("float64", "Mean prompt length over logged batches, tokens"),
    "prompt_maximum_observed": _c("float64", "Longest observed prompt, tokens; null without logged batches"),
    "prompt_minimum_observed": _c("float64", "Shortest observed prompt, tokens; null without logged batches"),
    "response_mean_over_logged_batches": _c("float64", "Mean response length over logged batches, tokens"),
    "response_maximum_observed": _c("float64", "Longest observed response, tokens; null without logged batches"),
    "response_minimum_observed": _c("float64", "Shortest observed response, tokens; null without logged batches"),
    # admission allocations and slot inventory
    "status": _c("string", "Status of the record"),
    "process_started": _c("bool", "The allocation started its process"),
    "error": _c("string", "Allocation error; null when none"),
    "allocation_records": _c("int64", "Allocation records of the slot"),
    # admission validated runs
    "run_group": _c("string", "Group of runs the record belongs to"),
    "study_stage": _c("string", "Stage of the study"),
    "data_dir": _c("string", "Training data folder on the cluster"),
    "custom_reward_function_path": _c("string", "Custom reward function file; null when none"),
    "custom_reward_function_name": _c("string", "Custom reward function name; null when none"),
    "revision_study": _c("string", "Study of the revision the run belongs to"),
    "seed_role": _c("string", "screen or evaluation"),
    "per_process_timeout_seconds": _c("int64", "Timeout of the process, seconds"),
    "success": _c("bool", "The run completed its requested work"),
    "safe": _c("bool", "The run completed within the margin"),
    "peak_gpu_memory_mib": _c("float64", "Maximum sampled per-device memory, MiB"),
    "dominant_phase": _c("string", "Phase holding the peak"),
    "terminal_phase": _c("string", "Last observed phase"),
    "allocator_trace_dir": _c("string", "Allocator traces in the evidence archive"),
    "observed_positive_steps": _c("int64", "Training steps observed"),
    "completed_requested_run": _c("bool", "The run completed its requested steps"),
    "requested_steps": _c("int64", "Requested training steps"),
    "overall_peak_gpu_memory_mib": _c("float64", "Maximum sampled per-device memory over the run, MiB"),
    "first_step_peak_mib": _c("float64", "Peak of the first training step, MiB; null without steps"),
    "last_step_peak_mib": _c("float64", "Peak of the last training step, MiB; null without steps"),
    "peak_drift_mib": _c("float64", "Last-step minus first-step peak, MiB; null without steps"),
    "maximum_later_step_increase_mib": _c("float64", "Largest later-step peak rise over the first step, MiB"),
    "per_gpu_peak_mib": _c("string", "Peak of each GPU, MiB, as a JSON object keyed by GPU index"),
    "risk_tier": _c("string", "Configuration level the candidate was planned at"),
    "monitor_interval_ms": _c("int64", "Device-memory sampling interval, milliseconds"),
    "allocation_hostname": _c("string", "Host of the allocation"),
    **{f"phase_peak_{p}_mib": _c("float64", f"Peak of the {p} phase, MiB; null if not observed") for p in RUN_PHASES},
    **{f"phase_steps_{p}": _c("int64_list", f"Training steps with a {p} phase; null if none") for p in RUN_PHASES},
    # admission stage measurements
    "phase": _c("string", "Execution phase of the measurement"),
    "sampled_duration_seconds": _c("float64", "Sampled duration of the phase, seconds"),
    "completed_process": _c("bool", "The process completed"),
    # admission collection summary
    "planned_slots": _c("int64", "Planned seed slots"),
    "validated_memory_outcomes": _c("int64", "Slots with a validated memory outcome"),
    **{f"attempt_states.{label}": _c("int64", f"Attempts whose state is {label}") for label in _STATES},
    **{
        f"hidden_evaluation_states.{label}": _c("int64", f"Candidates whose hidden evaluation label is {label}")
        for label in _STATES
    },
    "source_heads": _c("string_list", "Source revisions the attempts ran"),
    "physical_recorded_gpu_seconds": _c("float64", "Recorded GPU-seconds of every physical run (elapsed times GPUs)"),
    "gpu_seconds_scope": _c("string", "What the recorded GPU-seconds cover"),
    "matrix_sha256": _c("string", "SHA-256 of the frozen matrix the panel ran"),
    "protocol_sha256": _c("string", "SHA-256 of the frozen protocol the panel ran"),
}

PANEL_LABEL_DESCRIPTIONS: dict[str, str] = {
    "two_gpu_state": "Outcome of the pair's two-GPU invocation",
    "four_gpu_state": "Outcome of the pair's four-GPU invocation",
}
