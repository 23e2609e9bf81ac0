"""The per-phase model's error band at one plan, with its parts (:mod:`rlvrambench_hf.memory.extrapolation`) and,
near the limit, the change that buys it back; and for a plan the model does not cover, the modelled part's lower
bound with the terms it leaves out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...memory.headroom import headroom
from ..answer import Band, BandPart, NotModelled
from .changes import in_user_keys
from .verdict import OTHER_STACK, Assessment

#: What a run the model does not cover holds beyond the modelled part, by reason.
MISSING_TERMS: dict[str, str] = {
    OTHER_STACK: "the terms of the other algorithm or adaptation (whatever it keeps beyond the policy, its "
    "reference and a critic)",
}
MICRO_BATCHES = ("actor_micro_batch", "rollout_logprob_micro_batch", "ref_logprob_micro_batch")


def band_of(a: Assessment, i: int, settings: Mapping[str, Any]) -> Band:
    """Plan ``i``'s band: total, phase and parts; near the limit, what buys it back."""
    entry = a.band.entry(i)
    parts = tuple(BandPart(p["part"], p["mib"], p["why"]) for p in entry["parts"])
    buy = buy_back(a, i, float(entry["mib"]), settings) if a.near_limit[i] else None
    return Band(entry["mib"], entry["phase"], parts, buy)


def buy_back(a: Assessment, i: int, band: float, settings: Mapping[str, Any]) -> tuple[str, ...]:
    """The overrides, in the user's keys, of the first change that keeps the peak and its band within the margin:
    a lower vLLM utilization, else a smaller actor micro-batch, else smaller log-prob micro-batches, else every
    micro-batch to one value (empty: none of them does)."""
    s = a.settings
    u, micro = float(s["vllm_gpu_memory_utilization"][i]), float(s["actor_micro_batch"][i])
    logprob = float(max(s["rollout_logprob_micro_batch"][i], s["ref_logprob_micro_batch"][i]))
    per_gpu = float(s["train_batch_size"][i] * s["rollout_n"][i] / max(s["gpu_count"][i], 1.0))
    room = headroom(a.model, i, float(s["margin_limit_mib"][i]) - band, u, micro, per_gpu, logprob)
    plain = dict(settings)
    for key, names, now in (
        ("largest_vllm_gpu_memory_utilization", ("vllm_gpu_memory_utilization",), u),
        ("largest_actor_micro_batch", ("actor_micro_batch",), micro),
        ("largest_logprob_micro_batch", MICRO_BATCHES[1:], logprob),
        ("largest_common_micro_batch", MICRO_BATCHES, max(micro, logprob)),
    ):
        value = room[key]
        if value is not None and value < now:
            written: list[str] = []
            for name in names:
                keys = in_user_keys(name, value, plain)  # the setting's own key first (a row may write more)
                written += (keys["verl_overrides"] or keys["trl_arguments"] or [f"{name}={value}"])[:1]
            return tuple(dict.fromkeys(written))
    return ()


def not_modelled_of(a: Assessment, i: int, reasons: tuple[str, ...]) -> NotModelled:
    """A plan the model does not cover: the reasons and, where the run carries at least the modelled GRPO+LoRA
    part, that part's peak as a lower bound with the terms it leaves out."""
    missing = tuple(MISSING_TERMS[r] for r in reasons if r in MISSING_TERMS)
    bound = float(a.model.peak[i]) if len(missing) == len(reasons) and a.model.known[i] else np.nan
    if np.isnan(bound):
        return NotModelled(reasons)
    return NotModelled(reasons, round(bound, 1), missing)
