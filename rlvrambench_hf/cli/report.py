"""``rlvrambench report --output DIR``: write the HTML report of a release."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help="write an HTML report (index.html and its figures) to DIR")
    parser.add_argument("--output", required=True, metavar="DIR", help="folder to write (created if missing)")
    parser.add_argument("--policy", metavar="MODULE:ATTR", help="also replay this admission policy")
    parser.set_defaults(handler=run_report)


def run_report(args: argparse.Namespace) -> int:
    from ..reporting.report import write_report
    from ._common import source_of

    index = write_report(args.output, source_of(args), policy=args.policy)
    print(f"wrote {index}")
    return 0
