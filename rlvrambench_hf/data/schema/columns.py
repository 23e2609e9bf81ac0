"""Every column name of the release with its kind and one-line meaning: the registry's vocabulary (data).

Label columns get their meaning here and their class names per config in :mod:`.registry`. The columns of the
follow-up and admission panels' result records are in :mod:`.panel_columns` and merged here.
"""

from __future__ import annotations

from .panel_columns import PANEL_LABEL_DESCRIPTIONS, PANEL_VOCABULARY


def _c(kind: str, description: str) -> tuple[str, str]:  # keeps the table below compact
    return kind, description


# Every column name used in the release, with its kind and meaning. Label columns get their names per config.
VOCABULARY: dict[str, tuple[str, str]] = {
    # identities
    "configuration_id": _c("string", "Stable hash of a configuration's study, model, workload, condition and settings"),
    "case_id": _c("string", "Group of one study, model, workload, GPU count and requested horizon"),
    "study": _c("string", "Experimental study the configuration belongs to"),
    "model_family": _c("string", "Short model identifier"),
    "model_name": _c("string", "Readable checkpoint name"),
    "model_id": _c("string", "Upstream model repository"),
    "model": _c("string", "Upstream model repository"),
    "workload_id": _c("string", "Stable workload identifier"),
    "workload_name": _c("string", "Readable workload name"),
    "workload": _c("string", "Workload identifier (legacy spelling)"),
    "legacy_dataset_id": _c("string", "Workload identifier as spelled in the original tables"),
    "dataset": _c("string", "Workload identifier (legacy spelling)"),
    "algorithm": _c("string", "Reinforcement-learning algorithm (GRPO)"),
    "adaptation": _c("string", "Parameter adaptation method (LoRA)"),
    "configuration_level": _c("string", "Test index or named setting; not a quality rank"),
    "condition": _c("string", "Experimental treatment; null when no condition field was recorded"),
    # settings
    "gpu_count": _c("int64", "Allocated GPUs"),
    "rollout_tp_size": _c("int64", "Devices sharing each generation model by tensor parallelism"),
    "actor_micro_batch": _c("int64", "Training examples per actor micro-batch"),
    "rollout_logprob_micro_batch": _c("int64", "Generation-policy log-probability micro-batch size"),
    "ref_logprob_micro_batch": _c("int64", "Reference-policy log-probability micro-batch size"),
    "vllm_gpu_memory_utilization": _c("float64", "Fraction of device memory reserved by the vLLM engine"),
    "reservation": _c("float64", "Fraction of device memory reserved by the vLLM engine"),
    "parameter_offload": _c("bool", "Model parameters offloaded from device memory"),
    "optimizer_offload": _c("bool", "Optimizer state offloaded from device memory"),
    "free_cache_engine": _c("bool", "Generation state released between stages"),
    "max_prompt_length": _c("int64", "Maximum prompt tokens"),
    "prompt_cap": _c("int64", "Maximum prompt tokens"),
    "max_response_length": _c("int64", "Maximum generated response tokens"),
    "response_cap": _c("int64", "Maximum generated response tokens"),
    "max_model_len": _c("int64", "Configured maximum model sequence length, tokens"),
    "max_num_seqs": _c("int64", "Maximum concurrent generation sequences"),
    "rollout_n": _c("int64", "Generated responses per prompt"),
    "responses_per_prompt": _c("int64", "Generated responses per prompt"),
    "train_batch_size": _c("int64", "Global training batch size, prompts"),
    "global_prompt_batch": _c("int64", "Global training batch size, prompts"),
    "train_max_samples": _c("int64", "Training sample preparation limit (-1: none)"),
    "val_max_samples": _c("int64", "Validation sample preparation limit"),
    "total_training_steps": _c("int64", "Requested training horizon, steps"),
    "training_steps": _c("int64", "Requested training horizon, steps"),
    "gpu_monitor_interval_ms": _c("int64", "External device-memory sampling interval, milliseconds"),
    "allocator_trace_enabled": _c("bool", "Allocator instrumentation enabled; null when not recorded"),
    "allocator_trace_sync": _c("bool", "Allocator instrumentation waits for pending GPU work; null when not recorded"),
    "save_freq": _c("int64", "Checkpoint interval, steps (negative disables); null when not recorded"),
    "test_freq": _c("int64", "Validation interval, steps (negative disables); null when not recorded"),
    "val_before_train": _c("bool", "Validation precedes training; null when not recorded"),
    "resume_mode": _c("string", "Checkpoint-resume setting; null when not recorded"),
    "max_actor_ckpt_to_keep": _c("int64", "Checkpoint retention; null when not recorded"),
    "accelerator": _c("string", "Device model"),
    "device_capacity_mib": _c("int64", "Reported capacity per device, MiB"),
    "margin_limit_mib": _c("int64", "Per-device memory limit, MiB, inclusive"),
    "peak_measurement": _c("string", "Measurement convention of the peaks"),
    # outcome summaries
    "eligible_processes": _c("int64", "Eligible processes behind the label"),
    "distinct_seeds": _c("int64", "Distinct eligible seeds"),
    "completed_eligible_processes": _c("int64", "Eligible processes that completed"),
    "within_margin_processes": _c("int64", "Eligible processes within the margin"),
    "above_margin_processes": _c("int64", "Eligible processes above the margin"),
    "memory_failure_processes": _c("int64", "Eligible processes with a diagnosed memory failure"),
    "max_completed_run_peak_mib": _c(
        "float64", "Maximum peak over completed eligible processes, MiB; null if none completed"
    ),
    "mean_completed_run_peak_mib": _c(
        "float64", "Mean peak over completed eligible processes, MiB; null if none completed"
    ),
    "recorded_attempts": _c("int64", "All recorded invocations"),
    "documented_completed_attempts": _c("int64", "Recorded invocations with documented completion"),
    "excluded_attempts": _c("int64", "Recorded invocations excluded from the label"),
    "label_scope": _c("string", "Eligible resource outcomes or single-process calibration"),
    "used_in_transfer_tasks": _c("bool", "Configuration is a source or target of the transfer queries"),
    # runs and attempts
    "run_id": _c("string", "Eligible process id; null for attempts that are not eligible"),
    "experiment_id": _c("string", "Planned configuration/seed slot"),
    "training_seed": _c("int64", "Random seed of the process"),
    "job_id": _c("string", "Scheduler allocation id (shared by processes of one allocation)"),
    "pair_id": _c("string", "Paired-order group; null outside paired studies"),
    "period": _c("int64", "Position in a paired order; null outside paired studies"),
    "completed_requested_work": _c("bool", "The process completed its requested training and operations"),
    "requested_training_steps": _c("int64", "Requested horizon, steps"),
    "observed_peak_mib": _c("float64", "Maximum externally sampled per-device memory, MiB; null if not measured"),
    "completed_run_peak_mib": _c("float64", "Peak of a completed process, MiB; null for failures"),
    "elapsed_seconds": _c("float64", "Elapsed wall time, seconds"),
    "terminal_stage": _c("string", "Last observed execution stage"),
    "failure_kind": _c("string", "Diagnosed failure category; null when none was diagnosed"),
    "source_table": _c("string", "Source table in the evidence archive"),
    "artifact_path": _c("string", "Trial record in the evidence archive"),
    "run_log": _c("string", "Training log in the evidence archive"),
    "phase_memory_csv": _c("string", "Stage memory trace in the evidence archive"),
    "gpu_telemetry_csv": _c("string", "Device telemetry in the evidence archive"),
    "environment_json": _c("string", "Environment record in the evidence archive"),
    "allocation_manifest": _c("string", "Allocation manifest in the evidence archive; null when absent"),
    "source_head": _c("string", "Source revision, when recorded"),
    "attempt_id": _c("string", "Recorded invocation id"),
    "eligible": _c("bool", "The invocation supplies an eligible resource outcome"),
    "documented_completion": _c("bool", "Completion is documented (False: not established, not a failure)"),
    "exclusion_reason": _c("string_list", "Reasons the invocation was excluded; null when eligible"),
    "last_completed_step_if_documented": _c(
        "int64", "Last completed step of a late excluded attempt; null when not curated"
    ),
    "evidence_files": _c("string_list", "Evidence files in the archive"),
    "scheduler_evidence": _c("string", "Additional scheduler evidence, when available"),
    "stage": _c("string", "Execution stage of the measurement"),
    "coverage": _c("string", "completed_run, terminal_stage_partial or stage_completion_not_certified"),
    # queries
    "query_id": _c("string", "Prediction key"),
    "task_id": _c("string", "Task grouping queries that share an allowed donor case"),
    "track": _c("string", "Transfer type"),
    "source_configuration_id": _c("string", "Configuration whose measurements are given"),
    "target_configuration_id": _c("string", "Configuration whose label is predicted"),
    "source_case_id": _c("string", "Case of the source configuration"),
    "target_case_id": _c("string", "Case of the target configuration"),
    # admission panel
    "candidate_id": _c("string", "Admission candidate"),
    "evaluation_known_memory_failure": _c("bool", "An evaluation attempt has known memory-failure evidence"),
    "evaluation_known_above_margin": _c("bool", "An evaluation attempt has known above-margin evidence"),
    "screen_peak_mib": _c("float64", "Peak of the completed screen, MiB; null for a failed screen"),
    "evaluation_max_completed_peak_mib": _c(
        "float64", "Maximum completed evaluation peak, MiB; null if none completed"
    ),
    "recorded_screen_attempts": _c("int64", "Recorded screen invocations"),
    "recorded_evaluation_attempts": _c("int64", "Recorded evaluation invocations"),
    "attempt_index": _c("int64", "Attempt number within its slot, from 1"),
    "slot_id": _c("string", "Planned seed slot"),
    "role": _c("string", "screen or evaluation"),
    "known_memory_failure": _c("bool", "Known memory-failure evidence"),
    "peak_mib": _c("float64", "Peak of a completed attempt, MiB; null for failures"),
    "completed_final_operations": _c("bool", "Final step and scheduled operations completed"),
    "wrapper_exit_code": _c("int64", "Exit status of the launcher"),
    "validation_error": _c("string", "Validation error of the attempt; null when valid"),
    "repair_reason": _c("string", "Predefined setup-failure reason for a replacement; null when none"),
    "attempt_directory": _c("string", "Attempt folder in the evidence archive"),
    "last_completed_step": _c("int64", "Last completed training step"),
    # follow-up studies
    "all_three_seeds_eligible": _c("bool", "All three seed slots have eligible outcomes"),
    "completed_peak_mib": _c("float64", "Peak over completed processes, MiB; null if none completed"),
    "completed_processes": _c("int64", "Completed processes"),
    "component_regression_predicted_peak_mib": _c("float64", "Frozen component-regression peak prediction, MiB"),
    "component_regression_unscored_approval": _c("bool", "Component regression approves an unresolved target"),
    "donor_copy_predicted_peak_mib": _c("float64", "Frozen donor-copy peak prediction, MiB"),
    "donor_copy_unscored_approval": _c("bool", "Donor copy approves an unresolved target"),
    "eligible_seed_count": _c("int64", "Seeds with eligible outcomes"),
    "eligible_seeds": _c("string_list", "Seeds with eligible outcomes; null when none"),
    "known_margin_exceedance": _c("bool", "Known evidence of a peak above the limit"),
    "logistic_predicted_peak_mib": _c(
        "float64", "Logistic classifier peak prediction, MiB; null (it predicts labels only)"
    ),
    "logistic_unscored_approval": _c("bool", "Logistic classification approves an unresolved target"),
    "maximum_known_completed_peak_mib": _c("float64", "Maximum known completed peak, MiB; null if none"),
    "required_seeds": _c("int64", "Seeds required for a repeated label"),
    "unresolved": _c("bool", "The repeated label is unresolved"),
    "unresolved_seeds": _c("string_list", "Seeds without an eligible outcome; null when none"),
    # model metadata of the estimator comparison (no weights)
    "all_linear_layer_adapter_elements": _c(
        "int64", "Rank-64 LoRA adapter elements on every 2-D weight inside the transformer layers"
    ),
    "config_sha256": _c("string", "SHA-256 of the model's config.json"),
    "floating_checkpoint_bytes": _c("int64", "Bytes of the floating-point checkpoint tensors"),
    "floating_checkpoint_elements": _c("int64", "Elements of the floating-point checkpoint tensors"),
    "head_dim": _c("int64", "Attention head dimension"),
    "hidden_size": _c("int64", "Hidden size"),
    "intermediate_size": _c("int64", "Feed-forward intermediate size"),
    "largest_transformer_layer_elements": _c("int64", "Elements of the largest transformer layer"),
    "largest_weight_tensor_elements": _c("int64", "Elements of the largest checkpoint tensor"),
    "lora_rank": _c("int64", "LoRA rank the adapter count assumes"),
    "non_transformer_layer_elements": _c("int64", "Elements outside the transformer layers (embeddings, head, norm)"),
    "num_attention_heads": _c("int64", "Attention heads"),
    "num_hidden_layers": _c("int64", "Transformer layers"),
    "num_key_value_heads": _c("int64", "Key/value heads"),
    "revision": _c("string", "Model repository commit the counts were read from"),
    "scope": _c("string", "What the counts cover and assume"),
    "shard_header_sha256": _c("string_list", "SHA-256 of each safetensors shard header, as file=digest"),
    "tensor_count": _c("int64", "Checkpoint tensors"),
    "tie_word_embeddings": _c("bool", "Input embeddings and output head share one tensor"),
    "vocab_size": _c("int64", "Vocabulary size"),
    # never-started controls
    "initial_allocation": _c("bool", "The condition received its initial allocation"),
    "attempted": _c("bool", "The condition was attempted (False: outside every attempt denominator)"),
    "actor_update_peak_mib": _c("float64", "Actor-update stage peak, MiB; null if not measured"),
    "terminal_sampled_phase": _c("string", "Last sampled phase; null if none"),
}

LABEL_DESCRIPTIONS: dict[str, str] = {
    "observed_state": "Repeated resource label of the configuration",
    "recorded_outcome": "Audited outcome of the invocation",
    "evaluation_state": "Repeated label of the three evaluation seeds (the truth)",
    "screen_state": "Outcome of the designated five-step screen",
    "source_state": "Repeated label of the donor configuration",
    "state": "Outcome of the attempt",
    "donor_copy_predicted_state": "Frozen donor-copy label prediction",
    "component_regression_predicted_state": "Frozen component-regression label prediction",
    "logistic_predicted_state": "Frozen logistic-classification label prediction",
    "outcome": "Outcome of the planned condition",
    **PANEL_LABEL_DESCRIPTIONS,
}

_TWICE = (VOCABULARY.keys() | LABEL_DESCRIPTIONS.keys()) & PANEL_VOCABULARY.keys()
if _TWICE:  # a name has one kind and one meaning
    raise ValueError(f"columns described twice: {sorted(_TWICE)}")
VOCABULARY.update(PANEL_VOCABULARY)
