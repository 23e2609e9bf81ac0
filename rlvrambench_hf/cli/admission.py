"""The ``replay`` command: budgeted replay of the admission rules or of a user policy.

Argument parsing and printing only; :mod:`rlvrambench_hf.admission` does the work (imported when it runs).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..admission.policy import RULES
from ..admission.truth import agreement_text
from ..errors import InputError, quote
from .shared.common import add_timeout, checked_source, choices_text, format_table
from .shared.intervals import add_interval_options, interval_options_of, units_cell, with_interval

RULE_NAMES: tuple[str, ...] = tuple(RULES)


def add_replay(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Replay the published admission rules (default: all three) or one policy object given as "
        "module:attr (or path/to/file.py:attr) at each budget, score the final decisions against the "
        "evaluation truth and write the score file. Prints one line per rule and budget, then the three cost "
        "ledgers (donor evidence, requested target attempts, physical runs with their recorded GPU-seconds) and "
        "the cold-start totals."
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--rule",
        action="append",
        choices=RULE_NAMES,
        help=f"a published rule to replay: {choices_text(RULE_NAMES)} (repeatable; default: all)",
    )
    which.add_argument("--policy", metavar="MODULE:ATTR", help="your policy (an object or a class to instantiate)")
    p.add_argument(
        "--budgets",
        help="comma-separated target attempts per case (default: the protocol's budgets_per_case, 0,1,2,3)",
    )
    p.add_argument(
        "--protocol",
        metavar="FILE",
        help="the frozen protocol as JSON (like benchmark/decision/protocol.json, as upstream's "
        "decision_benchmark.py takes it); default: the source's",
    )
    p.add_argument(
        "--attempts",
        metavar="FILE",
        help="attempt records as JSON (like results/attempts.json) or "
        "CSV (like results/attempts.csv); default: the typed admission_attempts config",
    )
    p.add_argument("--output", required=True, metavar="FILE.json", help="score JSON file to write")
    p.add_argument("--summary", metavar="CSV", help="also write the summary rows as CSV")
    add_interval_options(p)
    add_timeout(p, "policy")
    p.set_defaults(handler=run_replay)


def parse_budgets(text: str) -> tuple[int, ...]:
    """``"0,1,2,3"`` → ``(0, 1, 2, 3)``."""
    parts = [p.strip() for p in text.split(",")]
    if not all(p.isascii() and p.isdigit() for p in parts):  # "²".isdigit() holds, but int("²") fails
        raise InputError(f"--budgets {quote(text)} must be comma-separated non-negative integers")
    if any(len(p) > 18 for p in parts):
        raise InputError(f"--budgets {quote(text)}: a budget of more than 18 digits is beyond any case")
    return tuple(int(p) for p in parts)


def run_replay(args: argparse.Namespace) -> int:
    from .. import admission
    from ..admission.api import ReplayOptions
    from ..data.tables.output import atomic_output, json_text, object_file

    inputs = {"--attempts": args.attempts, "--protocol": args.protocol, "--policy": object_file(args.policy)}
    source = checked_source(args, [args.output, args.summary], inputs)
    replay_options: ReplayOptions = {
        "attempts_path": args.attempts,
        "protocol_path": args.protocol,
        "intervals": interval_options_of(args),
        "timeout": args.timeout,
    }
    if args.budgets is not None:  # else the protocol's budgets_per_case
        replay_options["budgets"] = parse_budgets(args.budgets)
    options = replay_options["intervals"]
    if args.policy:
        replay_options["rules"] = ()
        replay_options["policy"] = admission.load_policy(args.policy, timeout=args.timeout)
    else:
        replay_options["rules"] = tuple(dict.fromkeys(args.rule or RULE_NAMES))
    report = admission.replay_report(source, **replay_options)
    text = json_text(report)
    with atomic_output(args.output) as scores:  # both files appear together, or neither
        scores.write(text)
        if args.summary:
            with atomic_output(args.summary) as summary:
                summary.write(admission.summary_csv(report["summary"]))
    print(summary_table(report["summary"]))
    if options is not None:
        print()
        print(range_table(report["summary"]))
    print()
    print(agreement_text(report["screen_agreement"]))
    print(ledger_text(report))
    return 0


def range_table(summary: list[dict[str, Any]]) -> str:
    """One line per rule × budget: macro recall and approval errors with their range over the cases."""
    headers = ["rule", "budget", "cases", "macro_recall", "approved_mf", "approved_am"]
    names = ("macro_case_within_margin_recall", "approved_memory_failure", "approved_above_margin")
    rows = [
        [s["rule"], s["budget_target_attempts_per_case"], units_cell(s["intervals"])]
        + [with_interval(s[n], s["intervals"], n) for n in names]
        for s in summary
    ]
    note = summary[0]["intervals"].get("note") if summary else None
    return format_table(headers, rows) + ("\n" + note if note else "")


def ledger_text(report: dict[str, Any]) -> str:
    """The three cost ledgers and the cold-start totals, each a titled table."""
    from ..reporting.tables import ledger_tables

    blocks = [f"{title}\n{format_table(table.headers, table.rows)}" for title, table in ledger_tables(report)]
    return "\n" + "\n\n".join(blocks)


def summary_table(summary: list[dict[str, Any]]) -> str:
    """One line per rule × budget: macro recall, approvals, unsuitable approvals and costs."""
    headers = [
        "rule",
        "budget",
        "cases",
        "macro_recall",
        "approved",
        "approved_wm",
        "approved_mf",
        "approved_am",
        "abstentions",
        "spent",
        "donor",
        "cold_start",
    ]
    rows = [
        [
            s["rule"],
            s["budget_target_attempts_per_case"],
            s["cases"],
            s["macro_case_within_margin_recall"],
            s["approved"],
            s["approved_within_margin"],
            s["approved_memory_failure"],
            s["approved_above_margin"],
            s["abstentions"],
            s["spent_target_attempts"],
            s["donor_attempts"],
            s["cold_start_attributed_attempts"],
        ]
        for s in summary
    ]
    return format_table(headers, rows)
