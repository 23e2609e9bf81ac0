"""The replay engine: one policy on one case at one budget, under the protocol's charging rules.

The engine, not the policy, walks the designated screen slot of the candidate a policy requests: every
invocation is charged before its outcome is revealed; a permitted replacement of the same slot is read only if
budget remains; a slot that never started makes the candidate unavailable (abstain, no charge) and ends
acquisition. A revealed outcome replaces the decision: within_margin → approve, above_margin or
memory_failure → reject, unresolved → abstain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..data.schema.pins import UNRESOLVED
from ..errors import InputError
from ..scoring.user import call_user
from .attempts import Attempt
from .policy import (
    ABSTAIN,
    APPROVE,
    DECISIONS,
    REJECT,
    STOP,
    UNAVAILABLE,
    CandidateView,
    Screen,
    Task,
    policy_name,
    policy_uses_donors,
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
    (the engine never receives evaluation records).
    """
    name = policy_name(policy)
    uses_donors = policy_uses_donors(policy)
    task = make_task(protocol, case, budget, with_donors=uses_donors)
    context = f"policy {name}, case {case.case_id}, budget {budget}"
    initial = call_user(policy.initial_decisions, context, "initial_decisions", task)
    decisions = _checked_decisions(initial, task, context)
    transcript: list[Screen] = []
    screened: set[str] = set()
    spent = 0
    while spent < budget:
        action = call_user(policy.next_action, context, "next_action", task, tuple(transcript))
        if isinstance(action, str) and action == STOP:
            break
        if not isinstance(action, str) or action not in task.candidate_ids:
            raise InputError(
                f"{context}: next_action returned {action!r}, neither {STOP!r} nor a candidate of the case"
            )
        if action in screened:
            raise InputError(
                f"{context}: next_action requested {action} again; each designated screen can be requested once"
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


def _checked_decisions(value: Any, task: Task, context: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise InputError(f"{context}: initial_decisions returned {type(value).__name__}, not a mapping")
    ids = task.candidate_ids
    missing = [c for c in ids if c not in value]
    extra = [str(c) for c in value if c not in ids]
    if missing or extra:
        what = f"no decision for {', '.join(missing)}" if missing else f"unknown candidate(s) {', '.join(extra)}"
        raise InputError(f"{context}: initial_decisions has {what}")
    for cid in ids:
        if value[cid] not in DECISIONS:
            raise InputError(
                f"{context}: initial_decisions gives {value[cid]!r} for {cid}; expected one of {', '.join(DECISIONS)}"
            )
    return {cid: value[cid] for cid in ids}
