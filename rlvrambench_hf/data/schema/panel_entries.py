"""Registry entries of the panels' result records: the follow-up studies' processes, pairs, summary and costs, and
the admission panel's realized work, allocations, validated runs, stage measurements and collection summary.

Supporting tables (``card=False``), typed by the same reader as every table; :mod:`.registry` adds them after its
own entries. Each declares its relations to the tables it repeats or points into, so ``verify`` checks them.
"""

from __future__ import annotations

from .pins import UNRESOLVED
from .spec import JSON_OBJECT, JSON_RECORDS, ConfigSpec, Copy, ForeignKey, columns, same_names

_PROCESSES = """allocation_gpu_count artifact_path completed completed_peak_mib configuration_id
configuration_level dataset dispatched durable_terminal_record_present eligible expected_execution_commit
experiment_id failure_kind failure_stage invocation_elapsed_seconds invocation_id invocation_reservation_gpu_seconds
job_id known_margin_exceedance known_memory_failure launched observed_task_peak_mib online_status pair_id period
{reason}state task_gpu_count task_gpu_seconds task_runtime_seconds training_seed validation_errors
worker_initialization"""
_PAIRS = """both_completed both_eligible configuration_level dataset first_task_gpu_count four_gpu_state pair_id
peak_difference_4_minus_2_mib runtime_difference_4_minus_2_seconds training_seed two_gpu_state"""
_SUMMARY = """completed_processes eligible_processes known_launched_processes pair_errors planned_configurations
planned_pairs planned_processes resolved_configurations schema_version unknown_launch_status_processes
unresolved_processes"""
_COSTS = """accounting_valid allocation_gpu_count batch_ended_at_epoch batch_minus_outer_end_seconds
batch_started_at_epoch batch_state batch_step_gpu_seconds errors job_id ledger_ended_at_epoch
ledger_minus_outer_end_seconds observed_allocation_gpu_seconds pair_id pair_ledger_sha256 pair_manifest_sha256
raw_record_provenance.batch.line raw_record_provenance.batch.line_number raw_record_provenance.batch.sha256
raw_record_provenance.format_fields raw_record_provenance.outer.line raw_record_provenance.outer.line_number
raw_record_provenance.outer.sha256 raw_record_provenance.source_sha256 raw_record_provenance.time_format
raw_record_provenance.timezone scheduler_ended_at_epoch scheduler_scope scheduler_started_at_epoch scheduler_state
timestamp_interval timestamp_precision_seconds whole_allocation_gpu_seconds"""
_LEDGER = "complete_total_gpu_seconds known_gpu_seconds known_records unknown_records"
_TOTALS = " ".join(
    [f"batch_step_time.{n}" for n in _LEDGER.split()]
    + [f"invocation_reservation_time.{n}" for n in _LEDGER.split()]
    + [f"observed_allocation_time.{n}" for n in _LEDGER.split()]
    + ["scheduler_scope_note", "scope"]
    + [f"task_provisioned_time.{n}" for n in _LEDGER.split()]
    + [f"whole_allocation_time.{n}" for n in _LEDGER.split()]
)


def followup_records(study: str, folder: str, panel: str, *, with_reason: bool) -> tuple[ConfigSpec, ...]:
    """The five result records of one follow-up study, whose configurations are the config ``study``_configurations
    and whose files are in ``folder``; ``panel`` names the study in descriptions."""
    configurations, pairs, costs = f"{study}_configurations", f"{study}_pairs", f"{study}_costs"
    process_columns = _PROCESSES.format(reason="reason " if with_reason else "")
    return (
        ConfigSpec(
            f"{study}_processes",
            "recorded",
            f"{folder}/processes.csv",
            f"Every planned seed slot of the {panel}: launch, eligibility, outcome, failure and task time",
            ("experiment_id",),
            columns(process_columns, state=(UNRESOLVED,)),
            card=False,
            references=(
                ForeignKey(("configuration_id",), configurations),
                ForeignKey(("pair_id",), pairs),
                ForeignKey(("job_id",), costs),
            ),
            copies=(
                Copy(
                    configurations,
                    {**same_names("configuration_level"), "dataset": "workload", "task_gpu_count": "gpu_count"},
                ),
                Copy(pairs, same_names("training_seed configuration_level dataset"), on=("pair_id",)),
            ),
        ),
        ConfigSpec(
            pairs,
            "recorded",
            f"{folder}/pairs.csv",
            f"The matched two-GPU / four-GPU pairs of one seed of the {panel}, with both outcomes",
            ("pair_id",),
            columns(_PAIRS, two_gpu_state=(UNRESOLVED,), four_gpu_state=(UNRESOLVED,)),
            card=False,
        ),
        ConfigSpec(
            f"{study}_summary",
            "summary",
            f"{folder}/summary.json",
            f"The {panel}'s planned, launched, eligible and unresolved counts (one record)",
            (),
            columns(_SUMMARY),
            card=False,
            layout=JSON_OBJECT,
        ),
        ConfigSpec(
            costs,
            "allocations",
            f"{folder}/costs.json",
            f"Every scheduler allocation of the {panel} with its accounted GPU time and scheduler records",
            ("job_id",),
            columns(_COSTS),
            card=False,
            layout=JSON_RECORDS,
            member="allocations",
            references=(ForeignKey(("pair_id",), pairs),),
        ),
        ConfigSpec(
            f"{study}_cost_totals",
            "summary",
            f"{folder}/costs.json",
            f"The {panel}'s GPU-time totals per ledger, with known and unknown records (one record)",
            (),
            columns(_TOTALS),
            card=False,
            layout=JSON_OBJECT,
        ),
    )


_ADMISSION = "benchmark/decision/results"
#: Columns an admission record repeats from ``admission_attempts`` for the attempt it names.
_FROM_ATTEMPT = Copy("admission_attempts", same_names("slot_id candidate_id role"), on=("attempt_id",))
_TO_ATTEMPT = ForeignKey(("attempt_id",), "admission_attempts")
_VALIDATED_RUNS = """experiment_id run_group study_stage configuration_level model_family algorithm dataset model
data_dir gpu_count rollout_tp_size actor_micro_batch rollout_logprob_micro_batch ref_logprob_micro_batch
vllm_gpu_memory_utilization parameter_offload optimizer_offload free_cache_engine max_prompt_length max_response_length
max_model_len max_num_seqs rollout_n train_batch_size train_max_samples val_max_samples training_seed
total_training_steps gpu_monitor_interval_ms workload_name custom_reward_function_path custom_reward_function_name
revision_study pair_id condition period candidate_id case_id seed_role save_freq test_freq val_before_train resume_mode
max_actor_ckpt_to_keep allocator_trace_enabled allocator_trace_sync per_process_timeout_seconds success safe
peak_gpu_memory_mib dominant_phase terminal_phase failure_kind elapsed_seconds job_id artifact_path phase_memory_csv
gpu_telemetry_csv environment_json run_log allocator_trace_dir observed_positive_steps completed_requested_run
requested_steps overall_peak_gpu_memory_mib first_step_peak_mib last_step_peak_mib peak_drift_mib
phase_peak_initializing_mib phase_steps_initializing maximum_later_step_increase_mib per_gpu_peak_mib risk_tier
monitor_interval_ms source_head allocation_manifest allocation_hostname phase_peak_rollout_mib
phase_peak_reference_logprob_mib phase_peak_actor_update_mib phase_peak_weight_sync_mib phase_peak_idle_mib
phase_peak_checkpoint_mib phase_peak_validation_mib phase_steps_rollout phase_steps_reference_logprob
phase_steps_actor_update phase_steps_weight_sync phase_steps_idle phase_steps_checkpoint phase_steps_validation
phase_peak_unknown_mib phase_steps_unknown"""
#: Settings a validated run repeats from its admission candidate (run column → candidate column).
_CANDIDATE_SETTINGS = {
    **same_names("case_id configuration_level model_family dataset actor_micro_batch gpu_count"),
    "vllm_gpu_memory_utilization": "reservation",
    "total_training_steps": "training_steps",
    "max_prompt_length": "prompt_cap",
    "max_response_length": "response_cap",
    "rollout_n": "responses_per_prompt",
    "train_batch_size": "global_prompt_batch",
}

ADMISSION_RECORDS: tuple[ConfigSpec, ...] = (
    ConfigSpec(
        "admission_realized_work",
        "recorded",
        f"{_ADMISSION}/realized_work.csv",
        "The training work each admission-panel attempt realized: logged steps, examples and lengths",
        ("attempt_id",),
        columns("""attempt_id slot_id candidate_id role logged_steps maximum_logged_step original_train_examples
            selected_before_filter train_examples_after_filter filtered_train_examples positive_gradient_steps
            steps_with_gradient_metric cap_reaching_batches batches_with_length_metrics fixed_order_batches_per_epoch
            fixed_order_distinct_train_examples_derived fixed_order_wraps_derived prompt_mean_over_logged_batches
            prompt_maximum_observed prompt_minimum_observed response_mean_over_logged_batches
            response_maximum_observed response_minimum_observed"""),
        card=False,
        references=(_TO_ATTEMPT,),
        copies=(_FROM_ATTEMPT,),
    ),
    ConfigSpec(
        "admission_allocations",
        "recorded",
        f"{_ADMISSION}/allocations.csv",
        "The scheduler allocation of each admission-panel slot",
        ("slot_id",),
        columns("slot_id job_id status process_started error"),
        card=False,
        references=(
            ForeignKey(("slot_id",), "admission_slot_inventory"),
            ForeignKey(("slot_id", "job_id"), "admission_attempts", ("slot_id", "job_id"), exactly_one=True),
        ),
    ),
    ConfigSpec(
        "admission_validated_runs",
        "measured",
        f"{_ADMISSION}/validated_runs.csv",
        "The validated run record of each admission-panel slot: settings, peaks per phase and evidence paths",
        ("experiment_id",),
        columns(_VALIDATED_RUNS),
        card=False,
        references=(
            ForeignKey(("experiment_id",), "admission_slot_inventory"),
            ForeignKey(("candidate_id",), "admission_candidates"),
            ForeignKey(("experiment_id", "job_id"), "admission_attempts", ("slot_id", "job_id"), exactly_one=True),
        ),
        copies=(Copy("admission_candidates", _CANDIDATE_SETTINGS, on=("candidate_id",)),),
    ),
    ConfigSpec(
        "admission_stage_measurements",
        "measured",
        f"{_ADMISSION}/stage_measurements.csv",
        "Externally sampled device-memory peak of each observed phase of each admission-panel attempt",
        ("attempt_id", "phase"),
        columns("""attempt_id slot_id candidate_id role phase observed_peak_mib sampled_duration_seconds
            completed_process failure_kind"""),
        card=False,
        references=(_TO_ATTEMPT,),
        copies=(_FROM_ATTEMPT,),
    ),
    ConfigSpec(
        "admission_collection_summary",
        "summary",
        f"{_ADMISSION}/collection_summary.json",
        "The admission panel's collection: slots, validated outcomes, states and recorded GPU-seconds (one record)",
        (),
        columns("""planned_slots recorded_attempts validated_memory_outcomes attempt_states.memory_failure
            attempt_states.within_margin attempt_states.above_margin hidden_evaluation_states.within_margin
            hidden_evaluation_states.memory_failure hidden_evaluation_states.above_margin source_heads
            physical_recorded_gpu_seconds gpu_seconds_scope matrix_sha256 protocol_sha256"""),
        card=False,
        layout=JSON_OBJECT,
    ),
    ConfigSpec(
        "admission_slot_inventory",
        "planned",
        f"{_ADMISSION}/collection_summary.json",
        "The 48 planned admission-panel slots with their recorded attempts and allocations",
        ("slot_id",),
        columns("slot_id recorded_attempts allocation_records status"),
        card=False,
        layout=JSON_RECORDS,
        member="slot_inventory",
    ),
)

PANEL_SPECS: tuple[ConfigSpec, ...] = (
    *followup_records("larger_model", "benchmark/estimation/results", "larger-model panel", with_reason=True),
    *followup_records("expanded_host", "benchmark/host_capacity/results", "expanded-host follow-up", with_reason=False),
    *ADMISSION_RECORDS,
)
