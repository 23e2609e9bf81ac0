"""A diagnosed failure matched against a per-phase memory model (pure): which phase binds, which term overflowed,
whether the log's own figures agree with the model, and the overrides that fix it, smallest change first, each with
the model's peak after it.

The model's side is the per-phase structure of the advisor's JSON (``device`` {name, capacity_mib, margin_mib,
measured}, ``phases`` [{phase, peak_mib, terms: [{term, mib, arithmetic}]}], ``band_mib``), read by
:meth:`PhaseModel.of`. A term is matched to the setting that scales it by its name (the vLLM reservation, logits,
activations, the merged copy of the weight sync, optimizer states, resident parameters).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import InputError, quote

#: PyTorch reports a device's total as somewhat less than NVML does (the driver's reservation): the share accepted.
CAPACITY_SHARE = (0.95, 1.0)
#: How close (share of the term) a failed allocation must be to a term's size to be that term.
ALLOCATION_SHARE = 0.1
#: The step in which a utilization is suggested.
UTILIZATION_STEP = 0.05


@dataclass(frozen=True)
class Term:
    term: str
    mib: float
    arithmetic: str = ""


@dataclass(frozen=True)
class Phase:
    phase: str
    peak_mib: float
    terms: tuple[Term, ...]


@dataclass(frozen=True)
class PhaseModel:
    """A plan's per-phase peaks on its device; ``band_mib`` is the model's error band."""

    device_name: str
    capacity_mib: float
    margin_mib: float
    measured: bool
    phases: tuple[Phase, ...]
    band_mib: float = 0.0

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> PhaseModel:
        """The model of one plan's JSON entry (``device``, ``phases``, ``band_mib``); one line when it is not one."""
        try:
            device = entry["device"]
            phases = tuple(
                Phase(
                    str(p["phase"]),
                    float(p["peak_mib"]),
                    tuple(Term(str(t["term"]), float(t["mib"]), str(t.get("arithmetic", ""))) for t in p["terms"]),
                )
                for p in entry["phases"]
            )
            return cls(
                str(device["name"]),
                float(device["capacity_mib"]),
                float(device["margin_mib"]),
                bool(device.get("measured", False)),
                phases,
                float(entry.get("band_mib") or 0.0),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"not a per-phase memory model: {quote(str(exc))}") from None

    def phase(self, name: str | None) -> Phase | None:
        return next((p for p in self.phases if p.phase == name), None)

    @property
    def binding(self) -> Phase:
        return max(self.phases, key=lambda p: p.peak_mib)


@dataclass(frozen=True)
class Override:
    """A setting that scales a term: the dataset's ``setting``, its VERL ``key``, and whether it is a switch."""

    setting: str
    key: str
    kind: str  # "fraction" (utilization), "count" (a micro-batch, sequences), "switch"


#: Term-name keywords → the overrides that shrink that term (the first keyword found in a term's name wins).
TERM_OVERRIDES: tuple[tuple[tuple[str, ...], tuple[Override, ...]], ...] = (
    (
        ("gathered", "merged", "summon", "sync", "bf16 copy"),
        (Override("layered_summon", "actor_rollout_ref.rollout.layered_summon", "switch"),),
    ),
    (
        ("reservation", "budget", "kv cache", "kv-cache"),
        (Override("vllm_gpu_memory_utilization", "actor_rollout_ref.rollout.gpu_memory_utilization", "fraction"),),
    ),
    (
        ("between_generations",),
        (Override("free_cache_engine", "actor_rollout_ref.rollout.free_cache_engine", "switch"),),
    ),
    (
        ("update_logits", "update_tokens"),
        (Override("actor_micro_batch", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "count"),),
    ),
    (
        ("reference", "ref "),
        (Override("ref_logprob_micro_batch", "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu", "count"),),
    ),
    (
        ("logit", "log-prob", "logprob"),
        (
            Override(
                "rollout_logprob_micro_batch", "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", "count"
            ),
        ),
    ),
    (
        ("activation",),
        (
            Override("gradient_checkpointing", "actor_rollout_ref.model.enable_gradient_checkpointing", "switch"),
            Override("actor_micro_batch", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "count"),
        ),
    ),
    (
        ("optimizer", "adam", "gradient"),
        (Override("optimizer_offload", "actor_rollout_ref.actor.fsdp_config.optimizer_offload", "switch"),),
    ),
    (
        ("parameter", "shard", "resident", "actor", "fsdp"),
        (Override("parameter_offload", "actor_rollout_ref.actor.fsdp_config.param_offload", "switch"),),
    ),
)


def overrides_of(term: str) -> tuple[Override, ...]:
    name = term.lower()
    return next((o for words, o in TERM_OVERRIDES if any(w in name for w in words)), ())


def match_phases(
    model: PhaseModel,
    phase: str | None,
    log_numbers: Mapping[str, float],
    settings: Mapping[str, object] | None = None,
    written: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The log's failure in ``phase`` matched against ``model``: the device check, the binding phase, the term that
    overflowed, the log's figures against the model's, and the fixes (``written`` names the settings in the user's
    own keys; ``settings`` gives their current values)."""
    diagnosed = model.phase(phase)
    binding = model.binding
    limit = model.margin_mib
    out: dict[str, Any] = {
        "device": device_check(model, log_numbers.get("total_capacity")),
        "diagnosed_phase": phase,
        "binding_phase": binding.phase,
        "agree": diagnosed is not None
        and (diagnosed is binding or binding.peak_mib - diagnosed.peak_mib <= model.band_mib),
        "phase_peak_mib": diagnosed.peak_mib if diagnosed else None,
        "margin_mib": limit,
        "capacity_mib": model.capacity_mib,
    }
    target = diagnosed or binding
    out["overflowing_term"] = overflowing_term(target, model.capacity_mib, log_numbers.get("tried_to_allocate"))
    out["log_against_model"] = log_check(target, log_numbers, model.band_mib)
    term = out["overflowing_term"]
    fixes = fixes_for(target, limit, model.capacity_mib, settings or {}, written or {})
    out["fixes"] = sorted(fixes, key=lambda f: (_fit_rank(f), term is None or f["term"] != term["term"], f["size"]))
    return out


def device_check(model: PhaseModel, log_capacity: float | None) -> dict[str, Any]:
    """Whether the device the log reports (PyTorch's total capacity, MiB) is the model's."""
    if log_capacity is None:
        return {"name": model.device_name, "agrees": None, "why": "the log states no device capacity"}
    low, high = CAPACITY_SHARE
    agrees = low * model.capacity_mib <= log_capacity <= high * model.capacity_mib
    why = (
        f"the log's {log_capacity:,.0f} MiB total is {log_capacity / model.capacity_mib:.1%} of the model's "
        f"{model.capacity_mib:,.0f} MiB {model.device_name}"
    )
    return {"name": model.device_name, "agrees": agrees, "why": why}


def overflowing_term(phase: Phase, capacity: float, tried: float | None = None) -> dict[str, Any] | None:
    """The term that overflowed: the one whose size the failed allocation matches (``tried``, MiB, within
    :data:`ALLOCATION_SHARE`), else the one at which the phase's running total crosses the capacity, else the
    largest."""
    if not phase.terms:
        return None
    if tried:
        near = [t for t in phase.terms if abs(t.mib - tried) <= ALLOCATION_SHARE * t.mib]
        if near:
            term = min(near, key=lambda t: abs(t.mib - tried))
            return {"term": term.term, "mib": term.mib, "arithmetic": term.arithmetic, "basis": "failed allocation"}
    total = 0.0
    for term in phase.terms:
        total += term.mib
        if total > capacity:
            return {"term": term.term, "mib": term.mib, "arithmetic": term.arithmetic, "basis": "crosses capacity"}
    largest = max(phase.terms, key=lambda t: t.mib)
    return {"term": largest.term, "mib": largest.mib, "arithmetic": largest.arithmetic, "basis": "largest term"}


def log_check(phase: Phase, numbers: Mapping[str, float], band: float) -> dict[str, Any] | None:
    """The log's figures against the model's phase: what the process needed (in use + the failed request) against
    the phase's peak, and each term against what PyTorch had reserved (a term larger than it was not resident)."""
    in_use = numbers.get("process_in_use")
    if in_use is None and numbers.get("reserved_by_pytorch") is not None:
        in_use = numbers["reserved_by_pytorch"]
    if in_use is None:
        return None
    needed = in_use + numbers.get("tried_to_allocate", 0.0)
    reserved = numbers.get("reserved_by_pytorch")
    if reserved is None and numbers.get("allocated_by_pytorch") is not None:
        reserved = numbers["allocated_by_pytorch"] + numbers.get("reserved_unallocated", 0.0)
    return {
        "log_needed_mib": round(needed, 1),
        "model_peak_mib": phase.peak_mib,
        "difference_mib": round(phase.peak_mib - needed, 1),
        "within_band": abs(phase.peak_mib - needed) <= max(band, 0.0),
        "terms_above_reserved": [t.term for t in phase.terms if reserved is not None and t.mib > reserved],
    }


def fixes_for(
    phase: Phase, limit: float, capacity: float, settings: Mapping[str, object], written: Mapping[str, str]
) -> list[dict[str, Any]]:
    """For each term of ``phase`` the overrides that shrink it, with the peak after each: those that bring the peak
    within ``limit`` first, smallest change first (:func:`match_phases` puts the overflowing term's first)."""
    excess = phase.peak_mib - limit
    found: list[dict[str, Any]] = []
    for term in sorted(phase.terms, key=lambda t: -t.mib):
        for override in overrides_of(term.term):
            fix = _fix(override, term, excess, capacity, settings)
            if fix is not None and all(f["setting"] != fix["setting"] for f in found):
                fix["key"] = written.get(override.setting, override.key)
                fix["term"] = term.term
                reduction = fix.pop("reduction_mib")
                fix["peak_after_mib"] = None if reduction is None else round(phase.peak_mib - reduction, 1)
                fix["fits"] = None if reduction is None else fix["peak_after_mib"] <= limit
                found.append(fix)
    found.sort(key=lambda f: (_fit_rank(f), f["size"]))
    return found


def _fit_rank(fix: Mapping[str, Any]) -> int:
    """Fixes that make the phase fit first, then those whose effect is not known, then those that do not suffice."""
    return {True: 0, None: 1, False: 2}[fix["fits"]]


def _fix(
    override: Override, term: Term, excess: float, capacity: float, settings: Mapping[str, object]
) -> dict[str, Any] | None:
    if override.kind == "switch":
        if settings.get(override.setting) is True:
            return None
        reduction: float | None = term.mib
        if override.setting == "layered_summon":  # the merged copy is gathered one layer at a time
            layers = settings.get("num_hidden_layers")
            reduction = term.mib * (1 - 1 / layers) if isinstance(layers, int) and layers > 0 else None
        return {"setting": override.setting, "to": True, "size": 0.5, "reduction_mib": reduction}
    if override.kind == "fraction":
        given = settings.get(override.setting)  # the plan's utilization, else the reservation's share of the device
        current = (
            float(given) if isinstance(given, (int, float)) and not isinstance(given, bool) else term.mib / capacity
        )
        steps = max(math.ceil(max(excess, 0.0) / (UTILIZATION_STEP * capacity) - 1e-9), 1)
        new = round(current - steps * UTILIZATION_STEP, 2)
        if new <= 0:
            return None
        return {
            "setting": override.setting,
            "to": new,
            "size": (current - new) / current,
            "reduction_mib": (current - new) * capacity,
        }
    count = settings.get(override.setting)
    if not isinstance(count, int) or count <= 1:
        return None
    keep = max(1.0 - max(excess, 0.0) / term.mib, 0.0) if term.mib > 0 else 1.0
    new = max(int(count * keep), 1)
    if new >= count:
        new = count - 1
    return {
        "setting": override.setting,
        "to": new,
        "size": (count - new) / count,
        "reduction_mib": term.mib * (count - new) / count,
    }
