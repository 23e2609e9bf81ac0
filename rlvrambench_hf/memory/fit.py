"""Fitting the calibrated terms of :mod:`.calibrate` on training configurations and their stage measurements.

:class:`Measured` holds configurations (settings joined to outcomes) and their completed stage measurements as
arrays, built once; :func:`fit_on` calibrates one :class:`~.forms.Form` on the rows a mask selects (the runtime
term and its per-sequence slope, the weight-sync extra, then the token shares, which need the phases' own token terms),
so that every form on every subset of the training families costs array arithmetic alone. :func:`fit` is the same
on a list of training rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .architecture import Architecture
from .calibrate import MIB, Calibration, concurrent_sequences, rows_inputs, statistic
from .forms import DESIGN_NOTE_FORM, TOKEN_SHARE_LIMITS, Form
from .inputs import PlanInputs
from .phases import SYNC_EXTRA, TOKEN_CALIBRATION, TOKEN_TERMS, phases

#: A stage measurement's rows used for calibration: completed runs only.
COMPLETED = "completed_run"
STAGES: tuple[str, ...] = ("initializing", "rollout", "reference_logprob", "actor_update", "weight_sync")


@dataclass(frozen=True)
class Measured:
    """Configurations and their completed stage measurements as arrays: ``peak`` (the largest completed run's, NaN
    without one), ``completed`` (every eligible run completed), ``offload`` (parameters offloaded), the model id and
    coarse family per row, per stage the row index and observed peak of each stage measurement, and per row the
    observed label and the margin."""

    rows: tuple[Mapping[str, Any], ...]
    x: PlanInputs
    arch: Architecture
    peak: np.ndarray
    completed: np.ndarray
    offload: np.ndarray
    model: np.ndarray
    family: np.ndarray
    stages: Mapping[str, tuple[np.ndarray, np.ndarray]]
    observed: np.ndarray
    margin: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)

    def resident(self, index: np.ndarray) -> np.ndarray:
        """The resident actor's shards (MiB) of the rows at ``index``, offloaded or not."""
        x, arch = self.x.take(index), self.arch.take(index)
        g = np.where(x["gpu_count"] > 0, x["gpu_count"], 1.0)
        return x.actor_bytes * (arch.p + arch.adapter(x.knob("lora_rank"))) / g / MIB  # type: ignore[no-any-return]

    def outside_vllm(self, index: np.ndarray, peaks: np.ndarray) -> np.ndarray:
        """``peak − u·C − resident actor`` of the rows at ``index`` (MiB)."""
        x = self.x.take(index)
        return peaks - x["vllm_gpu_memory_utilization"] * x["device_capacity_mib"] - self.resident(index)  # type: ignore[no-any-return]


def measured(
    rows: Sequence[Mapping[str, Any]], stages: Sequence[Mapping[str, Any]], metadata: Mapping[str, Mapping[str, Any]]
) -> Measured:
    """The arrays of ``rows`` (configurations with outcomes: ``max_completed_run_peak_mib``, optionally
    ``completed`` and ``model_family_coarse``) and of their completed ``stages`` rows."""
    x, arch = rows_inputs(rows, metadata)
    peak = np.array([np.nan if r.get("max_completed_run_peak_mib") is None else float(r["max_completed_run_peak_mib"])
                     for r in rows])  # fmt: skip
    completed = np.array([bool(r.get("completed", r.get("max_completed_run_peak_mib") is not None)) for r in rows])
    offload = np.array([bool(r.get("parameter_offload")) for r in rows])
    position = {r["configuration_id"]: i for i, r in enumerate(rows)}
    found: dict[str, tuple[list[int], list[float]]] = {s: ([], []) for s in STAGES}
    for s in stages:
        i = position.get(s["configuration_id"])
        if i is not None and s["coverage"] == COMPLETED and s["stage"] in found and s["observed_peak_mib"] is not None:
            found[s["stage"]][0].append(i)
            found[s["stage"]][1].append(float(s["observed_peak_mib"]))
    return Measured(
        tuple(rows),
        x,
        arch,
        peak,
        completed.reshape(len(rows)),
        offload.reshape(len(rows)),
        np.array([str(r.get("model_id")) for r in rows], dtype=object),
        np.array([str(r.get("model_family_coarse")) for r in rows], dtype=object),
        {s: (np.array(i, dtype=np.int64), np.array(p, dtype=np.float64)) for s, (i, p) in found.items()},
        np.array([str(r.get("observed_state")) for r in rows], dtype=object),
        np.array([float(r.get("margin_limit_mib") or 0.95 * c) for r, c in zip(rows, x["device_capacity_mib"])]),
    )


def fit(
    training: Sequence[Mapping[str, Any]],
    stages: Sequence[Mapping[str, Any]],
    metadata: Mapping[str, Mapping[str, Any]],
    form: Form = DESIGN_NOTE_FORM,
) -> Calibration:
    """Fit ``form`` on ``training`` (configurations with ``completed`` and ``max_completed_run_peak_mib``) and the
    ``stages`` rows of those configurations only."""
    data = measured(training, stages, metadata)
    return fit_on(data, np.ones(len(data), dtype=bool), form)


def fit_on(data: Measured, train: np.ndarray, form: Form) -> Calibration:
    """Fit ``form`` on the rows of ``data`` that ``train`` selects and on their stage measurements only."""
    done = np.flatnonzero(train & data.completed & ~data.offload & np.isfinite(data.peak))
    x, arch = data.x.take(done), data.arch.take(done)
    residual = data.outside_vllm(done, data.peak[done])
    slope, init_rows = _sequence_slope(data, train, form) if form.runtime == "sequences" else (0.0, 0)
    residual = residual - slope * concurrent_sequences(x)
    scale = arch.hidden * (arch.layers + 1) if form.runtime == "hidden_layers" else np.ones(len(done))
    bounds = (float(scale.min()), float(scale.max())) if form.runtime == "hidden_layers" else (0.0, float("inf"))
    names = np.array([x.workloads[w] for w in x.workload], dtype=object)
    per_workload = {str(w): statistic((residual / scale)[names == w], form.statistic) for w in sorted(set(names))}
    models = tuple(sorted({str(m) for m in data.model[done]}))
    partial = Calibration(form, per_workload, 0.0, mib_per_sequence=slope, scale_bounds=bounds, models=models)
    sync, used = _sync_extra(data, train, partial)
    partial = replace(partial, sync_extra=sync)
    shares, raw, counts = _token_shares(data, train, partial)
    evidence = {
        "configurations": len(done),
        "stage_rows": used,
        "initializing_rows": init_rows,
        **{f"{p}_rows": n for p, n in counts.items()},
    }
    return replace(partial, evidence=evidence, token_scale=shares, token_measured=raw)


def _stage_rows(data: Measured, train: np.ndarray, stage: str, offloaded: bool | None) -> tuple[np.ndarray, np.ndarray]:
    index, peaks = data.stages[stage]
    keep = train[index] if len(index) else np.zeros(0, dtype=bool)
    if offloaded is not None and len(index):
        keep &= data.offload[index] == offloaded
    return index[keep], peaks[keep]


def _sequence_slope(data: Measured, train: np.ndarray, form: Form) -> tuple[float, int]:
    """The form's statistic over the calibration models of each one's slope of start-up memory outside vLLM's
    budget over the sequences vLLM may run at once (MiB per sequence, at least 0), and the stage rows it rests
    on."""
    index, peaks = _stage_rows(data, train, "initializing", offloaded=False)
    if not len(index):
        return 0.0, 0
    outside = data.outside_vllm(index, peaks)
    batch = concurrent_sequences(data.x.take(index))
    slopes = []
    for model in sorted({str(m) for m in data.model[index]}):
        mine = data.model[index] == model
        if len(np.unique(batch[mine])) > 1:
            slopes.append(float(np.polyfit(batch[mine], outside[mine], 1)[0]))
    return (max(0.0, statistic(np.array(slopes), form.statistic)) if slopes else 0.0), len(index)


def _sync_extra(data: Measured, train: np.ndarray, partial: Calibration) -> tuple[float, int]:
    """The statistic of (weight-sync stage peak − the phase's other terms) over the completed weight-sync stage
    measurements of the training configurations with parameter offload, and how many there were."""
    index, peaks = _stage_rows(data, train, "weight_sync", offloaded=True)
    if not len(index):
        return 0.0, 0
    terms = phases(data.x.take(index), data.arch.take(index), partial).terms["weight_sync"]
    physical = np.sum([t.mib for t in terms if t.name != SYNC_EXTRA], axis=0)
    return statistic(peaks - physical, partial.form.statistic), len(index)


def _token_shares(
    data: Measured, train: np.ndarray, partial: Calibration
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]], dict[str, int]]:
    """Per token phase and workload: the statistic of (stage peak − the phase's other terms) / (its token terms),
    within :data:`~.forms.TOKEN_SHARE_LIMITS` and as measured, and the stage rows per phase."""
    shares: dict[str, dict[str, float]] = {}
    raw: dict[str, dict[str, float]] = {}
    counts: dict[str, int] = {}
    for phase, names in TOKEN_TERMS.items():
        index, peaks = _stage_rows(data, train, phase, offloaded=None)
        counts[phase] = len(index)
        if not len(index) or partial.form.tokens == "full_length":
            continue
        x = data.x.take(index)
        terms = {t.name: t.mib for t in phases(x, data.arch.take(index), partial).terms[phase]}
        terms.pop(TOKEN_CALIBRATION[phase])
        tokens = sum(terms[n] for n in names)
        others = sum(v for n, v in terms.items() if n not in names)
        ratio = (peaks - others) / tokens
        workloads = np.array([x.workloads[w] for w in x.workload], dtype=object)
        raw[phase] = {str(w): statistic(ratio[workloads == w], partial.form.statistic) for w in sorted(set(workloads))}
        low, high = TOKEN_SHARE_LIMITS
        shares[phase] = {w: min(high, max(low, v)) for w, v in raw[phase].items()}
    return shares, raw, counts
