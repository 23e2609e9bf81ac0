"""The measured evidence behind each pool configuration, for users' estimators: per-seed runs with their stage
peaks, the failure stage and kind, and the architecture of the configuration's model.

Every table is joined through the relations the registry declares (:mod:`rlvrambench_hf.data.schema.registry`),
never by file path: the runs name their configuration by the runs' foreign key to ``configurations``, the stage
measurements name their run by their foreign key to the runs, and the architecture is the ``model_metadata`` row
whose key the configuration carries. :class:`Evidence` is keyed by configuration, so a view built for a set of
configurations reads only their own rows (:meth:`Evidence.columns`): a held-out family's rows cannot reach a
training view. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..data.schema.registry import REGISTRY
from ..errors import InputError

RUNS, STAGES, CONFIGURATIONS, ARCHITECTURE = "eligible_runs", "stage_measurements", "configurations", "model_metadata"
#: The registry tables the views draw on (the pool itself: ``configurations`` and ``outcomes``).
EVIDENCE_TABLES: tuple[str, ...] = (RUNS, STAGES, ARCHITECTURE)
#: What each run contributes (beside its stage peaks).
RUN_FIELDS: tuple[str, ...] = (
    "training_seed",
    "observed_state",
    "observed_peak_mib",
    "completed_run_peak_mib",
    "terminal_stage",
    "failure_kind",
)
#: The architecture columns every view carries (the counts of ``model_metadata.json``; no hashes or revisions).
ARCHITECTURE_FIELDS: tuple[str, ...] = (
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
    "tie_word_embeddings",
    "tensor_count",
    "lora_rank",
    "floating_checkpoint_elements",
    "floating_checkpoint_bytes",
    "all_linear_layer_adapter_elements",
    "largest_transformer_layer_elements",
    "largest_weight_tensor_elements",
    "non_transformer_layer_elements",
)
#: The columns of the measured evidence (training view only; a target never carries them).
EVIDENCE_COLUMNS: tuple[str, ...] = ("runs", "seed_peaks_mib", "stage_peaks_mib", "failure_stage", "failure_kind")


def link(table: str, parent: str) -> tuple[str, ...]:
    """The columns of ``table`` that name a row of ``parent``, as the registry declares the relation."""
    for fk in REGISTRY[table].references:
        if fk.table == parent and fk.where is None:
            return fk.columns
    raise InputError(f"the registry declares no relation from {table} to {parent}")


@dataclass(frozen=True)
class Evidence:
    """Runs (with their stage peaks) by configuration id, and architectures by model id."""

    runs: Mapping[str, tuple[Mapping[str, Any], ...]]
    architecture: Mapping[str, Mapping[str, Any]]

    def architecture_of(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The architecture columns of the model ``row`` (a configuration) names through the metadata's key."""
        (key,) = REGISTRY[ARCHITECTURE].keys
        found = self.architecture.get(row[key])
        if found is None:
            raise InputError(f"configuration {row.get('configuration_id')} names a model without metadata")
        return {name: found.get(name) for name in ARCHITECTURE_FIELDS}

    def columns(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The measured-evidence columns of one configuration, from its own runs only."""
        runs = self.runs.get(row["configuration_id"], ())
        stages: dict[str, float] = {}
        for run in runs:
            for stage, peak in run["stage_peaks_mib"].items():
                if peak is not None:
                    stages[stage] = max(stages.get(stage, peak), peak)
        failed = [r for r in runs if r["observed_state"] == "memory_failure"]
        return {
            "runs": [dict(r) for r in runs],
            "seed_peaks_mib": {r["training_seed"]: r["completed_run_peak_mib"] for r in runs},
            "stage_peaks_mib": stages,
            "failure_stage": _agreed(r["terminal_stage"] for r in failed),
            "failure_kind": _agreed(r["failure_kind"] for r in failed),
        }


def build_evidence(
    configuration_ids: Iterable[str],
    runs: Sequence[Mapping[str, Any]],
    stages: Sequence[Mapping[str, Any]],
    architecture: Mapping[str, Mapping[str, Any]],
) -> Evidence:
    """The evidence of ``configuration_ids`` from the runs, stage measurements and model metadata tables (rows as
    decoded mappings), each configuration's runs ordered by seed with their stage peaks (MiB) by stage."""
    wanted = set(configuration_ids)
    (run_config,) = link(RUNS, CONFIGURATIONS)
    stage_run = link(STAGES, RUNS)
    run_key = REGISTRY[RUNS].keys
    stage_peaks: dict[tuple[Any, ...], dict[str, float | None]] = {}
    for s in stages:
        stage_peaks.setdefault(tuple(s[c] for c in stage_run), {})[s["stage"]] = s["observed_peak_mib"]
    by_config: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        if run[run_config] not in wanted:
            continue
        record = {name: run.get(name) for name in RUN_FIELDS}
        record["stage_peaks_mib"] = dict(sorted(stage_peaks.get(tuple(run[c] for c in run_key), {}).items()))
        by_config.setdefault(run[run_config], []).append(record)
    ordered = {cid: tuple(sorted(rs, key=lambda r: r["training_seed"])) for cid, rs in sorted(by_config.items())}
    return Evidence(ordered, dict(architecture))


def _agreed(values: Iterable[object]) -> str | None:
    """The one value every failed seed gives, or the distinct values joined by ``;`` (None without failures)."""
    distinct = sorted({str(v) for v in values if v not in (None, "")})
    return ";".join(distinct) if distinct else None
