"""The typed parts of a diagnosis beside the log's own messages and figures: the device a log's total capacity
names (:class:`LogDevice`), the release's failures of the same kind (:class:`ReleaseFailures`), and the diagnosis
made specific to a launch file's plan (:class:`PlanMatch`: the advisor's answer, the device against the plan's and
the per-phase model's match). Each is serialised by ``to_json()`` into the diagnosis's JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..answer import Answer, Part, as_json
from .phasematch import PhaseMatch


@dataclass(frozen=True, eq=False)
class LogDevice(Part):
    """The devices whose NVML capacity matches the total a log states (MiB): their names, the capacity of the
    first, and whether the release measured one of them."""

    log_total_mib: float
    candidates: tuple[str, ...]
    capacity_mib: int | None
    measured: bool

    @classmethod
    def of(cls, found: Mapping[str, Any] | None) -> LogDevice | None:
        if found is None:
            return None
        return cls(found["log_total_mib"], tuple(found["candidates"]), found["capacity_mib"], found["measured"])

    def to_json(self) -> dict[str, Any]:
        return {
            "log_total_mib": self.log_total_mib,
            "candidates": list(self.candidates),
            "capacity_mib": self.capacity_mib,
            "measured": self.measured,
        }


@dataclass(frozen=True, eq=False)
class Neighbour(Part):
    """A measured configuration one defining setting away from a failed one that stayed within the margin."""

    configuration_id: str
    setting: str
    failed: object
    within_margin: object
    max_completed_peak_mib: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "configuration_id": self.configuration_id,
            "setting": self.setting,
            "failed": self.failed,
            "within_margin": self.within_margin,
            "max_completed_peak_mib": self.max_completed_peak_mib,
        }


@dataclass(frozen=True, eq=False)
class FailedConfiguration(Part):
    """A measured configuration that failed this way: its processes that did, its label, its main settings
    (``settings``: model, workload, GPUs, utilization, micro-batch) and its within-margin neighbours."""

    configuration_id: str
    failed_processes: int
    observed_state: str | None
    settings: Mapping[str, Any]
    neighbours: tuple[Neighbour, ...]

    def setting(self, name: str) -> Any:
        return self.settings.get(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "configuration_id": self.configuration_id,
            "failed_processes": self.failed_processes,
            "observed_state": self.observed_state,
            **as_json(self.settings),
            "within_margin_neighbours": [n.to_json() for n in self.neighbours],
        }


@dataclass(frozen=True, eq=False)
class ReleaseFailures(Part):
    """The release's record of one failure kind: counts per table, the stages its eligible runs ended in, and the
    measured configurations that failed that way (the most frequent first; ``total`` of them in all)."""

    failure_kind: str | None
    counts: Mapping[str, int]
    terminal_stages: Mapping[str, int]
    configurations: tuple[FailedConfiguration, ...]
    total: int

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> ReleaseFailures:
        """The record :func:`~.failures.release_failures` gives."""
        shown = tuple(
            FailedConfiguration(
                c["configuration_id"],
                c["failed_processes"],
                c["observed_state"],
                {k: v for k, v in c.items() if k not in _OWN},
                tuple(Neighbour(**n) for n in c["within_margin_neighbours"]),
            )
            for c in record["configurations"]
        )
        return cls(
            record["failure_kind"],
            record["counts"],
            record["terminal_stages"],
            shown,
            record["configurations_total"],
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "failure_kind": self.failure_kind,
            "counts": dict(self.counts),
            "terminal_stages": dict(self.terminal_stages),
            "configurations": [c.to_json() for c in self.configurations],
            "configurations_total": self.total,
        }


_OWN = ("configuration_id", "failed_processes", "observed_state", "within_margin_neighbours")


@dataclass(frozen=True, eq=False)
class DeviceAgainstPlan(Part):
    """The device the log reports against the one the plan was answered on (``capacity_from``: where that one came
    from), with a note when they differ."""

    plan_capacity_mib: int
    capacity_from: str
    log_total_mib: float
    agrees: bool
    note: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "plan_capacity_mib": self.plan_capacity_mib,
            "capacity_from": self.capacity_from,
            "log_total_mib": self.log_total_mib,
            "agrees": self.agrees,
            "note": self.note,
        }


@dataclass(frozen=True, eq=False)
class PlanMatch(Part):
    """A diagnosis made specific to the first plan of a launch file: the advisor's ``answer`` to it on the device
    the log reports (or the one given), that device against the log's, how many plans the file held, and the
    per-phase model's match (None when there is no model)."""

    answer: Answer
    device: DeviceAgainstPlan | None
    plans_in_file: int
    phases: PhaseMatch | None = None

    def to_json(self) -> dict[str, Any]:
        a = self.answer
        out: dict[str, Any] = {
            "plan": a.configuration_id,
            "origin": a.origin,
            "verdict": a.verdict.to_json(),
            "device": None if self.device is None else self.device.to_json(),
            "floors_failed": [f.to_json() for f in a.failed_floors],
            "measured": None if a.measured is None else [m.to_json() for m in a.measured],
            "scope_flags": list(a.scope_flags),
            "plans_in_file": self.plans_in_file,
        }
        if self.phases is not None:
            out["phases"] = self.phases.to_json()
        return out
