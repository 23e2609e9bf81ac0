"""``rlvrambench followup score``: score the frozen methods of a follow-up study (and a user's predictions)."""

from __future__ import annotations

import argparse
import json

from ._common import format_table, source_of


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("followup", help="score the larger-model and expanded-host follow-up studies")
    commands = parser.add_subparsers(dest="followup_command", required=True, metavar="SUBCOMMAND")
    score = commands.add_parser("score", help="score the three frozen methods and, optionally, your predictions")
    score.add_argument("--study", required=True, choices=("larger_model", "expanded_host"))
    score.add_argument(
        "--predictions",
        metavar="F.csv",
        help="configuration_id,predicted_state[,predicted_peak_mib], one row per planned setting",
    )
    score.add_argument("--output", metavar="F.json", help="write the scores as JSON")
    score.set_defaults(handler=run_score)


def run_score(args: argparse.Namespace) -> int:
    from ..data.output import check_outputs, write_atomic
    from ..followup import score_study

    check_outputs([args.output], inputs={"--predictions": args.predictions}, source=source_of(args))
    scores = score_study(args.study, source_of(args), predictions=args.predictions)
    if args.output:
        write_atomic(args.output, json.dumps(scores, indent=2, sort_keys=False) + "\n")
    print(render_scores(args.study, scores))
    return 0


def render_scores(study: str, scores: dict) -> str:
    """The readable form of a follow-up score: panel coverage, then one row per method."""
    lines = [
        f"study {study}: {scores['resolved_configurations']} of {scores['planned_configurations']} configurations "
        f"resolved (full-panel coverage {_rate(scores['full_panel_coverage'])})",
        f"unresolved: {', '.join(scores['unresolved_ids']) or 'none'}",
        "",
    ]
    headers = [
        "method",
        "approved",
        "scored",
        "unscored",
        "unscored_known_failure",
        "unscored_known_above",
        "resolved_correct",
        "approved_memory_failure",
        "approved_above_margin",
        "recall",
        "precision",
        "peak_mae_mib",
    ]
    rows = []
    for method, approval in scores["approvals"].items():
        m = scores["resolved_subset_metrics"][method]
        rows.append(
            [
                method,
                approval["full_panel_approved_configurations"],
                approval["scored_approved_configurations"],
                approval["unscored_approved_configurations"],
                approval["unscored_approvals_with_known_failure"],
                approval["unscored_approvals_with_known_margin_exceedance"],
                f"{m.get('correct_three_state')}/{scores['resolved_configurations']}",
                m.get("approved_memory_failure"),
                m.get("approved_above_margin"),
                _rate(m.get("within_margin_recall")),
                _rate(m.get("within_margin_approval_precision")),
                m.get("completed_peak_mae_mib"),
            ]
        )
    lines.append(format_table(headers, rows))
    for method, approval in scores["approvals"].items():
        if approval["unscored_approved_ids"]:
            lines.append(f"{method} unscored approvals: {', '.join(approval['unscored_approved_ids'])}")
    lines.append("Resolved-subset scores only; read the unscored approvals beside them (null: zero denominator).")
    return "\n".join(lines)


def _rate(value: float | None) -> str:
    return "null" if value is None else f"{value:.3f}"
