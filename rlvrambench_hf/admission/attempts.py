"""Attempt records of the admission panel: one per invocation, from ``attempts.json`` or the typed config.

:func:`attempts_from_records` accepts the rows of either form (JSON objects, or the typed
``admission_attempts`` table as Python rows) and yields identical :class:`Attempt` values;
:func:`validate_attempts` checks them against the protocol. Every violation is a one-line
:class:`~rlvrambench_hf.errors.InputError` naming the record.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..data.registry import OUTCOME_LABELS, UNRESOLVED
from ..errors import InputError
from .protocol import REPAIR_REASONS, Protocol

STATES = OUTCOME_LABELS + (UNRESOLVED,)
COMPLETED_STATES = ("within_margin", "above_margin")
MAX_ATTEMPTS_PER_SLOT = 2


@dataclass(frozen=True)
class Attempt:
    """The fields of one invocation that validation, truth and replay read."""

    attempt_id: str
    attempt_index: int
    slot_id: str
    candidate_id: str | None
    case_id: str | None
    role: str
    state: str
    known_memory_failure: bool
    peak_mib: float | None
    completed_final_operations: bool
    repair_reason: str | None


_REQUIRED_TEXT = ("attempt_id", "slot_id", "role", "state")
_OPTIONAL_TEXT = ("candidate_id", "case_id", "repair_reason")
_FLAGS = ("known_memory_failure", "completed_final_operations")


def attempts_from_records(records: Any, name: str) -> tuple[Attempt, ...]:
    """Attempts from a list of record mappings (``{"attempts": [...]}`` is accepted too); ``name`` is the file."""
    if isinstance(records, dict) and isinstance(records.get("attempts"), list):
        records = records["attempts"]
    if not isinstance(records, list):
        raise InputError(f"{name}: attempts must be a JSON list of records")
    return tuple(_attempt(record, i, name) for i, record in enumerate(records))


def _attempt(record: Any, index: int, name: str) -> Attempt:
    label = f"{name}: record #{index + 1}"
    if not isinstance(record, Mapping):
        raise InputError(f"{label} is not an object")
    if isinstance(record.get("attempt_id"), str) and record["attempt_id"]:
        label = f"{name}: attempt {record['attempt_id']}"
    values: dict[str, Any] = {}
    for key in _REQUIRED_TEXT:
        value = record.get(key)
        if not isinstance(value, str) or not value:
            raise InputError(f"{label}: {key} must be a non-empty string")
        values[key] = value
    for key in _OPTIONAL_TEXT:
        value = record.get(key)
        if value is not None and not isinstance(value, str):
            raise InputError(f"{label}: {key} must be a string or null")
        values[key] = value or None
    for key in _FLAGS:
        if not isinstance(record.get(key), bool):
            raise InputError(f"{label}: {key} must be true or false")
        values[key] = record[key]
    index_value = record.get("attempt_index")
    if not isinstance(index_value, int) or isinstance(index_value, bool):
        raise InputError(f"{label}: attempt_index must be an integer")
    peak = record.get("peak_mib")
    if peak is not None and (not isinstance(peak, (int, float)) or isinstance(peak, bool)):
        raise InputError(f"{label}: peak_mib must be a number or null")
    return Attempt(attempt_index=index_value, peak_mib=None if peak is None else float(peak), **values)


def validate_attempts(protocol: Protocol, attempts: Sequence[Attempt]) -> None:
    """Refuse attempts that break the protocol: ids, slots, roles, states, peaks, indices and replacements."""
    slots = protocol.slot_roles
    case_of = protocol.case_of
    seen: set[str] = set()
    for a in attempts:
        where = f"attempt {a.attempt_id}"
        if a.attempt_id in seen:
            raise InputError(f"{where}: duplicate attempt id")
        seen.add(a.attempt_id)
        if a.slot_id not in slots:
            raise InputError(f"{where}: unknown slot {a.slot_id}")
        role, candidate = slots[a.slot_id]
        if a.role != role:
            raise InputError(f"{where}: role {a.role!r} but slot {a.slot_id} is a {role} slot")
        if a.candidate_id is not None and a.candidate_id != candidate:
            raise InputError(f"{where}: candidate {a.candidate_id} but slot {a.slot_id} belongs to {candidate}")
        if a.case_id is not None and a.case_id != case_of[candidate]:
            raise InputError(f"{where}: case {a.case_id} but slot {a.slot_id} belongs to {case_of[candidate]}")
        _check_outcome(a, protocol.memory_limit_mib)
    replacements = 0
    for slot, slot_attempts in slot_history(attempts).items():
        indices = [a.attempt_index for a in slot_attempts]
        if indices != list(range(1, len(indices) + 1)):
            raise InputError(
                f"attempt {slot_attempts[-1].attempt_id}: attempt indices of slot {slot} are "
                f"{indices}, expected 1, 2, ..."
            )
        if len(slot_attempts) > MAX_ATTEMPTS_PER_SLOT:
            raise InputError(
                f"attempt {slot_attempts[-1].attempt_id}: slot {slot} has {len(slot_attempts)} "
                f"attempts, at most {MAX_ATTEMPTS_PER_SLOT} are allowed"
            )
        for previous, replacement in zip(slot_attempts, slot_attempts[1:]):
            _check_replacement(previous, replacement)
            replacements += 1
            if replacements > protocol.max_replacements:
                raise InputError(
                    f"attempt {replacement.attempt_id}: more than {protocol.max_replacements} replacements in all"
                )


def _check_outcome(a: Attempt, limit: int) -> None:
    where = f"attempt {a.attempt_id}"
    if a.state not in STATES:
        raise InputError(f"{where}: state {a.state!r} is not one of {', '.join(STATES)}")
    if a.peak_mib is not None and not math.isfinite(a.peak_mib):
        raise InputError(f"{where}: peak_mib {a.peak_mib} is not finite")
    if a.state not in COMPLETED_STATES:
        return
    if a.peak_mib is None or a.peak_mib <= 0:
        raise InputError(f"{where}: completed state {a.state} needs a finite positive peak_mib")
    if (a.peak_mib <= limit) != (a.state == "within_margin"):
        side = "above" if a.peak_mib > limit else "at or below"
        raise InputError(f"{where}: state {a.state} but peak {a.peak_mib:g} MiB is {side} the {limit} MiB limit")
    if not a.completed_final_operations:
        raise InputError(f"{where}: completed state {a.state} without completed final operations")


def _check_replacement(previous: Attempt, replacement: Attempt) -> None:
    where = f"attempt {replacement.attempt_id}"
    if previous.state != UNRESOLVED:
        raise InputError(
            f"{where}: replaces attempt {previous.attempt_id}, which is {previous.state}, not {UNRESOLVED}"
        )
    if previous.known_memory_failure:
        raise InputError(f"{where}: replaces attempt {previous.attempt_id}, which has a known memory failure")
    if previous.repair_reason not in REPAIR_REASONS:
        raise InputError(
            f"{where}: replaces attempt {previous.attempt_id} whose repair_reason "
            f"{previous.repair_reason!r} is not one of {', '.join(REPAIR_REASONS)}"
        )


def slot_history(attempts: Iterable[Attempt]) -> dict[str, list[Attempt]]:
    """Slot id → its attempts in attempt-index order."""
    by_slot: dict[str, list[Attempt]] = defaultdict(list)
    for a in attempts:
        by_slot[a.slot_id].append(a)
    return {slot: sorted(items, key=lambda a: a.attempt_index) for slot, items in by_slot.items()}
