"""The calibrated terms: runtime memory outside vLLM's budget, the weight-sync gather's extra and the token phases'
measured share, fitted (:mod:`.fit`) on the *training* configurations and their stage measurements only.

The physical terms keep their physical coefficients; only these are fitted, each in the way its :class:`~.forms.Form`
says:

* ``runtime_outside_vllm`` — CUDA context, NCCL buffers, allocator slack: per workload, the form's statistic over
  completed configurations without parameter offload of ``peak − u·C − resident actor`` (less the per-sequence share in
  the ``sequences`` form; per ``H × (L + 1)`` in the ``hidden_layers`` form, whose scale is held within the
  calibration models' range: it never grows past what was measured);
* ``per_sequence_runtime`` (``sequences`` form) — MiB per sequence vLLM may run at once, ``min(max_num_seqs, 512)``
  (CUDA graphs captured up to that batch, per-sequence buffers): the slope of the start-up stage's memory outside
  vLLM's budget over it, per calibration model (at start-up nothing else grows with the settings), bounded by the
  512 cap;
* ``weight_sync_extra`` — what a parameter-offloaded weight sync holds beyond its physical terms;
* ``token_scale`` (``per_workload`` form) — per token phase and workload, the measured share of the full-length
  token terms, within :data:`~.forms.TOKEN_SHARE_LIMITS` (never above every response at its cap); a workload the
  release did not measure gets the full length.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from .architecture import Architecture, architecture
from .forms import SEQUENCE_CAP, Form
from .inputs import KNOB_DEFAULTS, SETTINGS, PlanInputs, plan_inputs

MIB = 2.0**20


def statistic(values: np.ndarray, name: str) -> float:
    """The form's statistic of ``values``: their median or upper quartile."""
    return float(np.median(values) if name == "median" else np.quantile(values, 0.75))


def concurrent_sequences(x: PlanInputs) -> np.ndarray:
    """The sequences vLLM may run at once per plan, bounded: ``min(max_num_seqs, 512)`` (512 when not given)."""
    given = x.valid["max_num_seqs"] & (x["max_num_seqs"] > 0)
    return np.where(given, np.minimum(x["max_num_seqs"], SEQUENCE_CAP), SEQUENCE_CAP)


@dataclass(frozen=True)
class Calibration:
    """Fitted terms of one form: the runtime term per workload (MiB, or MiB per H × (L + 1) within
    ``scale_bounds``), its fallback for a plan without a measured workload (the largest), the per-sequence slope
    (MiB per sequence vLLM may run at once), the weight-sync extra (MiB), the token shares per phase and workload
    (and as measured, before the limits), the calibration models and the evidence counts."""

    form: Form
    per_workload: Mapping[str, float]
    sync_extra: float
    evidence: Mapping[str, int] = field(default_factory=dict)
    token_scale: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    token_measured: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    mib_per_sequence: float = 0.0
    scale_bounds: tuple[float, float] = (0.0, float("inf"))
    models: tuple[str, ...] = ()

    @property
    def logit_bytes(self) -> float:
        return self.form.logit_bytes

    @property
    def fallback(self) -> float:
        return max(self.per_workload.values())

    def tokens(self, phase: str, x: PlanInputs) -> np.ndarray:
        """The token share of ``phase`` per plan: the measured workload's, else 1 (every response at its cap)."""
        per = self.token_scale.get(phase, {})
        names = [*x.workloads, None]
        scales = np.array([per.get(n, 1.0) if n else 1.0 for n in names])
        out: np.ndarray = scales[np.where(x.workload >= 0, x.workload, len(names) - 1)]
        return out

    def scale(self, arch: Architecture) -> np.ndarray:
        """The runtime term's model scale: ``H × (L + 1)`` within the calibration models' range, else 1."""
        if self.form.runtime != "hidden_layers":
            return np.ones_like(arch.hidden)
        low, high = self.scale_bounds
        return cast("np.ndarray", np.clip(arch.hidden * (arch.layers + 1), low, high))

    def runtime(self, arch: Architecture, x: PlanInputs) -> np.ndarray:
        """The runtime term per plan (MiB), without its per-sequence share."""
        names = [*x.workloads, None]
        per = np.array([self.per_workload.get(n, self.fallback) if n else self.fallback for n in names])
        return cast("np.ndarray", per[np.where(x.workload >= 0, x.workload, len(names) - 1)] * self.scale(arch))

    def per_sequence(self, x: PlanInputs) -> np.ndarray:
        """The per-sequence share of the runtime memory per plan (MiB; 0 outside the ``sequences`` form)."""
        return self.mib_per_sequence * concurrent_sequences(x)

    def describe(self, arch: Architecture, x: PlanInputs, i: int) -> str:
        w = x.workloads[x.workload[i]] if x.workload[i] >= 0 else None
        value = self.per_workload.get(w, self.fallback) if w else self.fallback
        whose = f"workload {w}" if w in self.per_workload else "no measured workload: the largest of the workloads"
        spread = f"{min(self.per_workload.values()):,.4g}-{max(self.per_workload.values()):,.4g}"
        fitted = f"{self.form.statistic} of {self.evidence.get('configurations', 0)} completed configurations"
        if self.form.runtime == "hidden_layers":
            h, layers = arch.hidden[i], arch.layers[i]
            scale = float(self.scale(arch)[i])
            held = "" if scale == h * (layers + 1) else f", held at the calibration models' {scale:,.0f}"
            return (
                f"calibrated, {whose}: {value:.5f} MiB x hidden {h:,.0f} x ({layers:.0f} + 1) layers{held} = "
                f"{value * scale:,.0f} MiB (range over workloads {spread} MiB per unit; {fitted})"
            )
        return f"calibrated, {whose}: {value:,.0f} MiB (range over workloads {spread} MiB; {fitted})"

    def describe_per_sequence(self, x: PlanInputs, i: int) -> str:
        batch = float(concurrent_sequences(x)[i])
        given = "" if x.valid["max_num_seqs"][i] and x["max_num_seqs"][i] > 0 else ", max_num_seqs not given"
        return (
            f"calibrated: {self.mib_per_sequence:.2f} MiB x {batch:,.0f} sequences vLLM may run at once "
            f"(min(max_num_seqs, {SEQUENCE_CAP}){given}: CUDA graphs captured up to that batch, per-sequence "
            f"buffers) = {self.mib_per_sequence * batch:,.0f} MiB ({self.form.statistic} over the calibration "
            f"models of the start-up stage's slope over it, {self.evidence.get('initializing_rows', 0)} stage "
            "measurements)"
        )

    def describe_tokens(self, phase: str, x: PlanInputs, i: int, physical: float) -> str:
        w = x.workloads[x.workload[i]] if x.workload[i] >= 0 else None
        per = self.token_scale.get(phase, {})
        scale = float(self.tokens(phase, x)[i])
        if not per:
            return "0 MiB: every response at its cap (the token terms are not calibrated in this form)"
        if w is None or w not in per:
            return "0 MiB: no measured workload, every response at its cap"
        measured = self.token_measured.get(phase, {}).get(w, scale)
        held = "" if measured == scale else f", measured {measured:.2f} and held within {self._limits()}"
        return (
            f"calibrated, workload {w}: ({scale:.2f} - 1) x {physical:,.0f} MiB of token terms = "
            f"{(scale - 1) * physical:,.0f} MiB ({self.form.statistic} of the measured {phase} stage memory per "
            f"modelled MiB{held}; {self.evidence.get(phase + '_rows', 0)} stage measurements)"
        )

    def _limits(self) -> str:
        from .forms import TOKEN_SHARE_LIMITS

        return f"[{TOKEN_SHARE_LIMITS[0]:g}, {TOKEN_SHARE_LIMITS[1]:g}]"

    def describe_sync(self) -> str:
        return (
            f"calibrated: {self.sync_extra:,.0f} MiB beyond the gathered parameters, vLLM's weights and the runtime "
            f"term ({self.form.statistic} of {self.evidence.get('stage_rows', 0)} weight_sync stage measurements "
            "with parameter offload)"
        )


def rows_inputs(
    rows: Sequence[Mapping[str, Any]], metadata: Mapping[str, Mapping[str, Any]]
) -> tuple[PlanInputs, Architecture]:
    """Plan inputs and architecture of rows in the dataset's vocabulary (dicts; knob keys optional)."""
    n = len(rows)
    values, valid = {}, {}
    for name in (*SETTINGS, *KNOB_DEFAULTS, "base_quant_bits"):
        raw = [r.get(name) for r in rows]
        valid[name] = np.array([v is not None and v == v for v in raw], dtype=bool).reshape(n)
        values[name] = np.array([float(v) if ok else 0.0 for v, ok in zip(raw, valid[name])]).reshape(n)  # type: ignore[arg-type]
    models = tuple(sorted({str(r.get("model_id")) for r in rows if r.get("model_id")}))
    model = np.array([models.index(r["model_id"]) if r.get("model_id") else -1 for r in rows], dtype=np.int64)
    workloads = tuple(sorted({str(r["workload_id"]) for r in rows if r.get("workload_id")}))
    workload = np.array([workloads.index(r["workload_id"]) if r.get("workload_id") else -1 for r in rows])
    from .stack import stack_codes

    for name, column in stack_codes(rows).items():
        values[name], valid[name] = column, np.ones(n, dtype=bool)
    dtype = [r.get("actor_param_dtype") for r in rows]
    x = plan_inputs(values, valid, dtype, workload.astype(np.int64).reshape(n), workloads)
    return x, architecture(models, model.reshape(n), metadata)
