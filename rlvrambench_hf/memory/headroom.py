"""What still fits: per phase the headroom to the margin, and the largest vLLM utilization, actor micro-batch and
log-prob micro-batch with which every phase stays within the margin (the other settings unchanged; one plan at a
time).

vLLM's reservation is linear in the utilization, and the token phases' activations and logits are linear in the
sequences of a micro-batch, so the limits are solved exactly from the phases' terms.
"""

from __future__ import annotations

import math
from typing import Any

from .phases import PHASES, PhaseModel

UTILIZATION_TERMS = ("vllm_reservation", "vllm_between_generations")
MICRO_BATCH_TERMS = ("activations", "update_logits", "calibrated_update_tokens")
LOGPROB_TERMS = ("logprob_logits", "calibrated_logprob_tokens")


def headroom(
    model: PhaseModel,
    i: int,
    margin: float,
    utilization: float,
    micro: float,
    per_gpu: float,
    logprob_micro: float | None = None,
) -> dict[str, Any]:
    """Headroom per phase (MiB, negative above the margin), the largest utilization (two decimals), the largest
    actor micro-batch and, given ``logprob_micro``, the largest log-prob micro-batch and the largest one value for
    every micro-batch (divisors of the sequences per GPU, as VERL requires) that keep every phase within
    ``margin``; None where no value of that setting is enough."""
    fixed_u, slope_u, fixed_m, slope_m, fixed_l, slope_l = {}, {}, {}, {}, {}, {}
    fixed_b: dict[str, float] = {}
    slope_b: dict[str, float] = {}
    present = [p for p in PHASES if any(float(t.mib[i]) for t in model.terms[p])]  # no critic: no critic phase
    for phase in present:
        terms = model.terms[phase]
        total = sum(float(t.mib[i]) for t in terms)
        by_u = sum(float(t.mib[i]) for t in terms if t.name in UTILIZATION_TERMS)
        by_m = sum(float(t.mib[i]) for t in terms if phase == "actor_update" and t.name in MICRO_BATCH_TERMS)
        by_l = sum(float(t.mib[i]) for t in terms if phase == "reference_logprob" and t.name in LOGPROB_TERMS)
        fixed_u[phase], slope_u[phase] = total - by_u, by_u / utilization if utilization > 0 else 0.0
        sequences = min(micro, per_gpu)
        fixed_m[phase], slope_m[phase] = total - by_m, by_m / sequences if sequences > 0 else 0.0
        scored = min(logprob_micro or 0.0, per_gpu)
        fixed_l[phase], slope_l[phase] = total - by_l, by_l / scored if scored > 0 else 0.0
        fixed_b[phase] = total - by_m - by_l
        slope_b[phase] = slope_m[phase] + slope_l[phase]
    out = {
        "headroom_mib": {p: round(margin - fixed_u[p] - slope_u[p] * utilization, 1) for p in present},
        "largest_vllm_gpu_memory_utilization": _largest(fixed_u, slope_u, margin, 0.01, 0.99),
        "largest_actor_micro_batch": _largest_int(fixed_m, slope_m, margin, per_gpu),
    }
    if logprob_micro is not None:
        out["largest_logprob_micro_batch"] = _largest_int(fixed_l, slope_l, margin, per_gpu)
        out["largest_common_micro_batch"] = _largest_int(fixed_b, slope_b, margin, per_gpu)
    return out


def _limit(fixed: dict[str, Any], slope: dict[str, Any], margin: float) -> float | None:
    if any(fixed[p] > margin for p in fixed):
        return None
    limits = [(margin - fixed[p]) / slope[p] for p in fixed if slope[p] > 0]
    return min(limits) if limits else math.inf


def _largest(fixed: dict[str, Any], slope: dict[str, Any], margin: float, step: float, cap: float) -> float | None:
    limit = _limit(fixed, slope, margin)
    if limit is None or limit < step:
        return None
    if math.isinf(limit):  # nothing grows with it (vLLM on other GPUs, or none): any value fits
        return cap
    return round(min(cap, math.floor(limit / step) * step), 2)


def _largest_int(fixed: dict[str, Any], slope: dict[str, Any], margin: float, cap: float) -> int | None:
    limit = _limit(fixed, slope, margin)
    if limit is None or limit < 1:
        return None
    top = int(min(cap, math.floor(limit)))
    whole = int(cap)
    # VERL checks that the micro-batch divides the sequences each GPU trains on
    return max((d for d in range(1, top + 1) if whole % d == 0), default=None) if whole == cap else top
