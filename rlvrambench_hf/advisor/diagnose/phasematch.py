"""A diagnosed failure matched against the per-phase memory model of its plan (pure): which phase binds, which
term overflowed, whether the log's own figures agree with the model, and the overrides that fix it, smallest change
first, each with the model's peak after it.

The model's side is one plan's :class:`~..answer.PhasePeaks`: the advisor's own (the memory model's
:class:`~rlvrambench_hf.memory.phases.PhaseModel` at that plan, handed over in process) or one read back from a
saved answer (:func:`~..output.document.read_phase_peaks`). A term is matched to the setting that scales it by its
name (the vLLM reservation, logits, activations, the merged copy of the weight sync, optimizer states, resident
parameters).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..answer import Part, PhasePeak, PhasePeaks, PhaseTerm

#: PyTorch reports a device's total as somewhat less than NVML does (the driver's reservation): the share accepted.
CAPACITY_SHARE = (0.95, 1.0)
#: How close (share of the term) a failed allocation must be to a term's size to be that term.
ALLOCATION_SHARE = 0.1
#: The step in which a utilization is suggested.
UTILIZATION_STEP = 0.05


@dataclass(frozen=True, eq=False)
class DeviceCheck(Part):
    """Whether the device the log reports is the model's (None: the log states no capacity), and why."""

    name: str
    agrees: bool | None
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "agrees": self.agrees, "why": self.why}


@dataclass(frozen=True, eq=False)
class Overflow(Part):
    """The term that overflowed, and how it was found (``failed allocation``, ``crosses capacity``, ``largest
    term``)."""

    term: PhaseTerm
    basis: str

    def to_json(self) -> dict[str, Any]:
        return {**self.term.to_json(), "basis": self.basis}


@dataclass(frozen=True, eq=False)
class LogCheck(Part):
    """What the process needed by the log (in use + the failed request) against the phase's peak, and the terms
    larger than what PyTorch had reserved (which were not resident)."""

    log_needed_mib: float
    model_peak_mib: float
    difference_mib: float
    within_band: bool
    terms_above_reserved: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "log_needed_mib": self.log_needed_mib,
            "model_peak_mib": self.model_peak_mib,
            "difference_mib": self.difference_mib,
            "within_band": self.within_band,
            "terms_above_reserved": list(self.terms_above_reserved),
        }


@dataclass(frozen=True, eq=False)
class ModelFix(Part):
    """An override that shrinks a term: the dataset's ``setting``, its new value ``to``, the relative ``size`` of
    the change, the ``key`` to set, the ``term`` it shrinks, the phase's peak after it and whether it then fits
    (None: the effect is not known)."""

    setting: str
    to: object
    size: float
    key: str
    term: str
    peak_after_mib: float | None
    fits: bool | None

    def to_json(self) -> dict[str, Any]:
        return {
            "setting": self.setting,
            "to": self.to,
            "size": self.size,
            "key": self.key,
            "term": self.term,
            "peak_after_mib": self.peak_after_mib,
            "fits": self.fits,
        }


@dataclass(frozen=True, eq=False)
class PhaseMatch(Part):
    """The log's failure matched against the plan's per-phase model (see the module docstring)."""

    device: DeviceCheck
    diagnosed_phase: str | None
    binding_phase: str | None
    agree: bool
    phase_peak_mib: float | None
    margin_mib: float
    capacity_mib: float
    overflowing_term: Overflow | None
    log_against_model: LogCheck | None
    fixes: tuple[ModelFix, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.device.to_json(),
            "diagnosed_phase": self.diagnosed_phase,
            "binding_phase": self.binding_phase,
            "agree": self.agree,
            "phase_peak_mib": self.phase_peak_mib,
            "margin_mib": self.margin_mib,
            "capacity_mib": self.capacity_mib,
            "overflowing_term": None if self.overflowing_term is None else self.overflowing_term.to_json(),
            "log_against_model": None if self.log_against_model is None else self.log_against_model.to_json(),
            "fixes": [f.to_json() for f in self.fixes],
        }


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
    model: PhasePeaks,
    phase: str | None,
    log_numbers: Mapping[str, float],
    settings: Mapping[str, object] | None = None,
    written: Mapping[str, str] | None = None,
) -> PhaseMatch:
    """The log's failure in ``phase`` matched against ``model``: the device check, the binding phase, the term that
    overflowed, the log's figures against the model's, and the fixes (``written`` names the settings in the user's
    own keys; ``settings`` gives their current values)."""
    diagnosed = model.phase(phase)
    binding = model.binding
    if binding is None:
        raise ValueError("a per-phase model without phases matches no failure")
    limit, capacity = float(model.device.margin_limit_mib), float(model.device.device_capacity_mib)
    target = diagnosed or binding
    term = overflowing_term(target, capacity, log_numbers.get("tried_to_allocate"))
    fixes = fixes_for(target, limit, capacity, settings or {}, written or {})
    ordered = sorted(fixes, key=lambda f: (_fit_rank(f), term is None or f.term != term.term.term, f.size))
    return PhaseMatch(
        device_check(model, log_numbers.get("total_capacity")),
        phase,
        binding.phase,
        diagnosed is not None and (diagnosed is binding or binding.peak_mib - diagnosed.peak_mib <= model.band_mib),
        diagnosed.peak_mib if diagnosed else None,
        limit,
        capacity,
        term,
        log_check(target, log_numbers, model.band_mib),
        tuple(ordered),
    )


def device_check(model: PhasePeaks, log_capacity: float | None) -> DeviceCheck:
    """Whether the device the log reports (PyTorch's total capacity, MiB) is the model's."""
    name, capacity = model.device.device_name, model.device.device_capacity_mib
    if log_capacity is None:
        return DeviceCheck(name, None, "the log states no device capacity")
    low, high = CAPACITY_SHARE
    agrees = low * capacity <= log_capacity <= high * capacity
    why = (
        f"the log's {log_capacity:,.0f} MiB total is {log_capacity / capacity:.1%} of the model's "
        f"{capacity:,.0f} MiB {name}"
    )
    return DeviceCheck(name, agrees, why)


def overflowing_term(phase: PhasePeak, capacity: float, tried: float | None = None) -> Overflow | None:
    """The term that overflowed: the one whose size the failed allocation matches (``tried``, MiB, within
    :data:`ALLOCATION_SHARE`), else the one at which the phase's running total crosses the capacity, else the
    largest."""
    if not phase.terms:
        return None
    if tried:
        near = [t for t in phase.terms if abs(t.mib - tried) <= ALLOCATION_SHARE * t.mib]
        if near:
            return Overflow(min(near, key=lambda t: abs(t.mib - tried)), "failed allocation")
    total = 0.0
    for term in phase.terms:
        total += term.mib
        if total > capacity:
            return Overflow(term, "crosses capacity")
    return Overflow(max(phase.terms, key=lambda t: t.mib), "largest term")


def log_check(phase: PhasePeak, numbers: Mapping[str, float], band: float) -> LogCheck | None:
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
    return LogCheck(
        round(needed, 1),
        phase.peak_mib,
        round(phase.peak_mib - needed, 1),
        abs(phase.peak_mib - needed) <= max(band, 0.0),
        tuple(t.term for t in phase.terms if reserved is not None and t.mib > reserved),
    )


def fixes_for(
    phase: PhasePeak, limit: float, capacity: float, settings: Mapping[str, object], written: Mapping[str, str]
) -> list[ModelFix]:
    """For each term of ``phase`` the overrides that shrink it, with the peak after each: those that bring the peak
    within ``limit`` first, smallest change first (:func:`match_phases` puts the overflowing term's first)."""
    excess = phase.peak_mib - limit
    found: list[ModelFix] = []
    for term in sorted(phase.terms, key=lambda t: -t.mib):
        for override in overrides_of(term.term):
            change = _change(override, term, excess, capacity, settings)
            if change is None or any(f.setting == override.setting for f in found):
                continue
            to, size, reduction = change
            after = None if reduction is None else round(phase.peak_mib - reduction, 1)
            key = written.get(override.setting, override.key)
            found.append(
                ModelFix(override.setting, to, size, key, term.term, after, None if after is None else after <= limit)
            )
    found.sort(key=lambda f: (_fit_rank(f), f.size))
    return found


def _fit_rank(fix: ModelFix) -> int:
    """Fixes that make the phase fit first, then those whose effect is not known, then those that do not suffice."""
    return {True: 0, None: 1, False: 2}[fix.fits]


def _change(
    override: Override, term: PhaseTerm, excess: float, capacity: float, settings: Mapping[str, object]
) -> tuple[object, float, float | None] | None:
    """(new value, relative size of the change, MiB it frees: None when not known), or None: no such change."""
    if override.kind == "switch":
        if settings.get(override.setting) is True:
            return None
        reduction: float | None = term.mib
        if override.setting == "layered_summon":  # the merged copy is gathered one layer at a time
            layers = settings.get("num_hidden_layers")
            reduction = term.mib * (1 - 1 / layers) if isinstance(layers, int) and layers > 0 else None
        return True, 0.5, reduction
    if override.kind == "fraction":
        given = settings.get(override.setting)  # the plan's utilization, else the reservation's share of the device
        current = (
            float(given) if isinstance(given, (int, float)) and not isinstance(given, bool) else term.mib / capacity
        )
        steps = max(math.ceil(max(excess, 0.0) / (UTILIZATION_STEP * capacity) - 1e-9), 1)
        new = round(current - steps * UTILIZATION_STEP, 2)
        if new <= 0:
            return None
        return new, (current - new) / current, (current - new) * capacity
    count = settings.get(override.setting)
    if not isinstance(count, int) or count <= 1:
        return None
    keep = max(1.0 - max(excess, 0.0) / term.mib, 0.0) if term.mib > 0 else 1.0
    new_count = _divisor_at_most(_sequences_per_gpu(settings), min(max(int(count * keep), 1), count - 1))
    return new_count, (count - new_count) / count, term.mib * (count - new_count) / count


def _sequences_per_gpu(settings: Mapping[str, object]) -> int | None:
    """The sequences each GPU holds in a step (train batch × group size / GPUs), when the plan gives them."""
    counts = [settings.get(k) for k in ("train_batch_size", "rollout_n", "gpu_count")]
    given = [v for v in counts if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    if len(given) < 3:
        return None
    batch, group, gpus = given
    return batch * group // gpus if batch * group % gpus == 0 else None


def _divisor_at_most(sequences: int | None, limit: int) -> int:
    """The largest micro-batch of at most ``limit`` that divides the sequences per GPU (VERL's check), or
    ``limit`` when they are not known."""
    if sequences is None:
        return limit
    return next(d for d in range(limit, 0, -1) if sequences % d == 0)
