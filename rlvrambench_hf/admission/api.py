"""Loading helpers and the public entry points: the only part of the admission package that reads files."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..data.schema.registry import get_spec
from ..data.sources.resolve import SourceLike, open_source
from ..errors import InputError
from ..scoring.intervals import IntervalsLike, interval_options
from .attempts import ATTEMPTS_CONFIG, Attempt, attempts_from_records, validate_attempts
from .intervals import add_decision_intervals, add_replay_intervals
from .policy import DECISIONS, builtin_rule, load_policy
from .protocol import PROTOCOL_PATH, Protocol, parse_protocol
from .report import build_report, inputs_for_rule
from .scoring import case_metrics, summarize
from .truth import Truth, candidate_truth

DEFAULT_RULES = ("source_copy", "headroom_guard", "direct_screen")


def load_protocol(source: SourceLike = None, revision: str | None = None) -> Protocol:
    """The validated protocol of a release."""
    return parse_protocol(open_source(source, revision).read_json(PROTOCOL_PATH))


def load_attempts(
    source: SourceLike = None, revision: str | None = None, *, path: str | os.PathLike | None = None
) -> tuple[Attempt, ...]:
    """The attempt records: the typed ``admission_attempts`` config, or a user's ``.json`` / ``.csv`` file."""
    if path is not None:
        return read_attempts_file(path)
    from ..data.tables.reader import load_table

    table = load_table(ATTEMPTS_CONFIG, open_source(source, revision), decode=True)
    return attempts_from_records(table.to_pylist(), get_spec(ATTEMPTS_CONFIG).path)


def read_attempts_file(path: str | os.PathLike) -> tuple[Attempt, ...]:
    """Attempts from a JSON list of records (like ``attempts.json``) or a CSV laid out like ``attempts.csv``."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"attempts file {file} does not exist")
    suffix = file.suffix.lower()
    if suffix == ".json":
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"{file}: not valid JSON ({exc})") from None
        return attempts_from_records(data, str(file))
    if suffix == ".csv":
        from ..data.tables.reader import decode_labels, read_typed_file

        spec = get_spec(ATTEMPTS_CONFIG)
        table = decode_labels(read_typed_file(file, spec, name=str(file)), spec)
        return attempts_from_records(table.to_pylist(), str(file))
    raise InputError(f"attempts file {file} must end in .json or .csv")


def policy_inputs(source: SourceLike, rule: str, *, revision: str | None = None) -> dict:
    """What the published rule ``rule`` may see (never evaluation records), as a JSON-ready dict."""
    builtin_rule(rule)
    return inputs_for_rule(load_protocol(source, revision), rule)


def replay_report(
    source: SourceLike = None,
    revision: str | None = None,
    *,
    rules: Sequence[str] = DEFAULT_RULES,
    policy: Any = None,
    budgets: Sequence[int] = (0, 1, 2, 3),
    attempts_path: str | os.PathLike | None = None,
    intervals: IntervalsLike = None,
) -> dict:
    """The whole score file: every rule in ``rules``, then ``policy`` (an object or ``"module:attr"``), if given;
    with ``intervals``, each row's range over cases (:mod:`.intervals`)."""
    options = interval_options(intervals)
    policies = [builtin_rule(r) for r in ([rules] if isinstance(rules, str) else rules)]
    if policy is not None:
        policies.append(load_policy(policy) if isinstance(policy, str) else policy)
    src = open_source(source, revision)
    protocol = load_protocol(src)
    attempts = load_attempts(src, path=attempts_path)
    report = build_report(protocol, attempts, policies, budgets)
    return report if options is None else add_replay_intervals(report, options)


_TRUTH_CACHE: dict[tuple[str, str], tuple[Protocol, dict[str, Truth]]] = {}


def evaluation_truth(source: SourceLike = None, revision: str | None = None) -> tuple[Protocol, dict[str, Truth]]:
    """The protocol and the candidates' evaluation truth of a release (validated; cached per source)."""
    src = open_source(source, revision)
    key = (type(src).__name__, src.label)
    if key not in _TRUTH_CACHE:
        protocol = load_protocol(src)
        attempts = load_attempts(src)
        validate_attempts(protocol, attempts)
        _TRUTH_CACHE[key] = (protocol, candidate_truth(protocol, attempts))
    return _TRUTH_CACHE[key]


def score_decisions(
    candidate_ids: Sequence[str],
    decisions: Sequence[str],
    *,
    source: SourceLike = None,
    revision: str | None = None,
    intervals: IntervalsLike = None,
) -> dict:
    """Score final approve/reject/abstain decisions against the hidden evaluation truth.

    Every case that appears must be complete. Returns the summary keys (macro recall and sums) and ``per_case``
    (``case_id``, ``decisions``, ``metrics``), the same numbers as the replay's per-case metrics; with
    ``intervals``, the range over cases (:mod:`.intervals`).
    """
    options = interval_options(intervals)
    ids, chosen = _checked_lists(candidate_ids, decisions)
    protocol, truth = evaluation_truth(source, revision)
    case_of = protocol.case_of
    for cid in ids:
        if cid not in case_of:
            raise InputError(f"unknown candidate id {cid!r}")
    given = dict(zip(ids, chosen))
    per_case = []
    for case in protocol.cases:
        present = [c for c in case.candidate_ids if c in given]
        if not present:
            continue
        missing = [c for c in case.candidate_ids if c not in given]
        if missing:
            raise InputError(f"case {case.case_id} is incomplete: no decision for {', '.join(missing)}")
        case_decisions = {c: given[c] for c in case.candidate_ids}
        per_case.append(
            {
                "case_id": case.case_id,
                "decisions": case_decisions,
                "metrics": case_metrics(case.candidate_ids, case_decisions, truth),
            }
        )
    scores = {**summarize(per_case, with_costs=False), "per_case": per_case}
    return scores if options is None else add_decision_intervals(scores, options)


def _checked_lists(candidate_ids: Any, decisions: Any) -> tuple[list[str], list[str]]:
    for name, value in (("candidate_ids", candidate_ids), ("decisions", decisions)):
        if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
            raise InputError(f"{name} must be a list")
    candidate_ids, decisions = list(candidate_ids), list(decisions)
    if len(candidate_ids) != len(decisions):
        raise InputError(f"{len(candidate_ids)} candidate ids but {len(decisions)} decisions")
    if not candidate_ids:
        raise InputError("no decisions to score")
    seen: set[str] = set()
    for cid, decision in zip(candidate_ids, decisions):
        if not isinstance(cid, str):
            raise InputError(f"candidate id {cid!r} is not a string")
        if cid in seen:
            raise InputError(f"duplicate candidate id {cid}")
        seen.add(cid)
        if decision not in DECISIONS:
            raise InputError(f"decision {decision!r} for {cid} is not one of {', '.join(DECISIONS)}")
    return candidate_ids, decisions
