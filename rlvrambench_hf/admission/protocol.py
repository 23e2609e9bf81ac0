"""The frozen admission protocol (``benchmark/decision/protocol.json``): typed and validated.

:func:`parse_protocol` turns the decoded JSON into a :class:`Protocol` and refuses, with a one-line
:class:`~rlvrambench_hf.errors.InputError`, anything the replay could not rely on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InputError, quote

PROTOCOL_VERSION = "decision-1.0"
PROTOCOL_PATH = "benchmark/decision/protocol.json"
SCREEN, EVALUATION = "screen", "evaluation"
ROLES = (SCREEN, EVALUATION)
EVALUATION_SLOTS = 3
#: The protocol's predefined setup failures that permit one unchanged replacement of a slot.
REPAIR_REASONS = (
    "missing_dependency_or_data",
    "incorrect_gpu_visibility",
    "port_binding_collision",
    "corrupted_artifact_writing",
)
DEFAULT_MAX_REPLACEMENTS = 8


@dataclass(frozen=True)
class Donor:
    """Existing measurements of the source configuration a candidate was derived from."""

    configuration_id: str
    observed_state: str
    max_completed_run_peak_mib: float | None
    recorded_attempt_ids: tuple[str, ...]


@dataclass(frozen=True)
class Candidate:
    """One candidate setting with its designated screen slot and its three evaluation slots."""

    candidate_id: str
    configuration_level: str
    actor_micro_batch: int
    reservation: float
    screen_slot_id: str
    evaluation_slot_ids: tuple[str, ...]


@dataclass(frozen=True)
class Case:
    """One model–workload case: its candidates, their donors and the frozen query order."""

    case_id: str
    model_family: str
    dataset: str
    candidates: tuple[Candidate, ...]
    donors: Mapping[str, Donor]
    query_order: tuple[str, ...]

    @property
    def candidate_ids(self) -> tuple[str, ...]:
        return tuple(c.candidate_id for c in self.candidates)


@dataclass(frozen=True)
class Protocol:
    """The frozen protocol: cases, seeds, limits, budgets and the rule texts."""

    version: str
    cases: tuple[Case, ...]
    screen_seed: int
    evaluation_seeds: tuple[int, ...]
    memory_limit_mib: int
    donor_guard_mib: int
    budgets: tuple[int, ...]
    max_replacements: int
    texts: Mapping[str, str]

    @property
    def candidates(self) -> dict[str, Candidate]:
        return {c.candidate_id: c for case in self.cases for c in case.candidates}

    @property
    def case_of(self) -> dict[str, str]:
        """Candidate id → case id."""
        return {c.candidate_id: case.case_id for case in self.cases for c in case.candidates}

    @property
    def slot_roles(self) -> dict[str, tuple[str, str]]:
        """Slot id → (role, candidate id)."""
        out: dict[str, tuple[str, str]] = {}
        for candidate in self.candidates.values():
            out[candidate.screen_slot_id] = (SCREEN, candidate.candidate_id)
            for slot in candidate.evaluation_slot_ids:
                out[slot] = (EVALUATION, candidate.candidate_id)
        return out


TEXT_FIELDS = (
    "objective",
    "decision_rule",
    "target_truth",
    "cost_scope",
    "interpretation",
    "missing_outcomes",
    "failure_policy",
    "stopping_rule",
)


def parse_protocol(data: Any) -> Protocol:
    """The validated :class:`Protocol` of decoded ``protocol.json`` content."""
    _expect(isinstance(data, dict), "the protocol is not a JSON object")
    version = data.get("protocol_version")
    _expect(version == PROTOCOL_VERSION, f"protocol_version is {version!r}, expected {PROTOCOL_VERSION!r}")
    screen_seed = _integer(data, "screen_seed")
    seeds = data.get("evaluation_seeds")
    _expect(isinstance(seeds, list) and all(_is_int(s) for s in seeds), "evaluation_seeds must be a list of integers")
    _expect(
        len(seeds) == EVALUATION_SLOTS and len(set(seeds)) == EVALUATION_SLOTS,
        f"evaluation_seeds must hold exactly {EVALUATION_SLOTS} distinct seeds, got {seeds}",
    )
    _expect(screen_seed not in seeds, f"the screen seed {screen_seed} is also an evaluation seed")
    limit = _integer(data, "memory_limit_mib")
    _expect(limit > 0, "memory_limit_mib must be positive")
    guard = _integer(data, "additional_donor_guard_mib")
    _expect(guard >= 0, "additional_donor_guard_mib must be non-negative")
    budgets = data.get("budgets_per_case")
    _expect(
        isinstance(budgets, list) and budgets and all(_is_int(b) and b >= 0 for b in budgets),
        f"budgets_per_case must be non-negative integers, got {quote(budgets)}",
    )
    resource_cap = data.get("resource_cap") or {}
    _expect(isinstance(resource_cap, dict), "resource_cap must be an object")
    cap = resource_cap.get("max_repair_allocations", DEFAULT_MAX_REPLACEMENTS)
    _expect(_is_int(cap) and cap >= 0, "resource_cap.max_repair_allocations must be a non-negative integer")
    cases_data = data.get("cases")
    _expect(isinstance(cases_data, list) and cases_data, "the protocol has no cases")
    cases = tuple(_parse_case(c, i) for i, c in enumerate(cases_data))
    _check_unique(cases)
    texts = {k: data[k] for k in TEXT_FIELDS if isinstance(data.get(k), str)}
    return Protocol(version, cases, screen_seed, tuple(seeds), limit, guard, tuple(budgets), cap, texts)


def _parse_case(data: Any, index: int) -> Case:
    _expect(isinstance(data, dict) and isinstance(data.get("case_id"), str), f"case #{index + 1} has no case_id")
    case_id = data["case_id"]
    where = f"case {case_id}"
    raw_candidates = data.get("candidates")
    _expect(isinstance(raw_candidates, list) and raw_candidates, f"{where}: no candidates")
    candidates = tuple(_parse_candidate(c, where) for c in raw_candidates)
    ids = [c.candidate_id for c in candidates]
    order = data.get("query_order")
    _expect(
        isinstance(order, list) and sorted(order) == sorted(ids) and len(set(order)) == len(order),
        f"{where}: query_order must list each of its candidates exactly once",
    )
    donors_data = data.get("donors", {})
    _expect(
        isinstance(donors_data, dict) and sorted(donors_data) == sorted(ids),
        f"{where}: donors must cover exactly its candidates",
    )
    donors = {cid: _parse_donor(donors_data[cid], f"{where}, donor of {cid}") for cid in ids}
    return Case(
        case_id, str(data.get("model_family", "")), str(data.get("dataset", "")), candidates, donors, tuple(order)
    )


def _parse_candidate(data: Any, where: str) -> Candidate:
    _expect(isinstance(data, dict) and isinstance(data.get("candidate_id"), str), f"{where}: candidate without id")
    cid = data["candidate_id"]
    slots = data.get("slot_ids")
    _expect(
        isinstance(slots, dict) and set(slots) == set(ROLES),
        f"candidate {cid}: slot_ids must have exactly the roles {' and '.join(ROLES)}",
    )
    screen, evaluation = slots[SCREEN], slots[EVALUATION]
    _expect(_str_list(screen) and len(screen) == 1, f"candidate {cid}: exactly one screen slot is required")
    _expect(
        _str_list(evaluation) and len(evaluation) == EVALUATION_SLOTS,
        f"candidate {cid}: exactly {EVALUATION_SLOTS} evaluation slots are required",
    )
    reservation = data.get("reservation")
    micro_batch = data.get("actor_micro_batch")
    _expect(
        isinstance(reservation, (int, float)) and not isinstance(reservation, bool) and _is_int(micro_batch),
        f"candidate {cid}: actor_micro_batch and reservation must be numbers",
    )
    return Candidate(
        cid, str(data.get("configuration_level", "")), micro_batch, float(reservation), screen[0], tuple(evaluation)
    )


def _parse_donor(data: Any, where: str) -> Donor:
    _expect(isinstance(data, dict), f"{where}: not an object")
    state, ids = data.get("observed_state"), data.get("recorded_attempt_ids", [])
    _expect(isinstance(state, str), f"{where}: observed_state missing")
    _expect(_str_list(ids), f"{where}: recorded_attempt_ids must be a list of strings")
    peak = data.get("max_completed_run_peak_mib")
    if peak in (None, ""):
        value = None
    else:
        try:
            value = float(peak)
        except (TypeError, ValueError):
            raise InputError(f"protocol: {where}: max_completed_run_peak_mib {quote(peak)} is not a number") from None
        _expect(math.isfinite(value) and value > 0, f"{where}: max_completed_run_peak_mib must be finite, positive")
    return Donor(str(data.get("configuration_id", "")), state, value, tuple(ids))


def _check_unique(cases: tuple[Case, ...]) -> None:
    seen_cases: set[str] = set()
    seen_candidates: set[str] = set()
    slot_role: dict[str, str] = {}
    for case in cases:
        _expect(case.case_id not in seen_cases, f"duplicate case id {case.case_id}")
        seen_cases.add(case.case_id)
        for c in case.candidates:
            _expect(c.candidate_id not in seen_candidates, f"duplicate candidate id {c.candidate_id}")
            seen_candidates.add(c.candidate_id)
            for role, slot in [(SCREEN, c.screen_slot_id)] + [(EVALUATION, s) for s in c.evaluation_slot_ids]:
                if slot in slot_role:
                    both = "two roles" if slot_role[slot] != role else "two places"
                    raise InputError(f"protocol: slot {slot} appears in {both}")
                slot_role[slot] = role


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _integer(data: dict[str, Any], key: str) -> int:
    value = data.get(key)
    _expect(_is_int(value), f"{key} must be an integer, got {quote(value)}")
    return int(value)  # type: ignore[arg-type]


def _expect(condition: object, message: str) -> None:
    if not condition:
        raise InputError(f"protocol: {message}")
