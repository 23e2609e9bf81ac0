"""Fitting the calibrated terms of :mod:`.calibrate` on the training configurations and their stage measurements
(inside each fold): the runtime term, the weight-sync extra, then the token scales, which need the phases' own
token terms (:mod:`.phases`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import quote
from .calibrate import FINAL_FORM, FORMS, MIB, Calibration, rows_inputs
from .phases import SYNC_EXTRA, TOKEN_CALIBRATION, TOKEN_TERMS, phases

#: A stage measurement's rows used for the token scales: completed runs only.
COMPLETED = "completed_run"


def fit(
    training: Sequence[Mapping[str, Any]],
    stages: Sequence[Mapping[str, Any]],
    metadata: Mapping[str, Mapping[str, Any]],
    form: str = FINAL_FORM,
) -> Calibration:
    """Fit the calibrated terms on ``training`` (configurations with ``completed`` and
    ``max_completed_run_peak_mib``) and the ``stages`` rows of those configurations only."""
    if form not in FORMS:
        raise ValueError(f"unknown form {quote(form)}")
    done = [r for r in training if r.get("completed") and not r["parameter_offload"]]
    x, arch = rows_inputs(done, metadata)
    resident = 4.0 * (arch.p + arch.adapter(x.knob("lora_rank"))) / x["gpu_count"] / MIB
    residual = (
        np.array([r["max_completed_run_peak_mib"] for r in done])
        - x["vllm_gpu_memory_utilization"] * x["device_capacity_mib"]
        - resident
    )
    scale = arch.hidden * (arch.layers + 1) if form == "hidden_layers" else np.ones(len(done))
    per_workload = {
        w: float(np.median((residual / scale)[np.array([r["workload_id"] == w for r in done])]))
        for w in sorted({r["workload_id"] for r in done})
    }
    partial = Calibration(form, per_workload, 0.0)
    sync, used = sync_extra_of(training, stages, metadata, partial)
    partial = Calibration(form, per_workload, sync)
    scales, counts = token_scales(training, stages, metadata, partial)
    evidence = {"configurations": len(done), "stage_rows": used, **{f"{p}_rows": n for p, n in counts.items()}}
    return Calibration(form, per_workload, sync, evidence, scales)


def token_scales(
    training: Sequence[Mapping[str, Any]],
    stages: Sequence[Mapping[str, Any]],
    metadata: Mapping[str, Mapping[str, Any]],
    partial: Calibration,
) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
    """Per token phase and workload, the median of (stage peak − the phase's other terms) / (its token terms)."""
    configs = {r["configuration_id"]: r for r in training}
    scales: dict[str, dict[str, float]] = {}
    counts: dict[str, int] = {}
    for phase, names in TOKEN_TERMS.items():
        rows = [
            s for s in stages if s["configuration_id"] in configs and s["stage"] == phase and s["coverage"] == COMPLETED
        ]
        counts[phase] = len(rows)
        if not rows:
            continue
        chosen = [configs[s["configuration_id"]] for s in rows]
        x, arch = rows_inputs(chosen, metadata)
        terms = {t.name: t.mib for t in phases(x, arch, partial).terms[phase] if t.name != TOKEN_CALIBRATION[phase]}
        tokens = sum(terms[n] for n in names)
        others = sum(v for n, v in terms.items() if n not in names)
        ratio = (np.array([s["observed_peak_mib"] for s in rows]) - others) / tokens
        workloads = np.array([c["workload_id"] for c in chosen])
        scales[phase] = {str(w): float(np.median(ratio[workloads == w])) for w in sorted(set(workloads))}
    return scales, counts


def sync_extra_of(
    training: Sequence[Mapping[str, Any]],
    stages: Sequence[Mapping[str, Any]],
    metadata: Mapping[str, Mapping[str, Any]],
    partial: Calibration,
) -> tuple[float, int]:
    """The median of (weight-sync stage peak − the weight-sync phase's other terms) over the completed weight-sync
    stage measurements of the training configurations with parameter offload, and how many there were."""
    offloaded = {r["configuration_id"]: r for r in training if r["parameter_offload"]}
    rows = [
        s
        for s in stages
        if s["configuration_id"] in offloaded and s["stage"] == "weight_sync" and s["coverage"] == COMPLETED
    ]
    if not rows:
        return 0.0, 0
    x, arch = rows_inputs([offloaded[s["configuration_id"]] for s in rows], metadata)
    terms = phases(x, arch, partial).terms["weight_sync"]
    physical = np.sum([t.mib for t in terms if t.name != SYNC_EXTRA], axis=0)
    observed = np.array([s["observed_peak_mib"] for s in rows], dtype=np.float64)
    return float(np.median(observed - physical)), len(rows)
