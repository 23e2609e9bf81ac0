"""The per-phase memory model's part of an answer (pure over :class:`~..assess.verdict.Answers`): what the model
rests on, each plan's phases with their terms, its peak and error band with the band's parts, the headroom that
still fits, the verdict sentence of a predicted label (near the limit: both figures and the change that buys the
band back) and, for a plan the model does not cover, no per-phase peaks: the modelled part's lower bound with the
terms it leaves out, or nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...memory.phases import PHASES
from ..assess.verdict import FULL_FINE_TUNING, OTHER_STACK, STATES, Answers

PHASE_NAMES = PHASES
MICRO_BATCHES = ("actor_micro_batch", "rollout_logprob_micro_batch", "ref_logprob_micro_batch")


def memory_model_summary(answers: Answers) -> dict[str, Any]:
    """What the per-phase model rests on: its in-domain band, nested held-out record, chosen form and the figures
    every plan's band is grown from."""
    memory = answers.context.memory
    return {
        "band_mib": memory.band_mib,
        "held_out_record": memory.fold_summary(answers.context.inputs.pool.rows),
        "form": memory.calibration.form.name,
        "band_figures": memory.band.describe(),
    }


def memory_block(answers: Answers, i: int) -> dict[str, Any]:
    """The per-phase model's part of an answer: phases with their terms, the binding phase, peak and its band with
    the band's parts; for a plan the model does not cover, no peaks: the modelled part's lower bound with the
    terms it leaves out, or nothing."""
    a = answers.assessment
    reasons = a.not_modelled_reasons(i)
    if reasons or not a.model.known[i]:
        out: dict[str, Any] = {"phases": [], "binding_phase": None, "predicted_peak_mib": None, "band_mib": None}
        if reasons:
            out["not_modelled"] = not_modelled_block(answers, i, reasons)
        return out
    band = a.band.entry(i)
    return {
        "phases": a.model.explain(i),
        "binding_phase": PHASE_NAMES[int(a.model.binding[i])],
        "predicted_peak_mib": round(float(a.model.peak[i]), 1),
        "band_mib": band["mib"],
        "band": band,
        "fits": _fits(answers, i),
    }


#: What a run the model does not cover holds beyond the modelled GRPO+LoRA part, by reason.
MISSING_TERMS = {
    FULL_FINE_TUNING: "gradients and Adam's two moments of every parameter (not of a LoRA adapter's), and a weight "
    "sync of full parameters that changed",
    OTHER_STACK: "the terms of the other algorithm or adaptation (a critic and its optimizer, a separate reference "
    "model, full-parameter gradients)",
}


def not_modelled_block(answers: Answers, i: int, reasons: list[str]) -> dict[str, Any]:
    """A plan the model does not cover: the reasons; where the run carries at least the modelled GRPO+LoRA part,
    that part's peak as a lower bound with the terms it leaves out (no per-phase peaks, no fits reading)."""
    a = answers.assessment
    missing = [MISSING_TERMS[r] for r in reasons if r in MISSING_TERMS]
    bound = a.model.peak[i] if len(missing) == len(reasons) and a.model.known[i] else np.nan
    return {
        "reasons": reasons,
        "modelled_part_lower_bound_mib": None if np.isnan(bound) else round(float(bound), 1),
        "missing_terms": missing if not np.isnan(bound) else None,
    }


def _fits(answers: Answers, i: int) -> dict[str, Any]:
    """Headroom per phase and the largest utilization and actor micro-batch that keep every phase within the
    margin, with the keys to paste."""
    from ...memory.headroom import headroom
    from ..assess.changes import in_user_keys

    s = answers.assessment.settings
    settings = answers.assessment.table.slice(i, 1).to_pylist()[0]
    per_gpu = s["train_batch_size"][i] * s["rollout_n"][i] / max(s["gpu_count"][i], 1.0)
    out = headroom(
        answers.assessment.model,
        i,
        float(s["margin_limit_mib"][i]),
        float(s["vllm_gpu_memory_utilization"][i]),
        float(s["actor_micro_batch"][i]),
        float(per_gpu),
    )
    for key, setting in (
        ("largest_vllm_gpu_memory_utilization", "vllm_gpu_memory_utilization"),
        ("largest_actor_micro_batch", "actor_micro_batch"),
    ):
        if out[key] is not None:
            out[key.replace("largest_", "keys_for_largest_")] = in_user_keys(setting, out[key], settings)
    return out


def predicted_sentence(answers: Answers, i: int) -> str:
    """The model's verdict in words: the peak and its band (with the parts beyond the in-domain band) against the
    margin and capacity; near the limit, both figures and the change that buys the band back."""
    a, device = answers.assessment, answers.hardware
    name = STATES[int(a.state[i])]
    peak, band = float(a.model.peak[i]), a.band.entry(i)
    grown = [f"{p['part']} {p['mib']:,.0f}" for p in band["parts"] if p["part"] != "in_domain"]
    parts = f"; {', '.join(grown)} MiB beyond the in-domain band" if grown else ""
    phase = PHASE_NAMES[int(a.model.binding[i])]
    margin, capacity = device.margin_limit_mib, device.device_capacity_mib
    sentence = (
        f"predicted {name}: peak {peak:,.0f} MiB in {phase} (band +/- {band['mib']:,.0f} MiB{parts}) against the "
        f"margin {margin:,} MiB and the capacity {capacity:,} MiB"
    )
    if a.near_limit[i]:
        low, high = peak - band["mib"], peak + band["mib"]
        spanned = [f"the {n} {v:,} MiB" for n, v in (("margin", margin), ("capacity", capacity)) if low <= v <= high]
        sentence += (
            f"; near the limit: {peak:,.0f} +/- {band['mib']:,.0f} = {low:,.0f}-{high:,.0f} MiB spans "
            f"{' and '.join(spanned)}; {buy_back(answers, i, band['mib'])}"
        )
    if not device.measured:
        sentence += "; extrapolating: physical terms at this capacity, runtime term calibrated on 40 GB A100s"
    return sentence


def buy_back(answers: Answers, i: int, band: float) -> str:
    """The change (vLLM utilization, else the actor micro-batch, else the log-prob micro-batches, else every
    micro-batch to one value) that keeps the peak and its band within the margin, in the user's keys; or that no
    such change exists."""
    from ...memory.headroom import headroom
    from ..assess.changes import in_user_keys

    s = answers.assessment.settings
    settings = answers.assessment.table.slice(i, 1).to_pylist()[0]
    u, micro = float(s["vllm_gpu_memory_utilization"][i]), float(s["actor_micro_batch"][i])
    logprob = float(max(s["rollout_logprob_micro_batch"][i], s["ref_logprob_micro_batch"][i]))
    per_gpu = s["train_batch_size"][i] * s["rollout_n"][i] / max(s["gpu_count"][i], 1.0)
    margin = float(s["margin_limit_mib"][i]) - band
    room = headroom(answers.assessment.model, i, margin, u, micro, float(per_gpu), logprob)
    for key, names, now in (
        ("largest_vllm_gpu_memory_utilization", ("vllm_gpu_memory_utilization",), u),
        ("largest_actor_micro_batch", ("actor_micro_batch",), micro),
        ("largest_logprob_micro_batch", ("rollout_logprob_micro_batch", "ref_logprob_micro_batch"), logprob),
        ("largest_common_micro_batch", (*MICRO_BATCHES,), max(micro, logprob)),
    ):
        value = room[key]
        if value is not None and value < now:
            written = []
            for name in names:
                keys = in_user_keys(name, value, settings)  # the setting's own key (a row may write more)
                written += (keys["verl_overrides"] or keys["trl_arguments"] or [f"{name}={value}"])[:1]
            return f"to buy the band back: {' '.join(dict.fromkeys(written))}"
    return (
        "no single change of vllm_gpu_memory_utilization or a micro-batch buys the band back (more GPUs, offload or "
        "a shorter response may)"
    )
