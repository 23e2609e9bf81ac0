"""``rlvrambench compare A B``: two sets of transfer predictions compared on the same queries, per metric.

Argument parsing and printing only; :mod:`rlvrambench_hf.transfer.compare` does the work.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import quote
from ..transfer.key import ALL_TRACKS, TRACKS
from ..transfer.tasks import RULES
from .shared.common import PREDICTIONS_FORMATS, checked_source, choices_text
from .shared.intervals import add_interval_options, interval_legend, interval_options_of

RULE_PREFIX = "rule:"


def add_compare(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Score A and B on the same queries and give, overall and per track, the difference A - B in "
        "each reported metric (recall, approval precision, approvals of within-margin, memory-failure and "
        "above-margin targets, rejected within-margin targets, correct labels) with its paired bootstrap interval "
        "over target configurations, and one line reading it. Never one combined number."
    )
    for name in ("a", "b"):
        p.add_argument(
            name,
            metavar=name.upper(),
            help=f"a predictions file ({PREDICTIONS_FORMATS}) or {RULE_PREFIX}NAME for a reference rule "
            f"({choices_text(RULES)})",
        )
    p.add_argument("--track", help=f"the track to compare: {choices_text((*TRACKS, ALL_TRACKS))} (default all)")
    p.add_argument("--output", metavar="FILE.json", help="also write the comparison (JSON)")
    add_interval_options(p, flag="also give each side's own interval beside the difference's", always=True)
    p.set_defaults(handler=run_compare)


def run_compare(args: argparse.Namespace) -> int:
    from .. import transfer
    from ..data.tables.output import write_json
    from ..errors import InputError
    from ..transfer.compare import compare_predictions, readings

    files = {label: value for label, value in (("A", args.a), ("B", args.b)) if not value.startswith(RULE_PREFIX)}
    source = checked_source(args, [args.output], files)
    track = transfer.check_track(args.track)
    options = interval_options_of(args)
    assert options is not None  # always computed here
    tables = transfer.load_transfer_tables(source)
    key = transfer.scoring_key(tables["queries"], tables["outcomes"], track)
    predicted, names = [], []
    for value in (args.a, args.b):
        if value.startswith(RULE_PREFIX):
            rule = transfer.check_rule(value[len(RULE_PREFIX) :])
            rows = transfer.reference_predictions(tables["queries"], tables["outcomes"], rule, track)
            ids, states, name = rows.column("query_id"), rows.column("predicted_state"), rule
        else:
            ids, states = transfer.read_predictions(value)
            name = Path(value).name if value != "-" else "standard input"
        predicted.append(transfer.align_predictions(key, ids, states, f"predictions {name}"))
        names.append(name)
    if names[0] == names[1]:
        raise InputError(f"A and B are both named {quote(names[0])}; compare two different sets of predictions")
    comparison = compare_predictions(
        key, (predicted[0], predicted[1]), (names[0], names[1]), options, marginal=args.intervals
    )
    if args.output:
        write_json(args.output, comparison)
    print(f"{names[0]} (A) against {names[1]} (B), {track}: the difference A - B per metric")
    print("\n".join(readings(comparison)))
    print(interval_legend(comparison["interval_settings"]))
    return 0
