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
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any, get_args, get_type_hints

from ..data.schema.pins import UNRESOLVED
from ..data.schema.registry import get_spec
from ..errors import InputError, quote, summary
from .protocol import REPAIR_REASONS, Protocol

#: The config whose columns type the attempt records.
ATTEMPTS_CONFIG = "admission_attempts"
#: Every state an attempt may have (the class names of the config's ``state`` column).
STATES = get_spec(ATTEMPTS_CONFIG).column("state").labels
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
    elapsed_seconds: float | None = None


# What a JSON value must be for each column kind of the admission_attempts config.
_EXPECTED = {
    "string": ((str,), "a non-empty string"),
    "label": ((str,), "a non-empty string"),
    "int64": ((int,), "an integer"),
    "float64": ((int, float), "a number"),
    "bool": ((bool,), "true or false"),
}


@lru_cache(maxsize=1)
def _field_types() -> list[tuple[str, tuple[type, ...], str, bool]]:
    """(name, accepted Python types, what to say, optional) of each Attempt field, typed by the registry's
    ``admission_attempts`` columns; a field is optional when the dataclass allows None."""
    spec = get_spec(ATTEMPTS_CONFIG)
    hints = get_type_hints(Attempt)
    out = []
    for f in fields(Attempt):
        types, what = _EXPECTED[spec.column(f.name).kind]
        out.append((f.name, types, what, type(None) in get_args(hints[f.name])))
    return out


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
    for key, types, what, optional in _field_types():
        value = record.get(key)
        if optional and value in (None, ""):
            values[key] = None
            continue
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types) or value == "":
            raise InputError(f"{label}: {key} must be {what}{' or null' if optional else ''}, not {quote(value)}")
        values[key] = _number(value, label, key) if isinstance(value, int | float) and float in types else value
    return Attempt(**values)


def _number(value: float, label: str, key: str) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer beyond any float
        raise InputError(f"{label}: {key} {quote(value)} is beyond the range of a number") from None


def validate_attempts(protocol: Protocol, attempts: Sequence[Attempt]) -> None:
    """Refuse attempts that break the protocol: ids, slots, roles, states, peaks, indices and replacements."""
    seen: set[str] = set()
    for a in attempts:
        if a.attempt_id in seen:
            raise InputError(f"attempt {a.attempt_id}: duplicate attempt id")
        seen.add(a.attempt_id)
        _check_slot(a, protocol)
        _check_outcome(a, protocol.memory_limit_mib)
    _check_histories(protocol, attempts)


def _check_slot(a: Attempt, protocol: Protocol) -> None:
    """The attempt's slot exists and agrees with its role, candidate and case."""
    where = f"attempt {a.attempt_id}"
    if a.slot_id not in protocol.slot_roles:
        raise InputError(f"{where}: unknown slot {a.slot_id}")
    role, candidate = protocol.slot_roles[a.slot_id]
    if a.role != role:
        raise InputError(f"{where}: role {quote(a.role)} but slot {a.slot_id} is a {role} slot")
    if a.candidate_id is not None and a.candidate_id != candidate:
        raise InputError(f"{where}: candidate {a.candidate_id} but slot {a.slot_id} belongs to {candidate}")
    case = protocol.case_of[candidate]
    if a.case_id is not None and a.case_id != case:
        raise InputError(f"{where}: case {a.case_id} but slot {a.slot_id} belongs to {case}")


def _check_histories(protocol: Protocol, attempts: Sequence[Attempt]) -> None:
    """Each slot's attempts are numbered 1, 2, ..., within the per-slot cap, and replacements are within the
    protocol's total."""
    replacements = 0
    for slot, slot_attempts in slot_history(attempts).items():
        indices = [a.attempt_index for a in slot_attempts]
        last = slot_attempts[-1].attempt_id
        if indices != list(range(1, len(indices) + 1)):
            raise InputError(
                f"attempt {last}: attempt indices of slot {slot} are {summary(indices, shown=5)}, expected 1, 2, ..."
            )
        if len(slot_attempts) > MAX_ATTEMPTS_PER_SLOT:
            raise InputError(
                f"attempt {last}: slot {slot} has {len(slot_attempts)} attempts, at most {MAX_ATTEMPTS_PER_SLOT} "
                "are allowed"
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
        raise InputError(f"{where}: state {quote(a.state)} is not one of {', '.join(STATES)}")
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
            f"{quote(previous.repair_reason)} is not one of {', '.join(REPAIR_REASONS)}"
        )


def slot_history(attempts: Iterable[Attempt]) -> dict[str, list[Attempt]]:
    """Slot id → its attempts in attempt-index order."""
    by_slot: dict[str, list[Attempt]] = defaultdict(list)
    for a in attempts:
        by_slot[a.slot_id].append(a)
    return {slot: sorted(items, key=lambda a: a.attempt_index) for slot, items in by_slot.items()}
