"""The hidden truth of each candidate, from its three evaluation slots only (screens never contribute)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..data.schema.pins import OUTCOME_LABELS, UNRESOLVED
from .attempts import Attempt, slot_history
from .protocol import EVALUATION, SCREEN, Protocol

OUTCOME_ORDER: tuple[str, ...] = tuple(OUTCOME_LABELS)


@dataclass(frozen=True)
class Truth:
    """A candidate's repeated evaluation label and the evidence flags kept beside it."""

    state: str
    known_memory_failure: bool
    known_above_margin: bool
    evaluation_attempt_ids: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
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


def screen_agreement(protocol: Protocol, attempts: Sequence[Attempt], truth: dict[str, Truth]) -> dict[str, Any]:
    """Whether each candidate's screen (its last screen attempt) gave the label its three evaluation slots give:
    the candidates compared (both resolved), how many agree, the ids that disagree, and the evaluation labels."""
    screens = slot_history(a for a in attempts if a.role == SCREEN)
    compared, disagree = 0, []
    for candidate in protocol.candidates.values():
        history = screens.get(candidate.screen_slot_id, [])
        state = truth[candidate.candidate_id].state
        if not history or history[-1].state == UNRESOLVED or state == UNRESOLVED:
            continue
        compared += 1
        if history[-1].state != state:
            disagree.append(candidate.candidate_id)
    labels = Counter(t.state for t in truth.values())
    return {
        "candidates": len(truth),
        "compared": compared,
        "agree": compared - len(disagree),
        "disagreeing_candidates": disagree,
        "evaluation_labels": {s: labels[s] for s in (*OUTCOME_ORDER, UNRESOLVED) if labels[s]},
    }


def agreement_text(agreement: dict[str, Any]) -> str:
    """The card's sentence when screens and evaluations agree, else how many and which disagree."""
    labels = ", ".join(f"{n} {s}" for s, n in agreement["evaluation_labels"].items())
    head = f"{agreement['candidates']} evaluation candidates: {labels}. "
    if not agreement["disagreeing_candidates"] and agreement["compared"] == agreement["candidates"]:
        return head + (
            "Screens and separate evaluation repetitions agree in this panel "
            f"({agreement['agree']} of {agreement['candidates']} screens give the repeated evaluation label)."
        )
    ids = ", ".join(agreement["disagreeing_candidates"]) or "none"
    return head + (
        f"Screens and separate evaluation repetitions agree for {agreement['agree']} of {agreement['compared']} "
        f"candidates with both resolved; they disagree for: {ids}."
    )
