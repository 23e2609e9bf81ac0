"""``rlvrambench followup score``: score the frozen methods of a follow-up study (and a user's predictions)."""

from __future__ import annotations

import argparse
from typing import Any, cast

from ..followup.core import STUDIES
from .shared.common import PREDICTIONS_FORMATS, add_group, checked_source, format_table
from .shared.intervals import add_interval_options, interval_legend, interval_options_of, with_interval


def add_followup(parser: argparse.ArgumentParser) -> None:
    commands = add_group(
        parser,
        description="Score the follow-up studies: the three method predictions frozen before execution (donor "
        "copy, component regression, logistic), and your own predictions beside them.",
        metavar="SUBCOMMAND",
    )
    score = commands.add_parser(
        "score",
        help="score the three frozen methods and, optionally, your predictions",
        description="Check the study's seals, then score its frozen methods, the always-failure reference and, "
        "with --predictions, yours: full-panel approvals (scored and unscored) beside the label and peak metrics "
        "of the resolved configurations. Prints the panel's slot facts and GPU costs and one row per method; "
        "--output writes the score file.",
    )
    score.add_argument(
        "--study", required=True, choices=tuple(STUDIES), help=f"the study to score: {', '.join(STUDIES)}"
    )
    score.add_argument(
        "--predictions",
        metavar="FILE",
        help="your predictions: columns configuration_id,predicted_state[,predicted_peak_mib], one row per planned "
        f"configuration; {PREDICTIONS_FORMATS}",
    )
    score.add_argument("--output", metavar="FILE.json", help="also write the scores as JSON")
    add_interval_options(score)
    score.set_defaults(handler=run_score)


def run_score(args: argparse.Namespace) -> int:
    from ..data.tables.output import write_json
    from ..followup import score_study

    source = checked_source(args, [args.output], {"--predictions": args.predictions})
    options = interval_options_of(args)
    scores = score_study(args.study, source, predictions=args.predictions, intervals=options)
    if args.output:
        write_json(args.output, scores)
    print(render_scores(args.study, scores))
    if options is not None:
        print()
        print(range_lines(scores))
    return 0


APPROVED = "full_panel_approved_configurations"


def range_lines(scores: dict[str, Any]) -> str:
    """Per method: approvals over the planned panel and resolved-subset figures with their range over units."""
    headers = ["method", "approved", "recall", "approved_mf", "approved_am"]
    rows = []
    for method, approvals in scores["approvals"].items():
        metrics = scores["resolved_subset_metrics"][method]
        rows.append(
            [
                method,
                with_interval(
                    approvals["full_panel_approved_configurations"],
                    approvals["intervals"],
                    "full_panel_approved_configurations",
                ),
                *(
                    with_interval(metrics.get(n), metrics["intervals"], n)
                    for n in ("within_margin_recall", "approved_memory_failure", "approved_above_margin")
                ),
            ]
        )
    first = next(iter(scores["approvals"].values()))["intervals"]
    return cast(
        "str", format_table(headers, rows) + "\n" + first.get("note", interval_legend(scores["interval_settings"]))
    )


def host_memory_lines(scores: dict[str, Any]) -> list[str]:
    """The host-memory failures named as such, and the preflight this copy of the release lacks (said once)."""
    lines = []
    slots = scores.get("slots") or {}
    if slots.get("host_memory_failures"):
        logged = ", ".join(f"{kind}: {n}" for kind, n in slots["host_memory_failures_logged_as"].items())
        lines.append(
            f"host memory: {slots['host_memory_failures']} unresolved slots are host-memory failures (the scheduler "
            f"ended their allocations OUT_OF_MEMORY; the training log records {logged}); not GPU-memory outcomes"
        )
    if scores.get("preflight"):
        lines.append(scores["preflight"]["note"])
    return lines


def render_scores(study: str, scores: dict[str, Any]) -> str:
    """The readable form of a follow-up score: panel coverage, one row per method, then the notes."""
    from ..reporting.tables import followup_facts, followup_notes, followup_summary, followup_table

    table = followup_table(scores)
    rows = [["null" if value is None else value for value in row] for row in table.rows]
    lines = [
        f"study {study}: {followup_summary(scores)}",
        *followup_facts(scores),
        *host_memory_lines(scores),
        "",
        format_table(table.headers, rows),
    ]
    lines += followup_notes(scores)
    lines.append("null: a rate or error with nothing to measure it on (zero denominator).")
    return "\n".join(lines)
