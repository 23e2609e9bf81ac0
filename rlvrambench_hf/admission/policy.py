"""The policy API and the three published rules, implemented on it.

A policy is any object with two methods (subclassing :class:`AdmissionPolicy` is optional):

* ``initial_decisions(task) -> {candidate_id: "approve" | "reject" | "abstain"}`` — the decisions before any
  screen, for every candidate of the case;
* ``next_action(task, revealed) -> candidate_id | "stop"`` — the candidate whose designated screen to request
  next, given the screens revealed so far (a tuple of :class:`Screen`).

and two optional attributes: ``name`` (how the report names it; default: the class name) and ``uses_donors``
(default ``True``: the task carries the donors and their recorded attempts are charged as donor cost).
The replay engine (:mod:`.replay`) asks ``next_action`` only while budget remains and enforces charging,
designated slots and replacements; a revealed screen replaces the candidate's decision by the protocol's rule.
Policies see a :class:`Task` and the revealed screens, never evaluation records.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..scoring.user import load_object
from .protocol import Donor

STOP = "stop"
APPROVE, REJECT, ABSTAIN = "approve", "reject", "abstain"
DECISIONS = (APPROVE, REJECT, ABSTAIN)
UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class CandidateView:
    """What a policy knows about a candidate: its settings and its designated screen slot."""

    candidate_id: str
    configuration_level: str
    actor_micro_batch: int
    reservation: float
    screen_slot_id: str


@dataclass(frozen=True)
class Task:
    """One case at one budget, as a policy sees it (``donors`` is empty for a policy without donors)."""

    case_id: str
    model_family: str
    dataset: str
    candidates: tuple[CandidateView, ...]
    query_order: tuple[str, ...]
    donors: Mapping[str, Donor]
    budget: int
    memory_limit_mib: int
    donor_guard_mib: int

    @property
    def candidate_ids(self) -> tuple[str, ...]:
        return tuple(c.candidate_id for c in self.candidates)


@dataclass(frozen=True)
class Screen:
    """One step of a replay: a charged screen invocation, or a screen slot that never started."""

    candidate_id: str
    attempt_id: str | None
    attempt_index: int | None
    charge: int
    cumulative_spent: int
    state: str
    decision: str
    peak_mib: float | None

    def as_dict(self) -> dict:
        return {
            "candidate_id": self.candidate_id,
            "attempt_id": self.attempt_id,
            "attempt_index": self.attempt_index,
            "charge": self.charge,
            "cumulative_spent_target_attempts": self.cumulative_spent,
            "state": self.state,
            "decision": self.decision,
            "peak_mib": self.peak_mib,
        }


class AdmissionPolicy(ABC):
    """Base class of policies; see the module docstring for the contract."""

    name: str = ""
    uses_donors: bool = True

    @abstractmethod
    def initial_decisions(self, task: Task) -> Mapping[str, str]:
        """The decision on every candidate of ``task`` before any screen."""

    @abstractmethod
    def next_action(self, task: Task, revealed: tuple[Screen, ...]) -> str:
        """The candidate to screen next, or :data:`STOP`."""


def next_in_query_order(task: Task, revealed: tuple[Screen, ...]) -> str:
    """The first candidate of the frozen query order not screened yet, or :data:`STOP`."""
    screened = {s.candidate_id for s in revealed}
    return next((c for c in task.query_order if c not in screened), STOP)


class SourceCopy(AdmissionPolicy):
    """Approve where the donor's repeated label is within the margin, else reject; screen in query order."""

    name = "source_copy"
    uses_donors = True

    def donor_approves(self, task: Task, donor: Donor) -> bool:
        return donor.observed_state == "within_margin"

    def initial_decisions(self, task: Task) -> dict[str, str]:
        return {c: APPROVE if self.donor_approves(task, task.donors[c]) else REJECT for c in task.candidate_ids}

    def next_action(self, task: Task, revealed: tuple[Screen, ...]) -> str:
        return next_in_query_order(task, revealed)


class HeadroomGuard(SourceCopy):
    """As :class:`SourceCopy`, but the donor's maximum completed peak must also be at most limit − guard."""

    name = "headroom_guard"

    def donor_approves(self, task: Task, donor: Donor) -> bool:
        peak = donor.max_completed_run_peak_mib
        return (
            super().donor_approves(task, donor)
            and peak is not None
            and peak <= task.memory_limit_mib - task.donor_guard_mib
        )


class DirectScreen(AdmissionPolicy):
    """No donors: every candidate starts as abstain; screen in query order."""

    name = "direct_screen"
    uses_donors = False

    def initial_decisions(self, task: Task) -> dict[str, str]:
        return {c: ABSTAIN for c in task.candidate_ids}

    def next_action(self, task: Task, revealed: tuple[Screen, ...]) -> str:
        return next_in_query_order(task, revealed)


RULES: dict[str, type[AdmissionPolicy]] = {p.name: p for p in (SourceCopy, HeadroomGuard, DirectScreen)}


def builtin_rule(name: str) -> AdmissionPolicy:
    """The published rule called ``name``."""
    try:
        return RULES[name]()
    except KeyError:
        raise InputError(f"unknown rule {name!r}; known rules: {', '.join(RULES)}") from None


def policy_name(policy: Any) -> str:
    return getattr(policy, "name", "") or type(policy).__name__


def policy_uses_donors(policy: Any) -> bool:
    return bool(getattr(policy, "uses_donors", True))


def load_policy(spec: str) -> Any:
    """The policy named by ``"module:attr"`` (or ``"path/to/file.py:attr"``); a class is instantiated."""
    return load_object(spec, "policy", ("initial_decisions", "next_action"))
