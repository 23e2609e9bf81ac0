"""The registry: the single description of every RLVRAMBench table.

Each :class:`ConfigSpec` names a config of the dataset card (or a supporting table the card does not name), its
split, the file holding it in the repository, a one-line meaning, its key columns and the type of every column
in file order. The builder, the typed reader, validation, the card's ``dataset_info`` and Croissant are all
derived from here; nothing else spells out a column type.

Types are decided from every real value of the release (see ``tests/test_registry.py``):

* outcome and state columns are class labels whose names start with :data:`OUTCOME_LABELS` and continue with
  the other values that the column holds;
* counts and integral settings are ``int64``; MiB and seconds written with a decimal point are ``float64``;
* ``True``/``False`` columns and 0/1 flags are ``bool``;
* blank cells and the literal ``nan`` are null, never 0, ``False`` or ``""``;
* semicolon-separated lists are lists of strings; identifiers (including scheduler job ids) are strings.

Relations are declared beside the keys: the foreign keys of each table, and the columns it copies from another
table (labels, peaks and settings that the joined tables repeat), so that verification and diffs check every copy
against its origin.

The follow-up and admission panels' result records are declared in :mod:`.panel_entries` and appended here.

Only :mod:`pyarrow` is imported here; :meth:`ConfigSpec.features` imports :mod:`datasets` when first asked.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...errors import UnknownConfigError, quote
from .panel_entries import PANEL_SPECS
from .pins import UNRESOLVED
from .spec import JSON_MAPPING, ConfigSpec, Copy, ForeignKey, MeasuredRecords, MeasuredRuns, columns, same_names

_SETTINGS = """configuration_id case_id study model_family model_name model_id workload_id workload_name
legacy_dataset_id algorithm adaptation configuration_level condition gpu_count rollout_tp_size actor_micro_batch
rollout_logprob_micro_batch ref_logprob_micro_batch vllm_gpu_memory_utilization parameter_offload optimizer_offload
free_cache_engine max_prompt_length max_response_length max_model_len max_num_seqs rollout_n train_batch_size
train_max_samples val_max_samples total_training_steps gpu_monitor_interval_ms allocator_trace_enabled
allocator_trace_sync save_freq test_freq val_before_train resume_mode max_actor_ckpt_to_keep accelerator
device_capacity_mib margin_limit_mib peak_measurement"""
_OUTCOMES = """observed_state eligible_processes distinct_seeds completed_eligible_processes within_margin_processes
above_margin_processes memory_failure_processes max_completed_run_peak_mib mean_completed_run_peak_mib
recorded_attempts documented_completed_attempts excluded_attempts label_scope"""
_FOLLOWUP = """all_three_seeds_eligible completed_peak_mib completed_processes component_regression_predicted_peak_mib
component_regression_predicted_state component_regression_unscored_approval configuration_id configuration_level
donor_copy_predicted_peak_mib donor_copy_predicted_state donor_copy_unscored_approval eligible_seed_count
eligible_seeds gpu_count known_margin_exceedance known_memory_failure logistic_predicted_peak_mib
logistic_predicted_state logistic_unscored_approval maximum_known_completed_peak_mib model observed_state
required_seeds unresolved unresolved_seeds workload"""
#: What every table that joins settings to outcomes repeats: the settings of ``configurations`` and the repeated
#: label and its summary of ``outcomes``.
_JOINED = (
    Copy("configurations", same_names(_SETTINGS.replace("configuration_id", ""))),
    Copy("outcomes", same_names(_OUTCOMES)),
)
_TO_CONFIGURATIONS = ForeignKey(("configuration_id",), "configurations")
#: What the follow-up studies repeat of their planned settings (the columns named as the targets' settings).
_FOLLOWUP_SETTINGS = {
    "model": "model_id",
    "workload": "legacy_dataset_id",
    "gpu_count": "gpu_count",
    "configuration_level": "configuration_level",
}
#: Partial evidence of a follow-up record whose repeated label is unresolved.
_FOLLOWUP_EVIDENCE = """eligible_seed_count unresolved_seeds known_memory_failure known_margin_exceedance
completed_processes maximum_known_completed_peak_mib""".split()


def _followup_measured(targets: str) -> MeasuredRecords:
    """A follow-up study's records: settings in its ``targets`` table, seeds and partial evidence as columns."""
    return MeasuredRecords(
        "observed_state", "completed_peak_mib", "eligible_seeds", targets, evidence=(*_FOLLOWUP_EVIDENCE,)
    )


_SPECS: tuple[ConfigSpec, ...] = (
    ConfigSpec(
        "admission_candidates",
        "test",
        "benchmark/decision/results/candidate_results.csv",
        "The twelve admission-panel candidates with settings, donor label, screen and repeated evaluation outcome",
        ("candidate_id",),
        columns("""model_name workload_name configuration_level evaluation_state screen_state source_state
            actor_micro_batch reservation gpu_count training_steps prompt_cap response_cap responses_per_prompt
            global_prompt_batch evaluation_known_memory_failure evaluation_known_above_margin screen_peak_mib
            evaluation_max_completed_peak_mib recorded_screen_attempts recorded_evaluation_attempts candidate_id
            case_id model_family dataset"""),
        measured=MeasuredRecords(
            "evaluation_state",
            "evaluation_max_completed_peak_mib",
            renamed={
                "vllm_gpu_memory_utilization": "reservation",
                "max_prompt_length": "prompt_cap",
                "max_response_length": "response_cap",
                "rollout_n": "responses_per_prompt",
                "train_batch_size": "global_prompt_batch",
                "total_training_steps": "training_steps",
            },
            through={"model_id": ("model_family", "model_family"), "workload_id": ("dataset", "legacy_dataset_id")},
            evidence=("evaluation_known_memory_failure", "evaluation_known_above_margin", "screen_state"),
            runs=MeasuredRuns(
                "admission_attempts", "candidate_id", "training_seed", "state", "peak_mib", where=("role", "evaluation")
            ),
        ),
    ),
    ConfigSpec(
        "transfer_configurations",
        "measured",
        "benchmark/transfer_configurations.csv",
        "The 98 configurations used as transfer sources or targets, settings joined to outcomes",
        ("configuration_id",),
        columns("""model_name workload_name gpu_count total_training_steps configuration_level actor_micro_batch
            vllm_gpu_memory_utilization observed_state eligible_processes completed_eligible_processes
            within_margin_processes max_completed_run_peak_mib margin_limit_mib recorded_attempts configuration_id
            case_id study model_family model_id workload_id legacy_dataset_id algorithm adaptation condition
            rollout_tp_size rollout_logprob_micro_batch ref_logprob_micro_batch parameter_offload optimizer_offload
            free_cache_engine max_prompt_length max_response_length max_model_len max_num_seqs rollout_n
            train_batch_size train_max_samples val_max_samples gpu_monitor_interval_ms allocator_trace_enabled
            allocator_trace_sync save_freq test_freq val_before_train resume_mode max_actor_ckpt_to_keep
            accelerator device_capacity_mib peak_measurement distinct_seeds above_margin_processes
            memory_failure_processes mean_completed_run_peak_mib documented_completed_attempts excluded_attempts
            label_scope used_in_transfer_tasks"""),
        references=(_TO_CONFIGURATIONS, ForeignKey(("configuration_id",), "all_configurations")),
        copies=(*_JOINED, Copy("all_configurations", same_names("used_in_transfer_tasks"))),
    ),
    ConfigSpec(
        "all_configurations",
        "measured",
        "benchmark/configuration_results.csv",
        "All 212 measured configurations, settings joined to repeated outcomes (browsing, not blind input)",
        ("configuration_id",),
        columns(_SETTINGS + " " + _OUTCOMES + " used_in_transfer_tasks", observed_state=("not_repeated",)),
        references=(_TO_CONFIGURATIONS,),
        copies=_JOINED,
        measured=MeasuredRecords(
            "observed_state",
            "max_completed_run_peak_mib",
            evidence=("eligible_processes", "completed_eligible_processes", "memory_failure_processes"),
            runs=MeasuredRuns(
                "eligible_runs",
                "configuration_id",
                "training_seed",
                "observed_state",
                "completed_run_peak_mib",
                stage="terminal_stage",
            ),
        ),
    ),
    ConfigSpec(
        "eligible_runs",
        "measured",
        "benchmark/runs.csv",
        "The 612 eligible processes behind the labels, with peaks, elapsed time and evidence paths",
        ("run_id",),
        columns("""run_id configuration_id study experiment_id training_seed job_id pair_id period observed_state
            completed_requested_work requested_training_steps observed_peak_mib completed_run_peak_mib
            elapsed_seconds terminal_stage failure_kind source_table artifact_path run_log phase_memory_csv
            gpu_telemetry_csv environment_json allocation_manifest source_head"""),
        references=(
            _TO_CONFIGURATIONS,
            ForeignKey(("run_id",), "recorded_attempts", ("run_id",), exactly_one=True),
        ),
        copies=(Copy("configurations", same_names("study")),),
    ),
    ConfigSpec(
        "recorded_attempts",
        "recorded",
        "benchmark/attempts.csv",
        "All 683 recorded invocations, eligible or excluded, with audited outcome and evidence",
        ("attempt_id",),
        columns(
            """attempt_id configuration_id run_id study experiment_id job_id eligible recorded_outcome
            documented_completion failure_kind exclusion_reason last_completed_step_if_documented evidence_files
            scheduler_evidence""",
            recorded_outcome=(
                "completed",
                "no_trial_record",
                "other_failure",
                "timeout_unresolved_cause",
                "accelerator_argument_error_then_noncompletion",
            ),
        ),
        references=(_TO_CONFIGURATIONS, ForeignKey(("run_id",), "eligible_runs", where="eligible")),
        copies=(
            Copy("configurations", same_names("study")),
            Copy("eligible_runs", same_names("configuration_id experiment_id job_id"), on=("run_id",)),
        ),
    ),
    ConfigSpec(
        "stage_measurements",
        "measured",
        "benchmark/stage_measurements.csv",
        "Externally sampled device-memory peak of each observed execution stage of each eligible process",
        ("run_id", "stage"),
        columns("run_id configuration_id stage observed_peak_mib coverage phase_memory_csv"),
        references=(ForeignKey(("run_id",), "eligible_runs"),),
        copies=(Copy("eligible_runs", same_names("configuration_id phase_memory_csv"), on=("run_id",)),),
    ),
    ConfigSpec(
        "transfer_queries",
        "evaluation",
        "benchmark/queries.csv",
        "The 400 transfer queries: predict the target's label from the matched source's measurements",
        ("query_id",),
        columns("""query_id task_id track source_configuration_id target_configuration_id source_case_id
            target_case_id"""),
        references=(
            ForeignKey(("source_configuration_id",), "transfer_configurations"),
            ForeignKey(("target_configuration_id",), "transfer_configurations"),
        ),
        copies=(
            Copy("configurations", {"source_case_id": "case_id"}, on=("source_configuration_id",)),
            Copy("configurations", {"target_case_id": "case_id"}, on=("target_configuration_id",)),
        ),
    ),
    ConfigSpec(
        "admission_attempts",
        "recorded",
        "benchmark/decision/results/attempts.csv",
        "The 48 admission-panel invocations (one screen and three evaluation slots per candidate)",
        ("attempt_id",),
        columns(
            """attempt_id attempt_index slot_id candidate_id case_id role training_seed job_id state
            known_memory_failure peak_mib completed_final_operations wrapper_exit_code elapsed_seconds
            validation_error repair_reason allocation_manifest attempt_directory source_head last_completed_step""",
            state=(UNRESOLVED,),
        ),
        references=(
            ForeignKey(("candidate_id",), "admission_candidates"),
            ForeignKey(("slot_id",), "admission_slot_inventory"),
        ),
        copies=(Copy("admission_candidates", same_names("case_id"), on=("candidate_id",)),),
    ),
    ConfigSpec(
        "larger_model_configurations",
        "measured",
        "benchmark/estimation/results/configurations_flat.csv",
        "Twelve planned Qwen2.5-7B settings with frozen method predictions and their resolved outcomes",
        ("configuration_id",),
        columns(_FOLLOWUP, observed_state=(UNRESOLVED,)),
        references=(ForeignKey(("configuration_id",), "estimation_targets"),),
        copies=(Copy("estimation_targets", _FOLLOWUP_SETTINGS),),
        measured=_followup_measured("estimation_targets"),
    ),
    ConfigSpec(
        "expanded_host_configurations",
        "measured",
        "benchmark/host_capacity/results/configurations_flat.csv",
        "Six expanded-host follow-up settings with the frozen predictions and new seed slots",
        ("configuration_id",),
        columns(_FOLLOWUP, observed_state=(UNRESOLVED,)),
        references=(ForeignKey(("configuration_id",), "expanded_host_targets"),),
        copies=(Copy("expanded_host_targets", _FOLLOWUP_SETTINGS),),
        measured=_followup_measured("expanded_host_targets"),
    ),
    ConfigSpec(
        "configuration_feasibility",
        "configurations",
        "tables/three-model-configurations.csv",
        "Feasibility of the three-model configuration grid (file not published in every revision)",
        ("configuration_id",),
        columns("""configuration_id model_name workload_name gpu_count configuration_level actor_micro_batch
            vllm_gpu_memory_utilization parameter_offload observed_state max_completed_run_peak_mib"""),
    ),
    # supporting tables: read by features of the package, not named by the card
    ConfigSpec(
        "configurations",
        "measured",
        "benchmark/configurations.csv",
        "Settings of all 212 configurations, without outcomes",
        ("configuration_id",),
        columns(_SETTINGS),
        card=False,
        references=(ForeignKey(("configuration_id",), "outcomes"),),
    ),
    ConfigSpec(
        "outcomes",
        "measured",
        "benchmark/outcomes.csv",
        "Repeated label and attempt summary of each configuration, one-to-one with configurations",
        ("configuration_id",),
        columns("configuration_id " + _OUTCOMES, observed_state=("not_repeated",)),
        card=False,
        references=(ForeignKey(("configuration_id",), "configurations"),),
    ),
    ConfigSpec(
        "not_started_conditions",
        "recorded",
        "benchmark/not_started_conditions.csv",
        "Six planned control conditions that never started (not attempts)",
        ("experiment_id",),
        columns(
            """experiment_id pair_id condition period model_family dataset training_seed job_id
            initial_allocation attempted outcome observed_peak_mib actor_update_peak_mib terminal_sampled_phase""",
            outcome=("not_attempted",),
        ),
        card=False,
    ),
    ConfigSpec(
        "estimation_targets",
        "planned",
        "benchmark/estimation/targets.csv",
        "Settings of the twelve Qwen2.5-7B targets of the prospective estimator comparison",
        ("configuration_id",),
        columns(_SETTINGS),
        card=False,
    ),
    ConfigSpec(
        "expanded_host_targets",
        "planned",
        "benchmark/host_capacity/targets.csv",
        "Settings of the six Qwen2.5-7B configurations of the expanded-host follow-up",
        ("configuration_id",),
        columns(_SETTINGS),
        card=False,
    ),
    ConfigSpec(
        "model_metadata",
        "models",
        "benchmark/estimation/model_metadata.json",
        "Architecture and checkpoint-header counts of the four models (no weights), read by the estimators",
        ("model_id",),
        columns("""all_linear_layer_adapter_elements config_sha256 floating_checkpoint_bytes
            floating_checkpoint_elements head_dim hidden_size intermediate_size largest_transformer_layer_elements
            largest_weight_tensor_elements lora_rank model_id non_transformer_layer_elements num_attention_heads
            num_hidden_layers num_key_value_heads revision scope shard_header_sha256 tensor_count
            tie_word_embeddings vocab_size"""),
        card=False,
        layout=JSON_MAPPING,
    ),
    # the panels' result records (supporting tables too)
    *PANEL_SPECS,
)

REGISTRY: dict[str, ConfigSpec] = {spec.name: spec for spec in _SPECS}
#: The card's default config.
DEFAULT_CONFIG = "admission_candidates"


def get_spec(name: str) -> ConfigSpec:
    """The spec of config ``name``; a one-line :class:`UnknownConfigError` lists the known names otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        card = [spec.name for spec in card_configs()]
        raise UnknownConfigError(
            f"unknown config {quote(name)}; known configs: {', '.join(card)} "
            f"(and {len(REGISTRY) - len(card)} supporting tables: rlvrambench configs --all)",
            config=name,
        ) from None


def card_configs() -> Iterator[ConfigSpec]:
    """The configs named by the dataset card, in card order."""
    return (spec for spec in _SPECS if spec.card)
