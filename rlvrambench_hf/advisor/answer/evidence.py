"""What an answer rests on besides its floors and the per-phase model: the release's measured records of the plan
(exact and one setting away), the nearest measured configurations and the distance to them, and the three
reference methods' predictions with their track record, the donor and the start-up check."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .part import Part, as_json


@dataclass(frozen=True, eq=False)
class MeasuredRef(Part):
    """A measured configuration of the release named by an answer: its table, id, label and largest completed peak
    (None when no seed completed)."""

    table: str
    configuration_id: str
    observed_state: str | None
    max_completed_peak_mib: float | None

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> MeasuredRef:
        return cls(
            record["table"], record["configuration_id"], record["observed_state"], record["max_completed_peak_mib"]
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "configuration_id": self.configuration_id,
            "observed_state": self.observed_state,
            "max_completed_peak_mib": self.max_completed_peak_mib,
        }


#: How the ``match`` of a record carried from the release's device to the plan's begins.
CARRIED = "measured on the release's"


@dataclass(frozen=True, eq=False)
class MeasuredMatch(Part):
    """A measured record with the plan's settings: its label (``unresolved`` without a repeated one), eligible
    seeds, largest completed peak, partial ``evidence``, the stages its processes ended in, and whether it matches
    on every defining setting (``match``; for a record carried from the release's device to the plan's, how, with
    the ``carried_peak_mib`` there). ``record`` is the release's record as the JSON gives it."""

    table: str
    configuration_id: str
    observed_state: str
    eligible_seeds: tuple[int, ...]
    max_completed_peak_mib: float | None
    evidence: Mapping[str, Any]
    stages: tuple[str, ...]
    match: str
    record: Mapping[str, Any]
    carried_peak_mib: float | None = None

    @property
    def carried(self) -> bool:
        """Whether the record was measured on the release's device and carried to the plan's."""
        return self.match.startswith(CARRIED)

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> MeasuredMatch:
        stages = sorted({r["stage"] for r in record.get("runs", []) if r.get("stage")})
        return cls(
            record["table"],
            record["configuration_id"],
            record["observed_state"],
            tuple(record.get("eligible_seeds") or ()),
            record["max_completed_peak_mib"],
            record.get("evidence", {}),
            tuple(stages),
            record["match"],
            record,
            record.get("carried_peak_mib"),
        )

    def to_json(self) -> dict[str, Any]:
        return dict(as_json(self.record))


@dataclass(frozen=True, eq=False)
class NearMatch(Part):
    """A measured record one defining setting away from the plan: that ``setting``, the plan's value and theirs."""

    ref: MeasuredRef
    setting: str
    plan: object
    measured: object

    def to_json(self) -> dict[str, Any]:
        return {**self.ref.to_json(), "setting": self.setting, "plan": self.plan, "measured": self.measured}


@dataclass(frozen=True, eq=False)
class NearestMeasured(Part):
    """A measured configuration near the plan in the classifier's standardised features."""

    ref: MeasuredRef
    distance: float

    def to_json(self) -> dict[str, Any]:
        return {**self.ref.to_json(), "distance": self.distance}


@dataclass(frozen=True, eq=False)
class Distance(Part):
    """The plan's distance to the nearest measured configuration against the cloud's own nearest-neighbour
    distances (median and largest); beyond the largest, the plan is outside the measured cloud."""

    nearest: float
    cloud_median: float | None
    cloud_max: float

    @property
    def outside_cloud(self) -> bool:
        return self.nearest > self.cloud_max

    def to_json(self) -> dict[str, Any]:
        return {
            "nearest": self.nearest,
            "cloud_nearest_neighbour_median": self.cloud_median,
            "cloud_nearest_neighbour_max": self.cloud_max,
            "outside_cloud": self.outside_cloud,
        }


@dataclass(frozen=True, eq=False)
class Prediction(Part):
    """One reference method's label and peak for the plan, with its leave-one-family-out ``track_record``; the
    component regression also gives its label before the start-up guard, donor copy the configuration it copies."""

    method: str
    state: str | None
    peak_mib: float | None
    track_record: Mapping[str, Any] | None
    peak_only_state: str | None = None
    startup_guard_changed_state: bool | None = None
    donor_configuration_id: str | None = None

    @property
    def approvals_that_failed(self) -> int | None:
        """Approvals of the method that failed, held out (None without a track record)."""
        return None if self.track_record is None else int(self.track_record["approvals_that_failed"])

    @property
    def usable_rejected(self) -> int | None:
        """Usable configurations the method rejected, held out (None without a track record)."""
        return None if self.track_record is None else int(self.track_record["usable_rejected"])

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"predicted_state": self.state, "predicted_peak_mib": self.peak_mib}
        if self.method == "component_regression":
            out["peak_only_predicted_state"] = self.peak_only_state
            out["startup_guard_changed_state"] = self.startup_guard_changed_state
        if self.method == "donor_copy":
            out["donor_configuration_id"] = self.donor_configuration_id
        out["track_record"] = as_json(self.track_record)
        return out


@dataclass(frozen=True, eq=False)
class Donor(Part):
    """The measured configuration donor copy takes its label from (same workload and level)."""

    configuration_id: str
    model_id: str
    workload_id: str
    configuration_level: str
    gpu_count: int
    observed_state: str
    max_completed_run_peak_mib: float | None
    eligible_processes: int
    gpu_count_matches: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "configuration_id": self.configuration_id,
            "model_id": self.model_id,
            "workload_id": self.workload_id,
            "configuration_level": self.configuration_level,
            "gpu_count": self.gpu_count,
            "observed_state": self.observed_state,
            "max_completed_run_peak_mib": self.max_completed_run_peak_mib,
            "eligible_processes": self.eligible_processes,
            "gpu_count_matches": self.gpu_count_matches,
        }


@dataclass(frozen=True, eq=False)
class StartupCheck(Part):
    """The component regression's start-up guard: vLLM's budget plus the resident actor against the capacity."""

    applicable: bool
    budget_plus_actor_mib: float | None = None
    predicted_failure: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "applicable": self.applicable,
            "budget_plus_actor_mib": self.budget_plus_actor_mib,
            "predicted_startup_budget_failure": self.predicted_failure,
        }
