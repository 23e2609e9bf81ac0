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

A policy that is not one of the published rules is user code: :class:`BoundPolicy` runs each call under a time
limit (in a child process when the package loaded it from ``module:attr``; see :mod:`~rlvrambench_hf.scoring.bounded`)
and checks what it returns before anything is made of it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..errors import InputError, quote, summary, type_name
from ..scoring.bounded import DEFAULT_TIMEOUT, UserObject
from ..scoring.user import isolation_for, load_object
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

    def __reduce__(self) -> tuple[Any, ...]:  # sent to a policy's child process (a mapping proxy does not pickle)
        values = [getattr(self, name) for name in self.__dataclass_fields__]
        return _task, tuple(dict(v) if isinstance(v, MappingProxyType) else v for v in values)


def _task(*values: Any) -> Task:
    rebuilt: list[Any] = [MappingProxyType(v) if isinstance(v, dict) else v for v in values]
    return Task(*rebuilt)


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

    @property
    def charged_attempts(self) -> int:
        """Upstream's name of :attr:`charge`."""
        return self.charge

    @property
    def cumulative_attempts(self) -> int:
        """Upstream's name of :attr:`cumulative_spent`."""
        return self.cumulative_spent

    @property
    def observed_state(self) -> str:
        """Upstream's name of :attr:`state`."""
        return self.state

    def as_dict(self) -> dict[str, Any]:
        """The transcript entry with upstream's keys (``decision_benchmark.py``): a slot that never started is
        ``{candidate_id, status: not_started, charged_attempts: 0}``; a charged screen has ``candidate_id``,
        ``attempt_id``, ``charged_attempts``, ``cumulative_attempts``, ``observed_state``, ``decision``,
        ``peak_mib``."""
        if self.state == UNAVAILABLE:
            return {"candidate_id": self.candidate_id, "status": "not_started", "charged_attempts": 0}
        return {
            "candidate_id": self.candidate_id,
            "attempt_id": self.attempt_id,
            "charged_attempts": self.charge,
            "cumulative_attempts": self.cumulative_spent,
            "observed_state": self.state,
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
        raise InputError(f"unknown rule {quote(name)}; known rules: {', '.join(RULES)}") from None


def policy_name(policy: Any) -> str:
    return getattr(policy, "name", "") or type(policy).__name__


def policy_uses_donors(policy: Any) -> bool:
    return bool(getattr(policy, "uses_donors", True))


def load_policy(spec: str, *, timeout: float | None = DEFAULT_TIMEOUT) -> Any:
    """The policy named by ``"module:attr"`` (or ``"path/to/file.py:attr"``); a class is instantiated (importing
    and instantiating within ``timeout`` seconds)."""
    return load_object(spec, "policy", ("initial_decisions", "next_action"), timeout=timeout)


#: The longest policy name (it appears in the score file and the report).
NAME_LIMIT = 100


class BoundPolicy:
    """A policy as the replay engine calls it: its ``name`` and ``uses_donors`` read once and checked, and every
    call under ``timeout`` seconds (a published rule is called directly). A context manager: closing it ends the
    child process of a policy that has one."""

    def __init__(self, policy: Any, *, timeout: float | None = DEFAULT_TIMEOUT) -> None:
        builtin = type(policy) in RULES.values()
        isolation = "inline" if builtin else isolation_for(policy)
        self.user = UserObject(policy, f"policy {type_name(policy)}", timeout=timeout, isolation=isolation)
        try:
            self.name: str = self.user.get("name", "", _checked_name) or type_name(policy)
            self.user.owner = f"policy {self.name}"
            self.uses_donors: bool = self.user.get("uses_donors", True, _checked_flag)
        except BaseException:
            self.user.close()
            raise

    def ask(self, method: str, *args: Any, where: str, accept: Any) -> Any:
        return self.user.call(method, *args, where=where, accept=accept)

    def close(self) -> None:
        self.user.close()

    def __enter__(self) -> BoundPolicy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _checked_name(value: object) -> str:
    if not isinstance(value, str) or len(value) > NAME_LIMIT or not value.isprintable():
        raise InputError(f"name {quote(value)} must be printable text of at most {NAME_LIMIT} characters")
    return str.__str__(value)


def _checked_flag(value: object) -> bool:
    if type(value) is bool or (type(value) is int and value in (0, 1)):
        return bool(value)
    raise InputError(f"uses_donors {quote(value)} must be True or False")


def canonical(value: object, choices: tuple[str, ...]) -> str | None:
    """The member of ``choices`` that ``value`` (a user's text) equals, compared without running its class's
    code; None when it is none of them."""
    if not isinstance(value, str):
        return None
    return next((c for c in choices if str.__eq__(value, c) is True), None)


def checked_decisions(value: object, task: Task) -> dict[str, str]:
    """What ``initial_decisions`` returned, as a plain mapping of every candidate to one of :data:`DECISIONS`."""
    if not isinstance(value, Mapping):
        raise InputError(f"initial_decisions returned {quote(value)}, not a mapping")
    ids = task.candidate_ids
    missing = [c for c in ids if c not in value]
    if missing:
        raise InputError(f"initial_decisions has no decision for {', '.join(missing)}")
    if len(value) != len(ids):  # every candidate is there: the others are unknown
        extra = (k for k in value if canonical(k, ids) is None)
        raise InputError(f"initial_decisions has unknown candidate(s) {summary(extra, total=len(value) - len(ids))}")
    out = {}
    for cid in ids:
        decision = canonical(value[cid], DECISIONS)
        if decision is None:
            raise InputError(
                f"initial_decisions gives {quote(value[cid])} for {cid}; expected one of {', '.join(DECISIONS)}"
            )
        out[cid] = decision
    return out


def checked_action(value: object, task: Task) -> str:
    """What ``next_action`` returned: :data:`STOP` or a candidate id of the task (as the package's own text)."""
    action = canonical(value, (STOP, *task.candidate_ids))
    if action is None:
        raise InputError(f"next_action returned {quote(value)}, neither {STOP!r} nor a candidate of the case")
    return action
