"""The calibrated terms: runtime memory outside vLLM's budget and the weight-sync gather's extra, fitted on the
release's configuration peaks and stage measurements of the *training* configurations only (inside each fold).

The physical terms keep their physical coefficients; only these offsets are fitted:

* ``runtime_outside_vllm`` — CUDA context, NCCL buffers, CUDA graphs, allocator slack: per workload, the median
  over completed configurations without parameter offload of ``peak − u·C − resident actor``. Two forms:
  ``constant`` (one MiB figure per workload; fixed before looking at the held-out scores) and ``hidden_layers``
  (per workload, MiB per ``H × (L + 1)`` of the model; chosen after seeing all 90 configurations).
* ``token_scale`` — per token phase and workload, the median over the training configurations' completed
  ``actor_update`` / ``reference_logprob`` stage measurements of (stage peak − the phase's other terms) / (its
  token terms at full length): below 1 where responses stop before the length cap (:mod:`.fit`).
* ``weight_sync_extra`` — what a parameter-offloaded weight sync holds beyond the gathered parameters, vLLM's
  memory at sync (its weights, or its whole reservation when it never sleeps) and the runtime term: the median of
  ``stage peak − those terms`` over the completed ``weight_sync``
  stage measurements of the training configurations with parameter offload.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from .architecture import Architecture, architecture
from .inputs import SETTINGS, PlanInputs, plan_inputs

MIB = 2.0**20
FORMS: tuple[str, ...] = ("constant", "hidden_layers")
#: The form of the runtime term the advisor uses, and the one fixed in advance (published beside it).
FINAL_FORM, A_PRIORI_FORM = "hidden_layers", "constant"


@dataclass(frozen=True)
class Calibration:
    """Fitted offsets: the runtime term per workload (MiB, or MiB per H × (L + 1)), its fallback for a plan
    without a measured workload (the largest), and the weight-sync extra (MiB)."""

    form: str
    per_workload: Mapping[str, float]
    sync_extra: float
    evidence: Mapping[str, int] = field(default_factory=dict)  # configurations and stage rows used
    #: Per token phase (``actor_update``, ``reference_logprob``) and workload: the measured memory of the phase's
    #: token terms per modelled MiB of them (none fitted: 1, the full-length physics alone).
    token_scale: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def tokens(self, phase: str, x: PlanInputs) -> np.ndarray:
        """The token scale of ``phase`` per plan; a workload the release did not measure gets the largest (and at
        least 1: never below the full-length physics)."""
        per = self.token_scale.get(phase, {})
        fallback = max(1.0, *per.values()) if per else 1.0
        names = [*x.workloads, None]
        scales = np.array([per.get(n, fallback) if n else fallback for n in names])
        return scales[np.where(x.workload >= 0, x.workload, len(names) - 1)]

    def describe_tokens(self, phase: str, x: PlanInputs, i: int, physical: float) -> str:
        w = x.workloads[x.workload[i]] if x.workload[i] >= 0 else None
        per = self.token_scale.get(phase, {})
        scale = float(self.tokens(phase, x)[i])
        if not per:
            return "0 MiB: not calibrated (the full-length physics alone)"
        whose = f"workload {w}" if w in per else "no measured workload: the largest, at least 1"
        spread = f"{min(per.values()):.2f}-{max(per.values()):.2f}"
        return (
            f"calibrated, {whose}: ({scale:.2f} - 1) x {physical:,.0f} MiB of token terms = "
            f"{(scale - 1) * physical:,.0f} MiB (median of the measured {phase} stage memory per modelled MiB; "
            f"below 1 where responses stop before the cap; range over workloads {spread}; "
            f"{self.evidence.get(phase + '_rows', 0)} stage measurements)"
        )

    @property
    def fallback(self) -> float:
        return max(self.per_workload.values())

    def _scale(self, arch: Architecture) -> np.ndarray:
        return arch.hidden * (arch.layers + 1) if self.form == "hidden_layers" else np.ones_like(arch.hidden)

    def runtime(self, arch: Architecture, x: PlanInputs) -> np.ndarray:
        """The runtime term per plan (MiB)."""
        names = [*x.workloads, None]
        per = np.array([self.per_workload.get(n, self.fallback) if n else self.fallback for n in names])
        return cast("np.ndarray", per[np.where(x.workload >= 0, x.workload, len(names) - 1)] * self._scale(arch))

    def describe(self, arch: Architecture, x: PlanInputs, i: int) -> str:
        w = x.workloads[x.workload[i]] if x.workload[i] >= 0 else None
        value = self.per_workload.get(w, self.fallback) if w else self.fallback
        whose = f"workload {w}" if w in self.per_workload else "no measured workload: the largest of the workloads"
        spread = f"{min(self.per_workload.values()):,.4g}-{max(self.per_workload.values()):,.4g}"
        if self.form == "hidden_layers":
            h, layers = arch.hidden[i], arch.layers[i]
            return (
                f"calibrated, {whose}: {value:.5f} MiB x hidden {h:,.0f} x ({layers:.0f} + 1) layers = "
                f"{value * h * (layers + 1):,.0f} MiB (range over workloads {spread} MiB per unit; fitted on "
                f"{self.evidence.get('configurations', 0)} completed configurations)"
            )
        return (
            f"calibrated, {whose}: {value:,.0f} MiB (range over workloads {spread} MiB; fitted on "
            f"{self.evidence.get('configurations', 0)} completed configurations)"
        )

    def describe_sync(self) -> str:
        return (
            f"calibrated: {self.sync_extra:,.0f} MiB beyond the gathered parameters, vLLM's weights and the runtime "
            f"term (median of {self.evidence.get('stage_rows', 0)} weight_sync stage measurements with parameter "
            "offload)"
        )


def rows_inputs(
    rows: Sequence[Mapping[str, Any]], metadata: Mapping[str, Mapping[str, Any]]
) -> tuple[PlanInputs, Architecture]:
    """Plan inputs and architecture of rows in the dataset's vocabulary (dicts; knob keys optional)."""
    from .inputs import KNOB_DEFAULTS

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
    dtype = [r.get("actor_param_dtype") for r in rows]
    x = plan_inputs(values, valid, dtype, workload.astype(np.int64).reshape(n), workloads)
    return x, architecture(models, model.reshape(n), metadata)
