"""The replay engine: one policy on one case at one budget, under the protocol's charging rules.

The engine, not the policy, walks the designated screen slot of the candidate a policy requests: every
invocation is charged before its outcome is revealed; a permitted replacement of the same slot is read only if
budget remains; a slot that never started makes the candidate unavailable (abstain, no charge) and ends
acquisition. A revealed outcome replaces the decision: within_margin → approve, above_margin or
memory_failure → reject, unresolved → abstain. A user's policy is called through
:class:`~.policy.BoundPolicy` (under a time limit, its answers checked).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
from typing import Any

from ..data.schema.pins import UNRESOLVED
from ..errors import InputError
from .attempts import Attempt
from .policy import (
    ABSTAIN,
    APPROVE,
    REJECT,
    STOP,
    UNAVAILABLE,
    BoundPolicy,
    CandidateView,
    Screen,
    Task,
    checked_action,
    checked_decisions,
)
from .protocol import Case, Protocol

OUTCOME_DECISION = {"within_margin": APPROVE, "above_margin": REJECT, "memory_failure": REJECT, UNRESOLVED: ABSTAIN}


@dataclass(frozen=True)
class CaseReplay:
    """The result of one replay: final decisions, the transcript and the charges."""

    case_id: str
    rule: str
    budget: int
    decisions: dict[str, str]
    transcript: tuple[Screen, ...]
    spent_target_attempts: int
    donor_attempts: int

    @property
    def cold_start_attributed_attempts(self) -> int:
        return self.spent_target_attempts + self.donor_attempts


def make_task(protocol: Protocol, case: Case, budget: int, *, with_donors: bool) -> Task:
    """What a policy sees of ``case`` at ``budget``."""
    views = tuple(
        CandidateView(c.candidate_id, c.configuration_level, c.actor_micro_batch, c.reservation, c.screen_slot_id)
        for c in case.candidates
    )
    donors = MappingProxyType(dict(case.donors) if with_donors else {})
    return Task(
        case.case_id,
        case.model_family,
        case.dataset,
        views,
        case.query_order,
        donors,
        budget,
        protocol.memory_limit_mib,
        protocol.donor_guard_mib,
    )


def donor_attempts(case: Case) -> int:
    """Distinct recorded donor attempts of a case."""
    return len({a for donor in case.donors.values() for a in donor.recorded_attempt_ids})


def replay_case(
    policy: Any, protocol: Protocol, case: Case, budget: int, screens: Mapping[str, Sequence[Attempt]]
) -> CaseReplay:
    """Replay ``policy`` on ``case`` with ``budget`` target attempts.

    ``screens`` maps a candidate id to the attempts of its designated screen slot, in attempt-index order
    (the engine never receives evaluation records). ``policy`` is a :class:`~.policy.BoundPolicy`, or any policy
    object (bound here for this case, with the default time limit).
    """
    if isinstance(policy, BoundPolicy):
        return _replay(policy, protocol, case, budget, screens)
    with BoundPolicy(policy) as bound:
        return _replay(bound, protocol, case, budget, screens)


def _replay(
    policy: BoundPolicy, protocol: Protocol, case: Case, budget: int, screens: Mapping[str, Sequence[Attempt]]
) -> CaseReplay:
    name, uses_donors = policy.name, policy.uses_donors
    task = make_task(protocol, case, budget, with_donors=uses_donors)
    where = f"case {case.case_id}, budget {budget}"
    decisions = policy.ask("initial_decisions", task, where=where, accept=partial(checked_decisions, task=task))
    transcript: list[Screen] = []
    screened: set[str] = set()
    spent = 0
    while spent < budget:
        action = policy.ask(
            "next_action", task, tuple(transcript), where=where, accept=partial(checked_action, task=task)
        )
        if action == STOP:
            break
        if action in screened:
            raise InputError(
                f"policy {name}, {where}: next_action requested {action} again; each designated screen can be "
                "requested once"
            )
        screened.add(action)
        attempts = screens.get(action, ())
        if not attempts:
            decisions[action] = ABSTAIN
            transcript.append(Screen(action, None, None, 0, spent, UNAVAILABLE, ABSTAIN, None))
            break
        for attempt in attempts:
            if spent >= budget:
                break
            spent += 1
            decisions[action] = OUTCOME_DECISION[attempt.state]
            transcript.append(
                Screen(
                    action,
                    attempt.attempt_id,
                    attempt.attempt_index,
                    1,
                    spent,
                    attempt.state,
                    decisions[action],
                    attempt.peak_mib,
                )
            )
    return CaseReplay(
        case.case_id, name, budget, decisions, tuple(transcript), spent, donor_attempts(case) if uses_donors else 0
    )
