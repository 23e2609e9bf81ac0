"""One plan's view of the per-phase memory model (:class:`rlvrambench_hf.memory.phases.PhaseModel` at one plan):
its device, the peak of every phase with its terms and their arithmetic, the binding phase, the model's error band
with its parts (and, near the limit, the change that buys it back), what still fits (the headroom of every phase and
the largest utilization and actor micro-batch), and for a plan the model does not cover, why, with the modelled
part's lower bound and the terms it leaves out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..plan.hardware import Hardware
from .part import Part, UserKeys


@dataclass(frozen=True, eq=False)
class PhaseTerm(Part):
    """One term of a phase at one plan: its name, MiB and arithmetic in words."""

    term: str
    mib: float
    arithmetic: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"term": self.term, "mib": self.mib, "arithmetic": self.arithmetic}


@dataclass(frozen=True, eq=False)
class PhasePeak(Part):
    """One phase at one plan: its peak (the sum of its terms) and the terms."""

    phase: str
    peak_mib: float
    terms: tuple[PhaseTerm, ...]

    def to_json(self) -> dict[str, Any]:
        return {"phase": self.phase, "peak_mib": self.peak_mib, "terms": [t.to_json() for t in self.terms]}


@dataclass(frozen=True, eq=False)
class Fits(Part):
    """What still fits: the headroom of every phase to the margin (MiB, negative above it), and the largest vLLM
    utilization and actor micro-batch with which every phase stays within it (None: no value is enough), each with
    the keys to paste."""

    headroom_mib: Mapping[str, float]
    largest_utilization: float | None
    largest_micro_batch: int | None
    utilization_keys: UserKeys | None = None
    micro_batch_keys: UserKeys | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "headroom_mib": dict(self.headroom_mib),
            "largest_vllm_gpu_memory_utilization": self.largest_utilization,
            "largest_actor_micro_batch": self.largest_micro_batch,
        }
        if self.utilization_keys is not None:
            out["keys_for_largest_vllm_gpu_memory_utilization"] = self.utilization_keys.to_json()
        if self.micro_batch_keys is not None:
            out["keys_for_largest_actor_micro_batch"] = self.micro_batch_keys.to_json()
        return out


@dataclass(frozen=True, eq=False)
class BandPart(Part):
    """One part of a plan's error band: its name, MiB at the phase the band is measured at, and why it applies."""

    part: str
    mib: float
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"part": self.part, "mib": self.mib, "why": self.why}


@dataclass(frozen=True, eq=False)
class Band(Part):
    """A plan's error band: its total (MiB), the phase it reaches furthest at, its parts, and near the limit the
    overrides that keep the peak and its band within the margin (``buy_back``; empty: no single change does)."""

    mib: float
    phase: str
    parts: tuple[BandPart, ...]
    buy_back: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mib": self.mib, "phase": self.phase, "parts": [p.to_json() for p in self.parts]}
        if self.buy_back is not None:
            out["buy_back"] = list(self.buy_back)
        return out


@dataclass(frozen=True, eq=False)
class NotModelled(Part):
    """Why the model does not cover a plan; for a run that carries at least the modelled GRPO+LoRA part, that
    part's peak as a lower bound and the terms it leaves out (no per-phase peaks, no fits reading)."""

    reasons: tuple[str, ...]
    lower_bound_mib: float | None = None
    missing_terms: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "reasons": list(self.reasons),
            "modelled_part_lower_bound_mib": self.lower_bound_mib,
            "missing_terms": None if self.missing_terms is None else list(self.missing_terms),
        }


@dataclass(frozen=True, eq=False)
class PhasePeaks(Part):
    """The per-phase model at one plan on ``device``: its phases (none when the model has no peak for the plan), the
    phase that sets the peak, the peak, the held-out error band and what still fits. Its JSON is the memory block
    of an answer (the device is the answer's own ``device``)."""

    device: Hardware
    phases: tuple[PhasePeak, ...]
    binding_phase: str | None
    peak_mib: float | None
    band_mib: float
    fits: Fits | None = None
    band: Band | None = None
    not_modelled: NotModelled | None = None

    @property
    def known(self) -> bool:
        return bool(self.phases)

    def phase(self, name: str | None) -> PhasePeak | None:
        return next((p for p in self.phases if p.phase == name), None)

    @property
    def binding(self) -> PhasePeak | None:
        """The phase that sets the peak (the largest, when the view does not name it)."""
        named = self.phase(self.binding_phase)
        if named is not None or not self.phases:
            return named
        return max(self.phases, key=lambda p: p.peak_mib)

    def to_json(self) -> dict[str, Any]:
        if not self.known:
            band = None if self.not_modelled is not None else self.band_mib
            out: dict[str, Any] = {"phases": [], "binding_phase": None, "predicted_peak_mib": None, "band_mib": band}
            if self.not_modelled is not None:
                out["not_modelled"] = self.not_modelled.to_json()
            return out
        out = {
            "phases": [p.to_json() for p in self.phases],
            "binding_phase": self.binding_phase,
            "predicted_peak_mib": None if self.peak_mib is None else round(self.peak_mib, 1),
            "band_mib": round(self.band_mib, 1),
        }
        if self.band is not None:
            out["band"] = self.band.to_json()
        if self.fits is not None:
            out["fits"] = self.fits.to_json()
        return out
