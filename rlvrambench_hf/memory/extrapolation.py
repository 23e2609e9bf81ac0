"""The error band of a plan, grown by how far the plan lies from what the release measured.

Every plan gets the in-domain band (the 95th percentile of the absolute held-out peak errors of the nested folds);
parts are added per phase where the plan extrapolates, each calibrated on held-out evidence (:class:`BandModel`):

* ``model_not_calibrated`` — a model outside the calibration models: the 95th percentile of the absolute relative
  error of the leave-one-model-out predictions of one-step runs, times the phase's peak;
* ``size_outside_range`` — a model whose parameters lie outside the calibration models' range: that share again,
  times the phase's peak, times ``|ln(P / nearest bound)|``;
* ``tokens_outside_range`` — a micro-batch holding more tokens than any the release measured: the 95th percentile
  of the held-out under-prediction of the token phases' stage peaks, times the phase's token terms, times
  ``1 + ln(tokens / largest measured)``;
* ``device_not_measured`` — a device of another capacity than the release's: a share of the phase's uncertain terms
  (calibrated, token and not-measured terms; vLLM's ``u × C`` and the parameter shards are exact on any device), the
  share the other parts leave uncovered on documented failures on other devices (:mod:`.documented`);
* ``stack_not_measured`` — terms of a training stack the release measured none of (:mod:`.stack`: full
  fine-tuning, a reference model, a critic, Ulysses, unpaged generation) and the token terms of dynamic batch sizes:
  :data:`STACK_SHARE` of them (allocator fragmentation and buffers their physics leaves out: FSDP's prefetch and
  reduce-scatter buffers, DeepSpeed's buckets, NCCL's), a physical prior no measurement calibrates;
* ``training_horizon`` — a run of more than one step (or of an unstated number): the 95th percentile of what the
  release's multi-step runs measured above their leave-one-model-out prediction (every calibration run is one
  step long).

The band is the largest reach over the phases, ``max_phase(peak_phase + parts_phase)``, less the peak, and never
below the in-domain band; the parts reported are those of the phase that reaches furthest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .architecture import Architecture
from .arithmetic import tokens_of
from .inputs import PlanInputs
from .phases import PHASES, TOKEN_CALIBRATION, TOKEN_TERMS, PhaseModel

IN_DOMAIN, MODEL, SIZE, TOKENS, DEVICE, HORIZON, STACK = (
    "in_domain",
    "model_not_calibrated",
    "size_outside_range",
    "tokens_outside_range",
    "device_not_measured",
    "training_horizon",
    "stack_not_measured",
)
PARTS: tuple[str, ...] = (IN_DOMAIN, MODEL, SIZE, TOKENS, DEVICE, HORIZON, STACK)
#: The share of the not-measured terms the ``stack_not_measured`` part adds (a prior: no measurement calibrates it).
STACK_SHARE = 0.25
#: The quantile of held-out errors each part is calibrated to.
BAND_QUANTILE = 0.95


@dataclass(frozen=True)
class BandModel:
    """The calibrated figures of the band's parts and the measured ground they are measured from: calibration
    models, their parameter range, the largest micro-batch tokens measured per token phase, the measured
    capacity, and what each figure rests on (``evidence``: part -> count of held-out errors)."""

    in_domain_mib: float
    model_share: float
    token_share: float
    device_share: float
    horizon_mib: float
    models: tuple[str, ...]
    sizes: tuple[float, float]
    tokens_max: Mapping[str, float]
    capacity_mib: float
    evidence: Mapping[str, int]

    def describe(self) -> dict[str, Any]:
        return {
            "in_domain_mib": round(self.in_domain_mib, 1),
            "model_share": round(self.model_share, 5),
            "token_share": round(self.token_share, 5),
            "device_share": round(self.device_share, 5),
            "horizon_mib": round(self.horizon_mib, 1),
            "calibration_models": list(self.models),
            "calibration_parameters": [int(self.sizes[0]), int(self.sizes[1])],
            "largest_measured_tokens": {k: int(v) for k, v in self.tokens_max.items()},
            "measured_capacity_mib": int(self.capacity_mib),
            "evidence": dict(self.evidence),
        }


def quantile(values: Sequence[float] | np.ndarray) -> float:
    """The :data:`BAND_QUANTILE` quantile (0 for no values)."""
    return float(np.quantile(np.asarray(values, dtype=np.float64), BAND_QUANTILE)) if len(values) else 0.0


@dataclass(frozen=True)
class PlanBand:
    """Per plan: the band (MiB), each part's MiB at the phase that reaches furthest, that phase, and the
    distances behind the parts (for their sentences)."""

    mib: np.ndarray
    parts: Mapping[str, np.ndarray]
    applies: Mapping[str, np.ndarray]
    phase: np.ndarray
    size_distance: np.ndarray
    token_ratio: np.ndarray
    model_ids: Sequence[str | None]
    band: BandModel

    def entry(self, i: int) -> dict[str, Any]:
        """Plan ``i``'s band as the answer lists it: total, the phase it is measured at, and its parts."""
        parts = [
            {"part": p, "mib": round(float(self.parts[p][i]), 1), "why": self.why(p, i)}
            for p in PARTS
            if self.applies[p][i] and (self.parts[p][i] > 0 or p in (IN_DOMAIN, DEVICE))
        ]
        return {"mib": round(float(self.mib[i]), 1), "phase": PHASES[int(self.phase[i])], "parts": parts}

    def why(self, part: str, i: int) -> str:
        b = self.band
        if part == IN_DOMAIN:
            return (
                f"95th percentile of the absolute held-out peak errors of the nested folds ({b.in_domain_mib:,.0f} "
                f"MiB over {b.evidence.get(IN_DOMAIN, 0)} peaks)"
            )
        if part == MODEL:
            return (
                f"{self.model_ids[i]} is not a calibration model ({', '.join(b.models)}): {100 * b.model_share:.2f} "
                f"% of the phase's peak (95th percentile of the leave-one-model-out relative errors, "
                f"{b.evidence.get(MODEL, 0)} one-step runs)"
            )
        if part == SIZE:
            return (
                f"parameters outside the calibration models' {b.sizes[0]:,.0f}-{b.sizes[1]:,.0f}: "
                f"{100 * b.model_share:.2f} % of the phase's peak x |ln distance| {self.size_distance[i]:.2f}"
            )
        if part == TOKENS:
            return (
                f"a micro-batch of {self.token_ratio[i]:.2f} x the most tokens measured: {100 * b.token_share:.2f} % "
                f"of the phase's token terms x (1 + ln {self.token_ratio[i]:.2f}) (95th percentile of the held-out "
                f"under-prediction of {b.evidence.get(TOKENS, 0)} token-phase stage peaks)"
            )
        if part == STACK:
            return (
                f"terms the release measured none of (full fine-tuning, a reference, a critic, Ulysses, generation "
                f"outside vLLM, dynamic batches' tokens, another engine's reservation): {100 * STACK_SHARE:g} % of "
                "them, a physical prior for the "
                "allocator's fragmentation and the buffers their physics leaves out (no measurement calibrates it)"
            )
        if part == DEVICE:
            return (
                f"capacity not measured (the release measured {b.capacity_mib:,.0f} MiB): {100 * b.device_share:.2f} "
                f"% of the phase's uncertain terms (calibrated, token and not-measured ones), the share the other "
                "parts left uncovered on "
                f"{b.evidence.get(DEVICE, 0)} documented failures on other devices"
                + ("" if b.device_share > 0 else " (none: the other parts reach the capacity on every one)")
            )
        return (
            f"more than one training step (or none stated): every calibration run is one step long; the release's "
            f"multi-step runs measured up to {b.horizon_mib:,.0f} MiB above their held-out prediction (95th "
            f"percentile of {b.evidence.get(HORIZON, 0)} runs)"
        )


def per_phase(
    model: PhaseModel, x: PlanInputs, arch: Architecture, model_ids: Sequence[str | None], band: BandModel
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Each part per plan and phase (MiB, plans × :data:`~.phases.PHASES`), the size distance and the token ratio
    per plan, and per part the plans it applies to."""
    n = x.rows
    peaks = model.peaks
    known = np.array([m in band.models for m in model_ids], dtype=bool).reshape(n)
    low, high = band.sizes
    with np.errstate(divide="ignore", invalid="ignore"):
        size = np.where(arch.p < low, np.log(low / arch.p), np.where(arch.p > high, np.log(arch.p / high), 0.0))
    size = np.nan_to_num(size)
    one_step = x.valid["total_training_steps"] & (x["total_training_steps"] == 1)
    device = x["device_capacity_mib"] != band.capacity_mib
    _, _, tok_actor, tok_score = tokens_of(x, arch)
    ratio = np.zeros(n)
    parts: dict[str, np.ndarray] = {p: np.zeros((n, len(PHASES))) for p in PARTS}
    parts[IN_DOMAIN][:] = band.in_domain_mib
    parts[HORIZON][:] = np.where(one_step, 0.0, band.horizon_mib)[:, None]
    parts[MODEL][:] = np.where(known, 0.0, band.model_share)[:, None] * peaks
    parts[SIZE][:] = (band.model_share * size)[:, None] * peaks
    parts[DEVICE][:] = np.where(device, band.device_share, 0.0)[:, None] * model.uncertain()
    dynamic = x.knob("dynamic_batch") > 0
    stack = model.uncertain(stack_only=True)
    # SGLang's mem_fraction_static holds weights and KV cache; its CUDA graphs and activations sit beside it
    other = (x.knob("other_engine") > 0) & (x.knob("unpaged_generation") == 0)
    for k, phase in enumerate(PHASES):
        engine = [t.mib for t in model.terms[phase] if t.name in ("vllm_reservation", "vllm_between_generations")]
        stack[:, k] += np.where(other, np.sum(engine or [np.zeros(n)], axis=0), 0.0)
    for phase, tokens in (("actor_update", tok_actor), ("reference_logprob", tok_score)):
        limit = band.tokens_max.get(phase, np.inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            over = np.nan_to_num(tokens / limit) if np.isfinite(limit) and limit > 0 else np.zeros(n)
        names = (*TOKEN_TERMS[phase], TOKEN_CALIBRATION[phase])
        token_mib = np.sum([t.mib for t in model.terms[phase] if t.name in names], axis=0)
        grow = np.where(over > 1, 1.0 + np.log(np.maximum(over, 1.0)), 0.0)
        parts[TOKENS][:, PHASES.index(phase)] = band.token_share * np.maximum(token_mib, 0.0) * grow
        ratio = np.maximum(ratio, np.where(over > 1, over, 0.0))
        stack[:, PHASES.index(phase)] += np.where(dynamic, np.maximum(token_mib, 0.0), 0.0)
    parts[STACK][:] = STACK_SHARE * stack
    applies = {
        IN_DOMAIN: np.ones(n, dtype=bool),
        MODEL: ~known,
        SIZE: size > 0,
        TOKENS: ratio > 1,
        DEVICE: device,
        HORIZON: ~one_step,
        STACK: stack.max(axis=1) > 0,
    }
    return parts, size, ratio, applies


def plan_band(
    model: PhaseModel, x: PlanInputs, arch: Architecture, model_ids: Sequence[str | None], band: BandModel
) -> PlanBand:
    """The band of every plan of ``model`` (its phases on ``x`` / ``arch``; ``model_ids`` per plan)."""
    parts, size, ratio, applies = per_phase(model, x, arch, model_ids, band)
    peaks = model.peaks
    reach = peaks + np.sum([parts[p] for p in PARTS], axis=0)
    phase = np.argmax(np.nan_to_num(reach, nan=-np.inf), axis=1)
    rows = np.arange(x.rows)
    mib = np.maximum(reach[rows, phase] - np.max(peaks, axis=1), band.in_domain_mib)
    chosen = {p: parts[p][rows, phase] for p in PARTS}
    width = np.nan_to_num(mib, nan=band.in_domain_mib)
    return PlanBand(width, chosen, applies, phase, size, ratio, list(model_ids), band)


def device_share_needed(
    model: PhaseModel, x: PlanInputs, arch: Architecture, model_ids: Sequence[str | None], band: BandModel
) -> np.ndarray:
    """Per failed plan on another device: the smallest share of a phase's uncertain terms that, added to the other
    parts, makes some phase reach the capacity (0 where they already do)."""
    parts, _, _, _ = per_phase(model, x, arch, model_ids, band)
    peaks = model.peaks
    reach = peaks + np.sum([parts[p] for p in PARTS if p != DEVICE], axis=0)
    base = model.uncertain()
    with np.errstate(divide="ignore", invalid="ignore"):
        needed = np.where(base > 0, (x["device_capacity_mib"][:, None] - reach) / base, np.inf)
    return np.maximum(np.min(needed, axis=1), 0.0)  # type: ignore[no-any-return]


def near_limit(peak: np.ndarray, band: np.ndarray, margin: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Plans whose band reaches the margin or the capacity from either side."""
    finite = np.isfinite(peak)
    return finite & ((np.abs(peak - margin) <= band) | (np.abs(peak - capacity) <= band))  # type: ignore[no-any-return]
