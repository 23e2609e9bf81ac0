"""Transfer-task commands: ``inputs`` (also the admission panel's policy inputs), ``baseline`` and ``evaluate``.

Argument parsing and printing only; the work is done by :mod:`rlvrambench_hf.transfer` (imported when a command
runs, so that other commands do not pay for numpy/pyarrow).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..transfer.key import ALL_TRACKS, TRACKS
from ..transfer.tasks import RULES
from .shared.common import PREDICTIONS_FORMATS, checked_source, choices_text, format_table
from .shared.intervals import add_interval_options, interval_legend, interval_options_of, units_cell, with_interval

if TYPE_CHECKING:
    from ..data.sources.base import Source

_TRACK_HELP = f"the track to select: {choices_text((*TRACKS, ALL_TRACKS))} (default: {ALL_TRACKS})"


def add_inputs(p: argparse.ArgumentParser) -> None:
    from ..admission.policy import RULES as ADMISSION_RULES  # here: evaluate and baseline do not load admission

    p.description = (
        "Write one object per task: allowed sources (settings and measured "
        "outcome) and the queries with their target settings (no target outcome). With "
        "--admission, write what an admission-panel policy may see under --rule instead."
    )
    p.add_argument("--track", help=_TRACK_HELP)
    p.add_argument("--admission", action="store_true", help="export admission-panel policy inputs instead")
    p.add_argument(
        "--rule",
        help=f"with --admission: the admission rule whose view to export ({choices_text(ADMISSION_RULES)})",
    )
    p.add_argument(
        "--format",
        choices=("rlvrambench", "upstream"),
        default="rlvrambench",
        help="rlvrambench (default): this package's task objects; upstream: exactly what the reproduction "
        "repository writes (benchmark.py inputs, or with --admission decision_benchmark.py inputs), so a method "
        "written for upstream reads it unchanged",
    )
    p.add_argument(
        "--protocol",
        metavar="FILE",
        help="with --admission --format upstream: the protocol JSON to read (like benchmark/decision/protocol.json); "
        "default: the source's",
    )
    p.add_argument("--output", required=True, metavar="FILE.json", help="JSON file to write")
    p.set_defaults(handler=run_inputs)


def add_baseline(p: argparse.ArgumentParser) -> None:
    p.description = "Write query_id,predicted_state for a built-in rule, sorted by query id."
    p.add_argument("--rule", default=RULES[0], help=f"the reference rule: {choices_text(RULES)} (default: {RULES[0]})")
    p.add_argument("--track", help=_TRACK_HELP)
    p.add_argument("--output", required=True, metavar="FILE.csv", help="CSV file to write")
    p.set_defaults(handler=run_baseline)


def add_evaluate(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Score query_id,predicted_state rows (exactly the selected queries) against the hidden "
        "labels and print a per-track table; --output writes the full score file. The table names the card's "
        "figures as the card counts them: correct, approved_wm / approved_mf / approved_am (within-margin, "
        "memory-failure and above-margin targets approved: the card's 'Within-margin approved', 'Memory failures "
        "approved', 'Above-margin approved'; the score file's approved is their sum), rejected_wm (within-margin "
        "targets rejected), wm_recall and wm_precision (within-margin recall and approval precision)."
    )
    p.add_argument(
        "--predictions",
        required=True,
        metavar="FILE",
        help=f"your predictions, columns query_id,predicted_state: {PREDICTIONS_FORMATS}",
    )
    p.add_argument("--track", help=_TRACK_HELP)
    p.add_argument("--output", metavar="FILE.json", help="also write the score file (JSON)")
    add_interval_options(p)
    p.set_defaults(handler=run_evaluate)


def run_inputs(args: argparse.Namespace) -> int:
    from ..data.tables.output import write_json

    source = checked_source(args, [args.output], {"--protocol": args.protocol})
    if args.protocol is not None and not (args.admission and args.format == "upstream"):
        raise InputError("--protocol applies to --admission --format upstream only")
    if args.admission:
        data = _admission_inputs(args, source)
    elif args.format == "upstream":
        data = _upstream_transfer_inputs(args, source)
    else:
        if args.rule is not None:
            raise InputError("--rule applies to admission inputs only (add --admission)")
        from .. import transfer

        track = transfer.check_track(args.track)
        tables = transfer.load_transfer_tables(source, settings=True)
        data = transfer.task_inputs(tables["queries"], tables["outcomes"], tables["configurations"], track)
        queries = sum(len(t["queries"]) for t in data["tasks"])
        print(f"{len(data['tasks'])} tasks, {queries} queries ({track}) -> {args.output}")
    if args.admission and args.format == "upstream":  # decision_benchmark.py's save(): ASCII-escaped JSON
        from ..data.tables.output import write_atomic

        write_atomic(args.output, json.dumps(data, indent=2, allow_nan=False) + "\n")
    else:
        write_json(args.output, data)
    return 0


def _admission_inputs(args: argparse.Namespace, source: Source) -> object:
    if args.track is not None:
        raise InputError("--track applies to transfer inputs, not to --admission")
    if args.format == "upstream":  # upstream's default rule
        from ..admission.api import upstream_policy_inputs

        rule = args.rule or "source_copy"
        cases = upstream_policy_inputs(source, rule, protocol_path=args.protocol)
        print(f"admission-panel inputs of rule {rule}, {len(cases)} cases (upstream format) -> {args.output}")
        return cases
    if not args.rule:
        raise InputError("--admission needs --rule (the rule whose view to export)")
    from ..admission import policy_inputs

    print(f"admission-panel inputs of rule {args.rule} -> {args.output}")
    return policy_inputs(source, args.rule)


def _upstream_transfer_inputs(args: argparse.Namespace, source: Source) -> object:
    if args.rule is not None:
        raise InputError("--rule applies to admission inputs only (add --admission)")
    from ..transfer import check_track
    from ..transfer.api import upstream_inputs

    track = check_track(args.track)
    tasks = upstream_inputs(source, track=track)
    queries = sum(len(t["targets"]) for t in tasks)
    print(f"{len(tasks)} tasks, {queries} queries ({track}, upstream format) -> {args.output}")
    return tasks


def run_baseline(args: argparse.Namespace) -> int:
    from .. import transfer
    from ..data.tables.output import write_atomic

    source = checked_source(args, [args.output])
    rule, track = transfer.check_rule(args.rule), transfer.check_track(args.track)
    tables = transfer.load_transfer_tables(source)
    predictions = transfer.reference_predictions(tables["queries"], tables["outcomes"], rule, track)
    write_atomic(args.output, transfer.predictions_csv(predictions))
    print(f"{predictions.num_rows} predictions of rule {rule} ({track}) -> {args.output}")
    return 0


def run_evaluate(args: argparse.Namespace) -> int:
    from .. import transfer
    from ..data.tables.output import write_json
    from ..scoring.predictions import STDIN

    source = checked_source(args, [args.output], {"--predictions": args.predictions})
    track = transfer.check_track(args.track)
    options = interval_options_of(args)
    query_ids, states = transfer.read_predictions(args.predictions)
    tables = transfer.load_transfer_tables(source)
    key = transfer.scoring_key(tables["queries"], tables["outcomes"], track)
    origin = "predictions from standard input" if args.predictions == STDIN else f"predictions file {args.predictions}"
    scores = transfer.score_predictions(key, query_ids, states, origin=origin, intervals=options)
    if args.output:
        write_json(args.output, scores)
    print(score_table(scores))
    if options is not None:
        print()
        print(interval_table(scores))
    return 0


#: The figures printed with their intervals.
INTERVAL_COLUMNS = (
    ("wm_recall", "within_margin_recall"),
    ("wm_precision", "within_margin_approval_precision"),
    ("approved_mf", "approved_memory_failure"),
    ("approved_am", "approved_above_margin"),
)


def interval_table(scores: dict[str, Any]) -> str:
    """Per track and overall: the reported figures with their intervals, and how they were made."""
    scopes = [*scores["per_track"].items(), ("overall", scores["overall"])]
    headers = ["scope", "targets", *(h for h, _ in INTERVAL_COLUMNS)]
    rows = [
        [name, units_cell(s["intervals"]), *(with_interval(s[m], s["intervals"], m) for _, m in INTERVAL_COLUMNS)]
        for name, s in scopes
    ]
    return format_table(headers, rows) + "\n" + interval_legend(scores["interval_settings"])


def score_table(scores: dict[str, Any]) -> str:
    """The per-track table of a score file (with the overall row last). Approvals are split by the target's
    observed label, under the names of the card's table (``approved_wm`` is its "Within-margin approved"; the score
    file's ``approved`` is the sum of the three)."""
    columns = (
        ("queries", "queries"),
        ("tasks", "tasks"),
        ("correct", "correct_three_state"),
        ("accuracy", "three_state_accuracy"),
        ("macro_task_acc", "macro_task_three_state_accuracy"),
        ("approved_wm", "approved_within_margin"),
        ("approved_mf", "approved_memory_failure"),
        ("approved_am", "approved_above_margin"),
        ("rejected_wm", "rejected_within_margin"),
        ("wm_recall", "within_margin_recall"),
        ("wm_precision", "within_margin_approval_precision"),
    )
    rows = [[name, *(s.get(key, "") for _, key in columns)] for name, s in scores["per_track"].items()]
    rows.append(["overall", *({**scores["overall"], "tasks": len(scores["per_task"])}.get(k, "") for _, k in columns)])
    return format_table(["scope", *(h for h, _ in columns)], rows)
