"""The typed parts of one plan's answer, read from the vectorised assessment (:class:`~.verdict.Assessment`) and
the release's context: its verdict (without its sentence, which the output room words), floors with their
arithmetic, measured and near records, the per-phase peaks with what still fits, the references' predictions,
the donor, the start-up check, the nearest measured configurations and the distance to them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...estimation.references import METHODS
from ...memory.headroom import headroom
from ...memory.phases import PHASES
from ..answer import (
    Distance,
    Donor,
    Fits,
    FloorResult,
    MeasuredMatch,
    MeasuredRef,
    NearestMeasured,
    NearMatch,
    PhasePeak,
    PhasePeaks,
    PhaseTerm,
    Prediction,
    StartupCheck,
    UserKeys,
    Verdict,
)
from ..answer.evidence import CARRIED
from ..plan.hardware import BENCHMARK_HARDWARE, Hardware
from . import bands
from .changes import in_user_keys
from .context import Context
from .floors import arithmetic
from .lookup import matched_records, near_matches
from .scope import Flag
from .trust import Cloud
from .verdict import BASES, STATES, Assessment


def verdict_of(a: Assessment, i: int, why_unknown: str) -> Verdict:
    """Plan ``i``'s verdict, its sentence left to the wording: withheld with the reasons the model does not cover
    the plan, "at least" a label when the plan carries more than the modelled run, the per-phase model's label,
    else the measurement, the floor, or nothing known (``why_unknown``)."""
    state = int(a.state[i])
    basis = BASES[int(a.basis[i])]
    name = STATES[state] if state >= 0 else None
    reasons = tuple(a.not_modelled_reasons(i))
    if reasons:
        return Verdict(name, basis if state >= 0 else None, False, "", not_modelled=reasons)
    if basis == "predicted" and a.model_state[i] >= 0:
        return Verdict(name, basis, bool(a.near_limit[i]), "", by_model=True)
    if basis == "predicted":
        return Verdict(None, basis, False, "", why_unknown=why_unknown)
    return Verdict(name, basis, False, "")


def floors_of(
    a: Assessment, i: int, settings: Mapping[str, Any], metadata: Mapping[str, Any] | None
) -> tuple[FloorResult, ...]:
    out = []
    for entry in a.floors.entries(i):
        text = arithmetic(entry, dict(settings), dict(metadata) if metadata is not None else None)
        out.append(
            FloorResult(entry["check"], entry["required"], entry["available"], entry["unit"], entry["holds"], text)
        )
    return tuple(out)


def measured_of(a: Assessment, context: Context, i: int) -> tuple[MeasuredMatch, ...] | None:
    """The records plan ``i`` matches; on another device than the release's, the release's records of its settings
    with how they carry to it (when they decide its verdict)."""
    if a.matches.count[i]:
        return tuple(MeasuredMatch.of(r) for r in matched_records(context.records, a.codes, i))
    if not (a.carried.found[i] and a.basis[i] == 0):
        return None
    s = a.settings
    u, to = float(s["vllm_gpu_memory_utilization"][i]), int(s["device_capacity_mib"][i])
    release, peak = BENCHMARK_HARDWARE.device_capacity_mib, float(a.carried.peak[i])
    out = []
    for r in matched_records(context.records, a.carried.codes, i):
        if np.isfinite(peak) and r["max_completed_peak_mib"] is not None:
            how = (
                f"{CARRIED} {release:,} MiB device and carried to {to:,} MiB by vLLM's reservation, "
                f"the one term that depends on the capacity: {r['max_completed_peak_mib']:,.0f} + {u:g} x "
                f"({to:,} - {release:,}) = {r['max_completed_peak_mib'] + u * (to - release):,.0f} MiB"
            )
            r = {**r, "match": how, "carried_peak_mib": round(r["max_completed_peak_mib"] + u * (to - release), 1)}
        else:
            how = (
                f"{CARRIED} {release:,} MiB device, where it ran out of memory, and carried to "
                f"{to:,} MiB: the capacity shrinks by {release - to:,} MiB and vLLM's reservation only by {u:g} x "
                "that, so it runs out there too"
            )
            r = {**r, "match": how}
        out.append(MeasuredMatch.of(r))
    return tuple(out)


def agree_of(a: Assessment, i: int) -> bool | None:
    """Whether the matched records' repeated labels agree (None: no resolved record)."""
    m = a.matches
    if not m.resolved[i]:
        return None
    return bool(m.worst[i] == m.best[i])


def near_of(a: Assessment, context: Context, i: int) -> tuple[NearMatch, ...]:
    return tuple(
        NearMatch(MeasuredRef.of(n), n["setting"], n["plan"], n["measured"])
        for n in near_matches(context.records, a.codes, i, a.table)
    )


def memory_of(a: Assessment, context: Context, i: int, hardware: Hardware, settings: Mapping[str, Any]) -> PhasePeaks:
    """The per-phase model at plan ``i``: every phase with its terms, the binding phase, the peak with its band and
    what fits; for a plan the model does not cover, no peaks (the modelled part's lower bound, where it is one)."""
    band = float(a.band.mib[i])
    reasons = tuple(a.not_modelled_reasons(i))
    if reasons:
        return PhasePeaks(hardware, (), None, None, band, not_modelled=bands.not_modelled_of(a, i, reasons))
    if not a.model.known[i]:
        return PhasePeaks(hardware, (), None, None, band)
    phases = tuple(
        PhasePeak(p["phase"], p["peak_mib"], tuple(PhaseTerm(t["term"], t["mib"], t["arithmetic"]) for t in p["terms"]))
        for p in a.model.explain(i)
    )
    binding = PHASES[int(a.model.binding[i])]
    fits = _fits(a, i, settings)
    return PhasePeaks(hardware, phases, binding, float(a.model.peak[i]), band, fits, bands.band_of(a, i, settings))


def _fits(a: Assessment, i: int, settings: Mapping[str, Any]) -> Fits:
    """Headroom per phase and the largest utilization and actor micro-batch that keep every phase within the
    margin, with the keys to paste."""
    s = a.settings
    per_gpu = s["train_batch_size"][i] * s["rollout_n"][i] / max(s["gpu_count"][i], 1.0)
    found = headroom(
        a.model,
        i,
        float(s["margin_limit_mib"][i]),
        float(s["vllm_gpu_memory_utilization"][i]),
        float(s["actor_micro_batch"][i]),
        float(per_gpu),
    )
    u, micro = found["largest_vllm_gpu_memory_utilization"], found["largest_actor_micro_batch"]
    plain = dict(settings)
    return Fits(
        found["headroom_mib"],
        u,
        micro,
        None if u is None else UserKeys.of(in_user_keys("vllm_gpu_memory_utilization", u, plain)),
        None if micro is None else UserKeys.of(in_user_keys("actor_micro_batch", micro, plain)),
    )


def predictions_of(a: Assessment, context: Context, i: int) -> tuple[Prediction, ...] | None:
    p = a.predictions
    if not p.available[i]:
        return None
    pool = context.fitted.training.rows
    out = []
    for method in METHODS:
        state, peak = int(p.state[method][i]), float(p.peak[method][i])
        donor = pool[int(p.donor[i])]["configuration_id"] if p.donor[i] >= 0 else None
        out.append(
            Prediction(
                method,
                STATES[state] if state >= 0 else None,
                None if np.isnan(peak) else peak,
                context.track_record.get(method),
                STATES[int(p.peak_only[i])] if method == "component_regression" else None,
                bool(p.peak_only[i] != p.state[method][i]) if method == "component_regression" else None,
                donor if method == "donor_copy" else None,
            )
        )
    return tuple(out)


def why_unavailable(a: Assessment, flags: Sequence[Flag], i: int) -> str:
    """Why plan ``i`` has no prediction: no model metadata, settings not given, or no defined features."""
    s = a.settings
    if not s.has_metadata[i]:
        for flag in flags:
            if flag.code == "no_metadata" and flag.mask[i]:
                return flag.sentence(i)
    missing = [n for n, v in s.valid.items() if not v[i] and n != "margin_limit_mib"]
    if missing:
        return "settings not given: " + ", ".join(missing)
    return "the settings give no defined features (zero GPUs, a utilization outside (0, 1), or an uneven batch)"


def startup_of(a: Assessment, i: int) -> StartupCheck | None:
    p = a.predictions
    if not p.available[i]:
        return None
    if not p.startup_applies[i]:
        return StartupCheck(False)
    return StartupCheck(True, float(p.startup_mib[i]), bool(p.startup_fails[i]))


def donor_of(a: Assessment, context: Context, i: int) -> Donor | None:
    p = a.predictions
    if p.donor[i] < 0:
        return None
    row = context.fitted.training.rows[int(p.donor[i])]
    return Donor(
        row["configuration_id"],
        row["model_id"],
        row["workload_id"],
        row["configuration_level"],
        row["gpu_count"],
        row["observed_state"],
        row["max_completed_run_peak_mib"],
        row["eligible_processes"],
        bool(p.donor_gpu_matches[i]),
    )


def nearest_of(a: Assessment, context: Context, i: int, k: int) -> tuple[NearestMeasured, ...]:
    p = a.predictions
    if not p.available[i] or not k:
        return ()
    return tuple(
        NearestMeasured(MeasuredRef.of(context.describe_record(record)), distance)
        for record, distance in context.cloud.nearest_records(p.features[i], k)
    )


def distance_of(distance: float, cloud: Cloud) -> Distance | None:
    if np.isnan(distance):
        return None
    return Distance(float(distance), cloud.summary()["nearest_neighbour_median"], cloud.limit)
