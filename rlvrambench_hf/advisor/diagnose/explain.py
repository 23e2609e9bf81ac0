"""Where a failure log meets the release and, when given, the launch file: :func:`explain_failure` returns the
:class:`~.diagnosis.Diagnosis` of :func:`~.diagnosis.diagnose_text` completed with the release's failures of the same
kind (:mod:`.failures`) and, with the plans of the launch file, the advisor's answer to them: the verdict, the
device the log reports against the plan's, the floors that fail, and the advisor's changes in the user's own keys,
those of the diagnosed phase first. A per-phase memory model, when given, is matched by :mod:`.phasematch`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ...data.sources.resolve import SourceLike
from ..plan.hardware import BENCHMARK_HARDWARE, Hardware
from ..plan.mapping import VERL_MAPPING
from ..plan.plans import Plans
from .diagnosis import KV_FAMILIES, MEMORY_CLASSES, Diagnosis, diagnose_text
from .failures import TABLES_NEEDED, release_failures
from .logs import LogText, read_log
from .phasematch import PhaseModel, match_phases

#: Settings in which a within-margin neighbour may differ that are no fix (another model, another workload).
NOT_A_FIX = ("model_id", "workload_id", "algorithm", "adaptation")
#: The settings whose changes address each phase (listed first among the advisor's changes).
PHASE_SETTINGS = {
    "initializing": (
        "vllm_gpu_memory_utilization",
        "parameter_offload",
        "optimizer_offload",
        "gpu_count",
        "rollout_tp_size",
        "max_model_len",
    ),
    "weight_sync": ("free_cache_engine", "vllm_gpu_memory_utilization", "parameter_offload", "gpu_count"),
    "rollout": ("vllm_gpu_memory_utilization", "max_num_seqs", "max_response_length", "parameter_offload"),
    "reference_logprob": ("rollout_logprob_micro_batch", "ref_logprob_micro_batch", "max_response_length"),
    "actor_update": ("actor_micro_batch", "optimizer_offload", "max_response_length", "vllm_gpu_memory_utilization"),
}
#: The floors that fail at start-up.
STARTUP_FLOORS = ("generation_weights", "actor_shards_at_startup", "sequence_length")
NO_LAUNCH_FILE = "give the launch file too (--verl or --trl) to have these fixes in your own keys and values"


def explain_failure(
    log: str | os.PathLike[str] | LogText,
    source: SourceLike = None,
    revision: str | None = None,
    *,
    plans: Plans | None = None,
    hardware: Hardware | None = None,
    phase_model: PhaseModel | Mapping[str, Any] | None = None,
) -> Diagnosis:
    """Why did the run of ``log`` (a path, ``-`` for standard input, or :class:`~.logs.LogText`) fail? With
    ``plans`` (what :func:`~.read.read_plans` read from the launch file) the answer is that plan's; with
    ``phase_model`` (a per-phase model of the plan, or its JSON entry) its terms are matched too. The plan is
    answered on ``hardware``, by default on the device the log reports (the release's A100 when it names none)."""
    text = log if isinstance(log, LogText) else read_log(log)
    found = diagnose_text(text)
    if found.failure_class is None:
        return found
    from ...data.tables.reader import load_table

    tables = {name: load_table(name, source, revision, decode=True) for name in TABLES_NEEDED}
    release = release_failures(found.failure_class, tables)
    logged, documented = _split(found.fixes)
    kv_short = found.signal is not None and found.signal.family in KV_FAMILIES
    # the release's start-up failures are its free-memory check, not a KV cache too small: no evidence for that
    measured = [] if kv_short else [f for f in _release_fixes(release) if physical(f, kv_short)]
    fixes = (*logged, *measured, *documented) if found.is_memory else found.fixes
    found = replace(found, release=release, fixes=_unique(fixes))
    if plans is None:
        return replace(found, note=NO_LAUNCH_FILE if found.is_memory else None)
    return with_plan(found, plans, source, revision, hardware=hardware, phase_model=phase_model)


def with_plan(
    found: Diagnosis,
    plans: Plans,
    source: SourceLike = None,
    revision: str | None = None,
    *,
    hardware: Hardware | None = None,
    phase_model: PhaseModel | Mapping[str, Any] | None = None,
) -> Diagnosis:
    """``found`` made specific to the first plan of ``plans``: the advisor's answer to it, its changes in the user's
    keys (the diagnosed phase's first), and the per-phase model's match when given."""
    from ..api import advise
    from ..output.document import configuration

    given = hardware is not None
    hardware = hardware or log_hardware(found)
    answers = advise(plans, source, revision, hardware=hardware)
    answer = configuration(answers, 0)
    written = {s: plans.written[s].split(" (")[0] for s in plans.written}
    specific = {
        "plan": answer["configuration_id"],
        "origin": answer["origin"],
        "verdict": answer["verdict"],
        "device": _device_against_plan(found, hardware, given),
        "floors_failed": [f for f in answer["floors"] if f["holds"] is False],
        "measured": answer["measured"],
        "scope_flags": answer["scope_flags"],
        "plans_in_file": len(plans),
    }
    kv_short = found.signal is not None and found.signal.family in KV_FAMILIES
    changes = _changes([c for c in answer["changes"] if physical(c, kv_short)], found.phase, written)
    if phase_model is None and answer.get("phases"):  # the advisor's own per-phase model of the plan
        phase_model = answer
    if phase_model is not None:
        model = phase_model if isinstance(phase_model, PhaseModel) else PhaseModel.of(phase_model)
        numbers = {n.name: n.value for n in found.numbers if n.unit == "MiB"}
        layers = answers.context.metadata.get(answer["model_id"] or "", {}).get("num_hidden_layers")
        settings = {**answer["settings"], "num_hidden_layers": int(layers) if layers else None}
        specific["phases"] = match_phases(model, found.phase, numbers, settings, written)
        supported = [c for c in changes if c["supported"]]  # a measurement first, then the model's fixes
        by_model = [_model_fix(f) for f in specific["phases"]["fixes"]]
        changes = [*supported, *by_model, *(c for c in changes if not c["supported"])]
    if not found.is_memory:
        return replace(found, specific=specific)
    logged, others = _split(found.fixes)
    logged = [{**f, "key": written.get(f["setting"], f["key"])} for f in logged]  # the log's figures decide first
    weights = next((f["required_mib"] for f in answer["floors"] if f["check"] == "generation_weights"), None)
    held = [f for f in logged if not _too_small(f, weights, hardware)]
    short = [_with_weights(f, weights) for f in logged if _too_small(f, weights, hardware)]
    logged = held
    plan = answer["settings"]
    others = [
        {**f, "to": f["release_to"]} if f["basis"] == "release" else f
        for f in others
        if f["basis"] != "release" or f["from"] == _value(plan.get(f["setting"]))
    ]
    return replace(found, specific=specific, fixes=_unique((*logged, *changes, *others, *short)))


def _too_small(fix: Mapping[str, Any], weights: float | None, hardware: Hardware) -> bool:
    """Whether a utilization the log's free memory allows cannot hold vLLM's copy of the plan's weights."""
    if fix["setting"] != "vllm_gpu_memory_utilization" or weights is None:
        return False
    return float(fix["change"]) * hardware.device_capacity_mib < weights


def _with_weights(fix: Mapping[str, Any], weights: float | None) -> dict[str, Any]:
    return {**fix, "why": f"{fix['why']}; but vLLM's bf16 weights need {weights:,.0f} MiB: free the device instead"}


def log_hardware(found: Diagnosis) -> Hardware:
    """The device the log reports (NVML's capacity of the device its total names, else its total), or the release's
    A100 when the log names none or names it."""
    device = found.device
    if device is None or device["measured"]:
        return BENCHMARK_HARDWARE
    return Hardware.of(int(device["capacity_mib"] or device["log_total_mib"]), None)


def _device_against_plan(found: Diagnosis, hardware: Hardware, given: bool) -> dict[str, Any] | None:
    if found.device is None:
        return None
    capacity = hardware.device_capacity_mib
    total = found.device["log_total_mib"]
    agrees = 0.95 * capacity <= total <= capacity
    return {
        "plan_capacity_mib": capacity,
        "capacity_from": "--device-capacity-mib" if given else "the log's device",
        "log_total_mib": total,
        "agrees": agrees,
        "note": None
        if agrees
        else f"the log's device ({total:,.0f} MiB) is not the plan's {capacity:,} MiB device: pass "
        "--device-capacity-mib to advise for the device that failed",
    }


def physical(change: Mapping[str, Any], kv_short: bool) -> bool:
    """Whether a change (the advisor's, or the release's: ``setting``, ``from``, ``to``) can relieve a device memory
    failure: a larger vLLM reservation or less tensor parallelism only adds memory, except that when the KV cache
    was what was short a larger reservation is the fix and a smaller one never is."""
    if change["setting"] not in ("vllm_gpu_memory_utilization", "rollout_tp_size"):
        return True
    up = float(change.get("release_to", change["to"])) > float(change["from"])
    if change["setting"] == "vllm_gpu_memory_utilization":
        return up if kv_short else not up
    if change["setting"] == "rollout_tp_size":
        return up
    return True


def _changes(changes: list[dict[str, Any]], phase: str | None, written: Mapping[str, str]) -> list[dict[str, Any]]:
    """The advisor's changes as fixes in the user's keys: those a measurement supports first, then those addressing
    ``phase``, each group in the advisor's own order (smallest change first)."""
    relevant = PHASE_SETTINGS.get(phase or "", ())
    ordered = sorted(changes, key=lambda c: (c["supporting_configuration"] is None, c["setting"] not in relevant))
    out = []
    for c in ordered:
        support = c["supporting_configuration"]
        peak = c.get("predicted_peak_change_mib")
        why = f"measured within the margin: {support['configuration_id']}" if support else "predicted within the margin"
        if peak is not None:
            why += f"; predicted peak change {peak:+,.0f} MiB"
        out.append(
            {
                "key": _one_key(written.get(c["setting"], _verl_key(c["setting"]))),
                "trl": None,
                "change": _value(c["to"]),
                "why": f"from {_value(c['from'])}: {why}",
                "basis": "launch",
                "setting": c["setting"],
                "supported": support is not None,
            }
        )
    return out


def _one_key(written: str) -> str:
    """The key to set of a setting written over several (``trainer.n_gpus_per_node × trainer.nnodes``: the first,
    the GPUs per node of one node; ``ref micro-batch, lora_rank``: the micro-batch)."""
    return written.split(" × ")[0].split(", ")[0]


def _model_fix(fix: Mapping[str, Any]) -> dict[str, Any]:
    after = fix["peak_after_mib"]
    why = f"shrinks {fix['term']}" + (f"; the model's peak after it: {after:,.0f} MiB" if after is not None else "")
    return {
        "key": fix["key"],
        "trl": None,
        "change": _value(fix["to"]),
        "why": why,
        "basis": "model",
        "setting": fix["setting"],
    }


def _release_fixes(release: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The single-setting changes that the release measured within the margin for configurations that failed this way
    (one per setting, the most frequent first)."""
    seen: dict[str, dict[str, Any]] = {}
    for configuration in release["configurations"]:
        for n in configuration["within_margin_neighbours"]:
            if n["setting"] in seen or n["setting"] in NOT_A_FIX:
                continue
            seen[n["setting"]] = {
                "key": _verl_key(n["setting"]),
                "trl": None,
                "change": f"{_value(n['failed'])} -> {_value(n['within_margin'])}",
                "to": None,  # pasted only where the plan starts from the same value (with the launch file)
                "from": _value(n["failed"]),
                "release_to": _value(n["within_margin"]),
                "why": f"the release measured {n['configuration_id']} within the margin"
                + (f" (peak {n['max_completed_peak_mib']:,.0f} MiB)" if n["max_completed_peak_mib"] else "")
                + f", one setting away from {configuration['configuration_id']} that failed this way",
                "basis": "release",
                "setting": n["setting"],
            }
    return list(seen.values())


def _verl_key(setting: str) -> str:
    return next((m.keys[0] for m in VERL_MAPPING if m.setting == setting), setting)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _split(fixes: tuple[dict[str, Any], ...]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the fixes whose values the log's own figures give, the others)."""
    return [f for f in fixes if f["basis"] == "log"], [f for f in fixes if f["basis"] != "log"]


def _unique(fixes: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    """The fixes with each setting (or key) once: the first, most specific, kept, so that no later fix contradicts
    what the log's own figures say (a utilization the free memory at start-up could not hold)."""
    seen: set[str] = set()
    out = []
    for fix in fixes:
        names = {fix["key"], fix.get("setting") or fix["key"]}
        if not names & seen:
            seen |= names
            out.append(fix)
    return tuple(out)


__all__ = ["MEMORY_CLASSES", "NO_LAUNCH_FILE", "explain_failure", "with_plan"]
