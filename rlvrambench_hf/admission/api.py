"""Loading helpers and the public entry points: the only part of the admission package that reads files."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict, Unpack

from ..data.schema.registry import get_spec
from ..data.sources.resolve import SourceLike, open_source
from ..errors import InputError, quote
from ..scoring.bounded import DEFAULT_TIMEOUT
from ..scoring.intervals import IntervalsLike, interval_options
from .attempts import ATTEMPTS_CONFIG, Attempt, attempts_from_records, slot_history, validate_attempts
from .intervals import add_decision_intervals, add_replay_intervals
from .policy import DECISIONS, BoundPolicy, builtin_rule, load_policy
from .protocol import PROTOCOL_PATH, SCREEN, Protocol, parse_protocol
from .replay import replay_case
from .report import build_report, check_budgets, inputs_for_rule
from .scoring import case_metrics, summarize
from .truth import Truth, candidate_truth

DEFAULT_RULES = ("source_copy", "headroom_guard", "direct_screen")


def load_protocol(source: SourceLike = None, revision: str | None = None) -> Protocol:
    """The validated protocol of a release."""
    return parse_protocol(open_source(source, revision).read_json(PROTOCOL_PATH))


def read_protocol_file(path: str | os.PathLike[str]) -> Protocol:
    """A protocol from a user's JSON file laid out like ``benchmark/decision/protocol.json`` (upstream's
    ``decision_benchmark.py replay --protocol``); a pipe is read once."""
    label = f"protocol file {Path(path)}"
    try:
        return parse_protocol(protocol_file_content(path))
    except InputError as exc:
        raise InputError(f"{label}: {exc}") from None


def protocol_file_content(path: str | os.PathLike[str]) -> Any:
    """The decoded JSON of a user's protocol file (a pipe is read once)."""
    from ..userfile import binary_head, content_of, parse_json, user_input

    label = f"protocol file {Path(path)}"
    found = user_input(path, label, refused=binary_head)
    return parse_json(found if isinstance(found, bytes) else content_of(found, label), label)


def load_attempts(
    source: SourceLike = None, revision: str | None = None, *, path: str | os.PathLike[str] | None = None
) -> tuple[Attempt, ...]:
    """The attempt records: the typed ``admission_attempts`` config, or a user's ``.json`` / ``.csv`` file."""
    if path is not None:
        return read_attempts_file(path)
    from ..data.tables.reader import load_table

    table = load_table(ATTEMPTS_CONFIG, open_source(source, revision), decode=True)
    return attempts_from_records(table.to_pylist(), get_spec(ATTEMPTS_CONFIG).path)


def read_attempts_file(path: str | os.PathLike[str]) -> tuple[Attempt, ...]:
    """Attempts from a JSON list of records (like ``attempts.json``) or a CSV laid out like ``attempts.csv``; a pipe
    (``<(...)``, ``/dev/stdin``) is read once and recognised by its first character."""
    from ..userfile import binary_head, content_of, parse_json, user_input

    file = Path(path)
    label = f"attempts file {file}"
    found = user_input(path, label, refused=binary_head)
    content = found if isinstance(found, bytes) else None
    suffix = file.suffix.lower()
    if suffix not in (".json", ".csv") and (isinstance(found, bytes) or not suffix):  # a pipe: recognised
        content = content if content is not None else content_of(found, label)
        suffix = ".json" if content.lstrip()[:1] in (b"[", b"{") else ".csv"
    if suffix == ".json":
        content = content if content is not None else content_of(found, label)
        return attempts_from_records(parse_json(content, label), str(file))
    if suffix == ".csv":
        from ..data.tables.reader import decode_labels, read_typed_file

        spec = get_spec(ATTEMPTS_CONFIG)
        table = decode_labels(read_typed_file(content if content is not None else found, spec, name=str(file)), spec)
        return attempts_from_records(table.to_pylist(), str(file))
    raise InputError(f"attempts file {file} must end in .json or .csv")


def upstream_policy_inputs(
    source: SourceLike, rule: str, *, revision: str | None = None, protocol_path: str | os.PathLike[str] | None = None
) -> list[dict[str, Any]]:
    """What ``decision_benchmark.py inputs --rule RULE`` writes (:func:`.report.upstream_inputs_for_rule`), from the
    release's protocol or a protocol file."""
    from .report import upstream_inputs_for_rule

    if protocol_path is None:
        return upstream_inputs_for_rule(open_source(source, revision).read_json(PROTOCOL_PATH), rule)
    try:
        return upstream_inputs_for_rule(protocol_file_content(protocol_path), rule)
    except InputError as exc:
        raise InputError(f"protocol file {Path(protocol_path)}: {exc}") from None


def policy_inputs(source: SourceLike, rule: str, *, revision: str | None = None) -> dict[str, Any]:
    """What the published rule ``rule`` may see (never evaluation records), as a JSON-ready dict."""
    builtin_rule(rule)
    return inputs_for_rule(load_protocol(source, revision), rule)


class ReplayOptions(TypedDict, total=False):
    """How :func:`replay_report` replays (every key optional): ``rules`` (the published rules, default all three),
    ``policy`` (an object or ``"module:attr"``, replayed after them), ``budgets`` (target attempts per case,
    default the protocol's ``budgets_per_case``, 0-3 in the release), ``attempts_path`` (your own attempt records,
    ``.json`` or ``.csv``), ``protocol_path`` (a protocol file instead of the release's), ``intervals`` (each row's
    range over cases, :mod:`.intervals`) and ``timeout`` (seconds each call into ``policy`` may take, default
    300; None: no limit)."""

    rules: Sequence[str]
    policy: Any
    budgets: Sequence[int]
    attempts_path: str | os.PathLike[str] | None
    protocol_path: str | os.PathLike[str] | None
    intervals: IntervalsLike
    timeout: float | None


def replay_report(
    source: SourceLike = None, revision: str | None = None, **options: Unpack[ReplayOptions]
) -> dict[str, Any]:
    """The whole score file: every rule of ``rules``, then ``policy``, at every budget (:class:`ReplayOptions`).

    A policy named by ``"module:attr"`` runs in a child process that is stopped at the time limit, an object you
    pass runs in a worker thread of your process (see :mod:`rlvrambench_hf.scoring.bounded`)."""
    rules, policy = options.get("rules", DEFAULT_RULES), options.get("policy")
    timeout = options.get("timeout", DEFAULT_TIMEOUT)
    ranges = interval_options(options.get("intervals"))
    policies: list[Any] = [builtin_rule(r) for r in ([rules] if isinstance(rules, str) else rules)]
    user_policy = load_policy(policy, timeout=timeout) if isinstance(policy, str) else policy
    src = open_source(source, revision)
    protocol_path = options.get("protocol_path")
    protocol = load_protocol(src) if protocol_path is None else read_protocol_file(protocol_path)
    attempts = load_attempts(src, path=options.get("attempts_path"))
    with contextlib.ExitStack() as bound:
        if user_policy is not None:
            policies.append(bound.enter_context(BoundPolicy(user_policy, timeout=timeout)))
        budgets = options.get("budgets", protocol.budgets)
        report = build_report(protocol, attempts, policies, budgets, candidate_gpu_counts(src))
    return report if ranges is None else add_replay_intervals(report, ranges)


def candidate_gpu_counts(source: SourceLike = None, revision: str | None = None) -> dict[str, int]:
    """Allocated GPUs of each admission candidate (the typed ``admission_candidates`` config)."""
    from ..data.tables.reader import load_table

    table = load_table("admission_candidates", open_source(source, revision))
    return dict(zip(table.column("candidate_id").to_pylist(), table.column("gpu_count").to_pylist()))


_PANEL_CACHE: dict[tuple[str, str], tuple[Protocol, dict[str, Truth], tuple[Attempt, ...]]] = {}


def _panel(source: SourceLike, revision: str | None) -> tuple[Protocol, dict[str, Truth], tuple[Attempt, ...]]:
    """The protocol, the candidates' evaluation truth and the attempts of a release (validated; cached per source)."""
    src = open_source(source, revision)
    key = (type(src).__name__, src.label)
    if key not in _PANEL_CACHE:
        protocol = load_protocol(src)
        attempts = load_attempts(src)
        validate_attempts(protocol, attempts)
        _PANEL_CACHE[key] = (protocol, candidate_truth(protocol, attempts), attempts)
    return _PANEL_CACHE[key]


def evaluation_truth(source: SourceLike = None, revision: str | None = None) -> tuple[Protocol, dict[str, Truth]]:
    """The protocol and the candidates' evaluation truth of a release (validated; cached per source)."""
    protocol, truth, _ = _panel(source, revision)
    return protocol, truth


def score_decisions(
    candidate_ids: Sequence[str],
    decisions: Sequence[str],
    *,
    budget: int | None = None,
    source: SourceLike = None,
    revision: str | None = None,
    intervals: IntervalsLike = None,
) -> dict[str, Any]:
    """Score final approve/reject/abstain decisions against the hidden evaluation truth.

    Every case that appears must be complete. Returns the summary keys (macro recall and sums), the stated
    ``budget`` (target attempts per case the decisions were made at; None: not stated) with the target attempts
    it requests on the scored cases under the protocol's charging rules (``requested_target_attempts``: screens
    in query order until the budget is spent, what each published rule requests; None without a budget), and
    ``per_case`` (``case_id``, ``decisions``, ``metrics``), the same numbers as the replay's per-case metrics;
    with ``intervals``, the range over cases (:mod:`.intervals`).
    """
    options = interval_options(intervals)
    ids, chosen = _checked_lists(candidate_ids, decisions)
    if budget is not None:
        check_budgets([budget])
    protocol, truth, attempts = _panel(source, revision)
    case_of = protocol.case_of
    for cid in ids:
        if cid not in case_of:
            raise InputError(f"unknown candidate id {quote(cid)}")
    given = dict(zip(ids, chosen))
    per_case: list[dict[str, Any]] = []
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
    requested = (
        None if budget is None else requested_attempts(protocol, attempts, [p["case_id"] for p in per_case], budget)
    )
    effort = {"budget_target_attempts_per_case": budget, "requested_target_attempts": requested}
    scores = {**summarize(per_case, with_costs=False), **effort, "per_case": per_case}
    return scores if options is None else add_decision_intervals(scores, options)


def requested_attempts(protocol: Protocol, attempts: Sequence[Attempt], case_ids: Sequence[str], budget: int) -> int:
    """The target attempts a policy that spends ``budget`` requests on the cases ``case_ids``: the replay engine's
    charges for screens requested in the frozen query order (fewer where a case's screens run out)."""
    spender = builtin_rule("direct_screen")
    screen_history = slot_history(a for a in attempts if a.role == SCREEN)
    total = 0
    for case in protocol.cases:
        if case.case_id in case_ids:
            screens = {c.candidate_id: screen_history.get(c.screen_slot_id, []) for c in case.candidates}
            total += replay_case(spender, protocol, case, budget, screens).spent_target_attempts
    return total


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
            raise InputError(f"candidate id {quote(cid)} is not a string")
        if cid in seen:
            raise InputError(f"duplicate candidate id {quote(cid)}")
        seen.add(cid)
        if not isinstance(decision, str) or decision not in DECISIONS:
            raise InputError(f"decision {quote(decision)} for {quote(cid)} is not one of {', '.join(DECISIONS)}")
    return candidate_ids, decisions
