"""The hidden truth of each candidate, from its three evaluation slots only (screens never contribute)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..data.schema.pins import UNRESOLVED
from .attempts import Attempt, slot_history
from .protocol import EVALUATION, SCREEN, Protocol


@dataclass(frozen=True)
class Truth:
    """A candidate's repeated evaluation label and the evidence flags kept beside it."""

    state: str
    known_memory_failure: bool
    known_above_margin: bool
    evaluation_attempt_ids: tuple[str, ...]

    def as_dict(self) -> dict:
        return {
            "state": self.state,
            "known_memory_failure": self.known_memory_failure,
            "known_above_margin": self.known_above_margin,
            "evaluation_attempt_ids": list(self.evaluation_attempt_ids),
        }


def candidate_truth(protocol: Protocol, attempts: Sequence[Attempt]) -> dict[str, Truth]:
    """Candidate id → :class:`Truth`, in protocol order.

    The state is ``unresolved`` if any evaluation slot is missing or its last attempt is unresolved; otherwise
    ``memory_failure`` if any evaluation attempt failed for memory or carries the known-memory-failure flag;
    otherwise ``above_margin`` if any is above; otherwise ``within_margin``.
    """
    history = slot_history(a for a in attempts if a.role == EVALUATION)
    truth: dict[str, Truth] = {}
    for candidate in protocol.candidates.values():
        slots = [history.get(slot, []) for slot in candidate.evaluation_slot_ids]
        every = [a for slot in slots for a in slot]
        known_failure = any(a.state == "memory_failure" or a.known_memory_failure for a in every)
        known_above = any(a.state == "above_margin" for a in every)
        if any(not slot or slot[-1].state == UNRESOLVED for slot in slots):
            state = UNRESOLVED
        elif known_failure:
            state = "memory_failure"
        elif known_above:
            state = "above_margin"
        else:
            state = "within_margin"
        truth[candidate.candidate_id] = Truth(state, known_failure, known_above, tuple(a.attempt_id for a in every))
    return truth


def physical_collection(attempts: Sequence[Attempt]) -> dict[str, int]:
    """Recorded screen and evaluation invocations."""
    return {
        "recorded_screen_attempts": sum(a.role == SCREEN for a in attempts),
        "recorded_evaluation_attempts": sum(a.role == EVALUATION for a in attempts),
    }
