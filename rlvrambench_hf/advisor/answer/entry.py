"""The answer to one plan (:class:`Answer`): its verdict, floors, changes, the per-phase model's peaks and the
evidence beside them. :meth:`Answer.to_json` is one entry of the JSON's ``configurations``; the verdict's sentence
is worded by the output room (:mod:`..output.wording`), which the composer (:mod:`..api`) hands to the assessment
that builds the answers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..plan.hardware import Hardware
from .evidence import Distance, Donor, MeasuredMatch, MeasuredRef, NearestMeasured, NearMatch, Prediction, StartupCheck
from .memory import PhasePeaks
from .part import Part, UserKeys

#: The bases of a verdict: a measurement, a floor that cannot hold, the per-phase model's prediction.
MEASURED, FLOOR, PREDICTED = "measured", "floor", "predicted"


@dataclass(frozen=True, eq=False)
class Verdict(Part):
    """The verdict of a plan: ``state`` (a label, ``unresolved``, or None when nothing is known or the plan is not
    modelled), its ``basis`` (measured, floor, predicted; None when withheld), whether the predicted peak is
    ``near_limit``, and the ``sentence`` that says why. ``not_modelled`` gives what the model does not cover,
    ``by_model`` whether the per-phase model's peak decided, ``why_unknown`` why nothing is known."""

    state: str | None
    basis: str | None
    near_limit: bool
    sentence: str
    not_modelled: tuple[str, ...] = ()
    by_model: bool = False
    why_unknown: str | None = None

    def to_json(self) -> dict[str, Any]:
        if self.not_modelled or self.by_model:
            return {"state": self.state, "basis": self.basis, "near_limit": self.near_limit, "sentence": self.sentence}
        return {"state": self.state, "basis": self.basis, "sentence": self.sentence, "near_limit": self.near_limit}


@dataclass(frozen=True, eq=False)
class FloorResult(Part):
    """A physical floor of the plan: what it requires and what is available (MiB for memory floors, else in
    ``unit``), whether it ``holds`` (None: not checked) and its arithmetic in words."""

    check: str
    required: float | int | None
    available: float | int | None
    unit: str
    holds: bool | None
    arithmetic: str

    @property
    def fails(self) -> bool:
        return self.holds is False

    def to_json(self) -> dict[str, Any]:
        in_mib = self.unit == "MiB"
        return {
            "check": self.check,
            "required_mib": None if self.required is None or not in_mib else float(self.required),
            "available_mib": None if self.available is None or not in_mib else float(self.available),
            "required": self.required,
            "available": self.available,
            "unit": self.unit,
            "holds": self.holds,
            "arithmetic": self.arithmetic,
        }


@dataclass(frozen=True, eq=False)
class Change(Part):
    """A single-setting change of the plan: ``setting`` from ``before`` to ``to`` (``paste``: as the user writes
    it), the verdict after it (``resulting_state``) and its basis: ``measured`` (a measured configuration,
    ``supporting``, is within the margin), ``predicted`` (the model predicts it within the margin) or ``floor`` (it
    makes the failing ``floor`` hold; the plan may need more)."""

    setting: str
    before: object
    to: object
    paste: UserKeys
    resulting_state: str | None
    basis: str
    supporting: MeasuredRef | None = None
    predicted_peak_change_mib: float | None = None
    floor: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "setting": self.setting,
            "from": self.before,
            "to": self.to,
            **self.paste.to_json(),
            "resulting_state": self.resulting_state,
            "basis": self.basis,
            "supporting_configuration": None if self.supporting is None else self.supporting.to_json(),
            "predicted_peak_change_mib": self.predicted_peak_change_mib,
        }
        if self.floor is not None:
            out["floor"] = self.floor
        return out


@dataclass(frozen=True, eq=False)
class Answer(Part):
    """The answer to one plan. Beside what its JSON gives, it keeps how the user wrote each setting (``written``)
    and its model's metadata (None when the model is not known), which a failure log's diagnosis reads."""

    configuration_id: str
    origin: str
    model_id: str | None
    model_family: str | None
    verdict: Verdict
    memory: PhasePeaks
    measured: tuple[MeasuredMatch, ...] | None
    measured_agree: bool | None
    near_matches: tuple[NearMatch, ...]
    floors: tuple[FloorResult, ...]
    changes: tuple[Change, ...]
    predictions: tuple[Prediction, ...] | None
    predictions_unavailable: str | None
    startup_check: StartupCheck | None
    donor: Donor | None
    nearest_measured: tuple[NearestMeasured, ...]
    distance: Distance | None
    scope_flags: tuple[str, ...]
    settings: Mapping[str, Any]
    written: Mapping[str, str]
    metadata: Mapping[str, Any] | None

    @property
    def device(self) -> Hardware:
        return self.memory.device

    @property
    def failed_floors(self) -> tuple[FloorResult, ...]:
        return tuple(f for f in self.floors if f.fails)

    def floor(self, check: str) -> FloorResult | None:
        return next((f for f in self.floors if f.check == check), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "configuration_id": self.configuration_id,
            "origin": self.origin,
            "model_id": self.model_id,
            "model_family": self.model_family,
            "verdict": self.verdict.to_json(),
            "device": self.device.describe(),
            **self.memory.to_json(),
            "measured": None if self.measured is None else [m.to_json() for m in self.measured],
            "measured_agree": self.measured_agree,
            "near_matches": [n.to_json() for n in self.near_matches],
            "floors": [f.to_json() for f in self.floors],
            "changes": [c.to_json() for c in self.changes],
            "predictions": None if self.predictions is None else {p.method: p.to_json() for p in self.predictions},
            "predictions_unavailable": self.predictions_unavailable,
            "startup_check": None if self.startup_check is None else self.startup_check.to_json(),
            "donor": None if self.donor is None else self.donor.to_json(),
            "nearest_measured": [n.to_json() for n in self.nearest_measured],
            "distance": None if self.distance is None else self.distance.to_json(),
            "scope_flags": list(self.scope_flags),
            "settings": dict(self.settings),
        }


#: How an answer's verdict is worded: the output room's :func:`~..output.wording.sentence`, handed down by the api.
Wording = Callable[[Answer], str]
