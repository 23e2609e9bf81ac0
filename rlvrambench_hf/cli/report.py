"""``rlvrambench report --output DIR``: write the HTML report of a release (and of your predictions)."""

from __future__ import annotations

import argparse

from ..errors import InputError, quote
from ..followup.core import STUDIES
from .shared.common import PREDICTIONS_FORMATS, add_timeout, choices_text


def add_report(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Write a self-contained HTML report of the release to DIR: provenance (package version, "
        "source and commit, time of the run), the configs, the figures, the transfer scores of the reference "
        "rules per scope with confusion matrices and the leaderboard, the admission replay (recall against budget "
        "and against the attempts spent), the follow-up scores and the estimator comparison with model families "
        "held out — with your own predictions and policy beside the reference ones when given, and with "
        "--planned the advisor's verdict on each planned run. Needs matplotlib: pip install 'rlvrambench-hf[plots]'."
    )
    parser.add_argument("--output", required=True, metavar="DIR", help="folder to write (created if missing)")
    parser.add_argument(
        "--predictions",
        metavar="FILE",
        help=f"your transfer predictions (query_id,predicted_state), scored beside the reference rules: "
        f"{PREDICTIONS_FORMATS}",
    )
    parser.add_argument(
        "--followup-predictions",
        action="append",
        default=[],
        metavar="STUDY=FILE",
        help=f"your predictions of a follow-up study ({choices_text(STUDIES)}), scored beside the frozen "
        "methods (repeatable, one per study)",
    )
    parser.add_argument("--policy", metavar="MODULE:ATTR", help="also replay this admission policy of yours")
    parser.add_argument(
        "--planned",
        metavar="F.yaml|F.json|F.csv",
        help="planned runs (as estimate advise --planned takes them): a section with the verdict of each",
    )
    add_timeout(parser, "policy")
    parser.set_defaults(handler=run_report)


def followup_files(pairs: list[str]) -> dict[str, str]:
    """``["larger_model=a.csv"]`` → ``{"larger_model": "a.csv"}``; a bad pair or study is a one-line error."""
    files: dict[str, str] = {}
    for pair in pairs:
        study, sep, path = pair.partition("=")
        if not sep or not path:
            raise InputError(f"--followup-predictions {quote(pair)} must be STUDY=FILE")
        if study not in STUDIES:
            raise InputError(f"--followup-predictions: unknown study {quote(study)}; studies: {', '.join(STUDIES)}")
        if study in files:
            raise InputError(f"--followup-predictions: study {study} is given twice")
        files[study] = path
    return files


def run_report(args: argparse.Namespace) -> int:
    from ..reporting.plots import require_matplotlib
    from ..reporting.report import write_report
    from .shared.common import source_of

    followup = followup_files(args.followup_predictions)
    require_matplotlib()
    index = write_report(
        args.output,
        source_of(args),
        policy=args.policy,
        predictions=args.predictions,
        followup_predictions=followup,
        planned=args.planned,
        timeout=args.timeout,
    )
    print(f"wrote {index}")
    return 0
