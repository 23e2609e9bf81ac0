"""Where a failure log meets the release and, when given, the advisor's answer to its launch file:
:func:`explain_failure` returns the :class:`~.diagnosis.Diagnosis` of :func:`~.diagnosis.diagnose_text` completed
with the release's failures of the same kind (:mod:`.failures`) and, with the :class:`~..answer.Answer` to the
launch file's plan, made specific to it: the verdict, the device the log reports against the plan's, the floors that
fail, the per-phase model's match (:mod:`.phasematch`) and the advisor's changes in the user's own keys.

One order of fixes: the log's own figures first (unless the plan's weights show them too small); then, when a floor
of the plan fails, the changes that make it hold (those that make the whole plan fit first); then the changes a
measurement supports, the per-phase model's fixes of the diagnosed phase, the other changes (the diagnosed phase's
first), the release's and the documented fixes."""

from __future__ import annotations

import os
from dataclasses import replace

from ...data.sources.resolve import SourceLike
from ..answer import Answer, Change, PhasePeaks, Remedy
from ..plan.hardware import BENCHMARK_HARDWARE, Hardware
from ..plan.mapping import TRL_MAPPING, VERL_MAPPING
from .diagnosis import KV_FAMILIES, MEMORY_CLASSES, Diagnosis, diagnose_text
from .failures import TABLES_NEEDED, release_failures
from .fixes import applies
from .logs import LogText, read_log
from .parts import DeviceAgainstPlan, PlanMatch, ReleaseFailures
from .phasematch import ModelFix, match_phases

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
NO_LAUNCH_FILE = "give the launch file too (--verl or --trl) to have these fixes in your own keys and values"
#: Where the plan's device came from when the log's was not taken.
LOG_DEVICE = "the log's device"


def explain_failure(
    log: str | os.PathLike[str] | LogText,
    source: SourceLike = None,
    revision: str | None = None,
    *,
    answer: Answer | None = None,
    plans_in_file: int = 1,
    device_from: str = LOG_DEVICE,
    phase_model: PhasePeaks | None = None,
) -> Diagnosis:
    """Why did the run of ``log`` (a path, ``-`` for standard input, or :class:`~.logs.LogText`) fail? With
    ``answer`` (the advisor's answer to the launch file's first plan, of ``plans_in_file``, on the device named by
    ``device_from``) the diagnosis is that plan's; its per-phase model is matched, or ``phase_model`` when given."""
    text = log if isinstance(log, LogText) else read_log(log)
    return explain(
        diagnose_text(text),
        source,
        revision,
        answer=answer,
        plans_in_file=plans_in_file,
        device_from=device_from,
        phase_model=phase_model,
    )


def explain(
    found: Diagnosis,
    source: SourceLike = None,
    revision: str | None = None,
    *,
    answer: Answer | None = None,
    plans_in_file: int = 1,
    device_from: str = LOG_DEVICE,
    phase_model: PhasePeaks | None = None,
) -> Diagnosis:
    """``found`` (a log's diagnosis) completed with the release's failures of its kind and, with ``answer``, made
    specific to that plan (see :func:`explain_failure`)."""
    if found.failure_class is None or found.outcome == "not_established":
        return found  # nothing of the release's failures to set beside a cause the log does not state
    from ...data.tables.reader import load_table

    tables = {name: load_table(name, source, revision, decode=True) for name in TABLES_NEEDED}
    release = ReleaseFailures.of(release_failures(found.failure_class, tables))
    logged, documented = _split(found.fixes)
    kv_short = _kv_short(found)
    # the release's start-up failures are its free-memory check, not a KV cache too small: no evidence for that
    measured = [
        f
        for f in ([] if kv_short else _release_fixes(release))
        if physical(f.setting, f.before, f.release_to) and applies(f.setting, found.stack, found.operation)
    ]
    if not found.is_memory:
        fixes: tuple[Remedy, ...] | list[Remedy] = found.fixes
    elif answer is None:  # no value of the user's to start from: the release's changes as evidence of the fixes
        fixes = (*logged, *_as_evidence(measured, documented))
    else:
        fixes = (*logged, *measured, *documented)
    found = replace(found, release=release, fixes=_unique(fixes))
    if answer is None:
        return replace(found, note=NO_LAUNCH_FILE if found.is_memory else None)
    return with_answer(found, answer, plans_in_file=plans_in_file, device_from=device_from, phase_model=phase_model)


def with_answer(
    found: Diagnosis,
    answer: Answer,
    *,
    plans_in_file: int = 1,
    device_from: str = LOG_DEVICE,
    phase_model: PhasePeaks | None = None,
) -> Diagnosis:
    """``found`` made specific to ``answer``: the advisor's answer, its changes in the user's keys (see the module
    docstring for their order), and the per-phase model's match (the answer's own model unless ``phase_model``)."""
    written = {s: answer.written[s].split(" (")[0] for s in answer.written}
    kv_short = _kv_short(found)
    floors_fail = bool(answer.failed_floors)
    usable = [
        c
        for c in answer.changes
        if c.basis == "floor"
        or (physical(c.setting, c.before, c.to, kv_short) and applies(c.setting, found.stack, found.operation))
    ]
    changes = _launch_fixes(usable, found.phase, written, floors_fail)
    model = phase_model if phase_model is not None else (answer.memory if answer.memory.known else None)
    phases = None
    if model is not None:
        numbers = {n.name: n.value for n in found.numbers if n.unit == "MiB"}
        layers = (answer.metadata or {}).get("num_hidden_layers")
        settings = {**answer.settings, "num_hidden_layers": int(layers) if layers else None}
        phases = match_phases(model, found.phase, numbers, settings, written)
        # a measurement first (and, when a floor fails, whatever makes it hold), then the model's fixes
        first = [c for c in changes if c.supported or floors_fail]
        changes = [*first, *(_model_fix(f) for f in phases.fixes), *(c for c in changes if c not in first)]
    device = _device_against_plan(found, answer.device, device_from)
    specific = PlanMatch(answer, device, plans_in_file, phases)
    if not found.is_memory:
        return replace(found, specific=specific)
    logged, others = _split(found.fixes)
    logged = [f.with_key(written.get(f.setting or "", f.key)) for f in logged]  # the log's figures decide first
    weights = answer.floor("generation_weights")
    required = None if weights is None or weights.required is None else float(weights.required)
    short = [_with_weights(f, required or 0.0) for f in logged if _too_small(f, required, answer.device)]
    held = [f for f in logged if not _too_small(f, required, answer.device)]
    plan = answer.settings
    kept = [
        replace(f, to=f.release_to) if f.basis == "release" else f
        for f in others
        if f.basis != "release" or f.before == _value(plan.get(f.setting or ""))
    ]
    return replace(found, specific=specific, fixes=_unique((*held, *changes, *kept, *short)))


def _kv_short(found: Diagnosis) -> bool:
    return found.signal is not None and found.signal.family in KV_FAMILIES


def _too_small(fix: Remedy, weights: float | None, hardware: Hardware) -> bool:
    """Whether a utilization the log's free memory allows cannot hold vLLM's copy of the plan's weights."""
    if fix.setting != "vllm_gpu_memory_utilization" or weights is None:
        return False
    return float(fix.change) * hardware.device_capacity_mib < weights


def _with_weights(fix: Remedy, weights: float) -> Remedy:
    return replace(fix, why=f"{fix.why}; but vLLM's bf16 weights need {weights:,.0f} MiB: free the device instead")


def log_hardware(found: Diagnosis) -> Hardware:
    """The device the log reports (NVML's capacity of the device its total names, else its total), or the release's
    A100 when the log names none or names it."""
    device = found.device
    if device is None or device.measured:
        return BENCHMARK_HARDWARE
    return Hardware.of(int(device.capacity_mib or device.log_total_mib), None)


def _device_against_plan(found: Diagnosis, hardware: Hardware, device_from: str) -> DeviceAgainstPlan | None:
    if found.device is None:
        return None
    capacity = hardware.device_capacity_mib
    total = found.device.log_total_mib
    agrees = 0.95 * capacity <= total <= capacity
    note = (
        None
        if agrees
        else f"the log's device ({total:,.0f} MiB) is not the plan's {capacity:,} MiB device: pass --gpu or "
        "--device-capacity-mib to advise for the device that failed"
    )
    return DeviceAgainstPlan(capacity, device_from, total, agrees, note)


def physical(setting: str | None, before: object, to: object, kv_short: bool = False) -> bool:
    """Whether a change of ``setting`` from ``before`` to ``to`` can relieve a device memory failure: a larger vLLM
    reservation or less tensor parallelism only adds memory, except that when the KV cache was what was short a
    larger reservation is the fix and a smaller one never is."""
    if setting not in ("vllm_gpu_memory_utilization", "rollout_tp_size"):
        return True
    up = float(str(to)) > float(str(before))
    if setting == "vllm_gpu_memory_utilization":
        return up if kv_short else not up
    return up


def _launch_fixes(changes: list[Change], phase: str | None, written: dict[str, str], floors_fail: bool) -> list[Remedy]:
    """The advisor's changes as fixes in the user's keys: those a measurement supports first, then (unless a floor
    fails, when the answer's own order stands: what makes the plan fit, then what makes the floor hold) those
    addressing ``phase``, each group in the advisor's own order (smallest change first)."""
    relevant = () if floors_fail else PHASE_SETTINGS.get(phase or "", ())
    ordered = sorted(changes, key=lambda c: (c.supporting is None, c.setting not in relevant))
    out = []
    for c in ordered:
        if c.basis == "floor":
            why = f"the floor {c.floor} holds after it; the verdict after it: {c.resulting_state or 'none'}"
        elif c.supporting is not None:
            why = f"measured within the margin: {c.supporting.configuration_id}"
        else:
            why = "predicted within the margin"
        if c.predicted_peak_change_mib is not None:
            why += f"; predicted peak change {c.predicted_peak_change_mib:+,.0f} MiB"
        before = "not given" if c.before is None else _value(c.before)
        key = _one_key(written.get(c.setting, _verl_key(c.setting)))
        out.append(
            Remedy(
                key,
                None,
                _value(c.to),
                f"from {before}: {why}",
                "launch",
                c.setting,
                supported=c.supporting is not None,
            )
        )
    return out


def _one_key(written: str) -> str:
    """The key to set of a setting written over several (``trainer.n_gpus_per_node × trainer.nnodes``: the first,
    the GPUs per node of one node; ``ref micro-batch, lora_rank``: the micro-batch)."""
    return written.split(" × ")[0].split(", ")[0]


def _model_fix(fix: ModelFix) -> Remedy:
    after = fix.peak_after_mib
    why = f"shrinks {fix.term}" + (f"; the model's peak after it: {after:,.0f} MiB" if after is not None else "")
    return Remedy(fix.key, None, _value(fix.to), why, "model", fix.setting)


def _release_fixes(release: ReleaseFailures) -> list[Remedy]:
    """The single-setting changes that the release measured within the margin for configurations that failed this way
    (one per setting, the most frequent first)."""
    seen: dict[str, Remedy] = {}
    for configuration in release.configurations:
        for n in configuration.neighbours:
            if n.setting in seen or n.setting in NOT_A_FIX:
                continue
            peak = f" (peak {n.max_completed_peak_mib:,.0f} MiB)" if n.max_completed_peak_mib else ""
            seen[n.setting] = Remedy(
                _verl_key(n.setting),
                None,
                f"{_value(n.failed)} -> {_value(n.within_margin)}",
                f"the release measured {n.configuration_id} within the margin{peak}, one setting away from "
                f"{configuration.configuration_id} that failed this way",
                "release",
                n.setting,
                to=None,  # pasted only where the plan starts from the same value (with the launch file)
                before=_value(n.failed),
                release_to=_value(n.within_margin),
            )
    return list(seen.values())


def _as_evidence(measured: list[Remedy], documented: list[Remedy]) -> list[Remedy]:
    """Without a launch file, the release's changes first (a measurement supports them), each stated by its
    direction ("lower", "raise", a switch's new value) since the release's from-value need not be the user's, with
    the documented fix of the same key's TRL spelling; then the documented fixes the release does not name."""
    documented_by_key = {f.key: f for f in documented}
    out = []
    for f in measured:
        twin = documented_by_key.get(f.key)
        out.append(
            replace(
                f,
                change=_direction(f.before, f.release_to),
                why=f"{f.why} ({f.change})",
                trl=f.trl or (twin.trl if twin else _trl_key(f.setting)),
            )
        )
    named = {f.key for f in measured}
    return [*out, *(f for f in documented if f.key not in named)]


def _direction(before: object, after: object) -> str:
    """A change stated by its direction: a switch as its new value, a number as "lower" or "raise"."""
    if str(after) in ("True", "False"):
        return str(after)
    try:
        return "raise" if float(str(after)) > float(str(before)) else "lower"
    except ValueError:
        return str(after)


def _trl_key(setting: str | None) -> str | None:
    return next((m.keys[0] for m in TRL_MAPPING if m.setting == setting), None)


def _verl_key(setting: str) -> str:
    return next((m.keys[0] for m in VERL_MAPPING if m.setting == setting), setting)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _split(fixes: tuple[Remedy, ...]) -> tuple[list[Remedy], list[Remedy]]:
    """(the fixes whose values the log's own figures give, the others)."""
    return [f for f in fixes if f.basis == "log"], [f for f in fixes if f.basis != "log"]


def _unique(fixes: tuple[Remedy, ...] | list[Remedy]) -> tuple[Remedy, ...]:
    """The fixes with each setting (or key) once: the first, most specific, kept, so that no later fix contradicts
    what the log's own figures say (a utilization the free memory at start-up could not hold)."""
    seen: set[str] = set()
    out = []
    for fix in fixes:
        names = {fix.key, fix.setting or fix.key}
        if not names & seen:
            seen |= names
            out.append(fix)
    return tuple(out)


__all__ = ["MEMORY_CLASSES", "NO_LAUNCH_FILE", "explain", "explain_failure", "log_hardware", "with_answer"]
