"""``rlvrambench plot feasibility|stages|admission|estimation``: draw a figure of the release to a PNG file."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .shared.common import add_group, add_timeout

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..data.sources.base import Source

EXTRA_NOTE = "Needs matplotlib: pip install 'rlvrambench-hf[plots]'."


def add_plot(parser: argparse.ArgumentParser) -> None:
    kinds = add_group(
        parser,
        description=f"Draw a figure of the release to a PNG file, atomically. {EXTRA_NOTE}",
        metavar="FIGURE",
    )

    feasibility = kinds.add_parser(
        "feasibility",
        help="boundary study: repeated label and peak per setting",
        description="The boundary study's 2-GPU grid (levels c0-c5, one row per model and workload): each cell "
        f"coloured by its repeated label and annotated with the maximum completed peak in GiB. {EXTRA_NOTE}",
    )
    _output(feasibility, "feasibility.png")
    feasibility.set_defaults(handler=run_feasibility)

    stages = kinds.add_parser(
        "stages",
        help="per-stage device-memory peaks against the limit",
        description="Per-stage device-memory peaks of the eligible processes against the 38,912 MiB limit: boxes "
        f"of completed runs, every record as a point, failure-partial records marked. {EXTRA_NOTE}",
    )
    scope = stages.add_mutually_exclusive_group()
    scope.add_argument("--config-id", metavar="ID", help="draw one configuration only")
    scope.add_argument("--study", metavar="S", help="draw one study only (e.g. boundary); default: every process")
    _output(stages, "stages.png")
    stages.set_defaults(handler=run_stages)

    admission = kinds.add_parser(
        "admission",
        help="case-averaged recall against the screening budget or the attempts spent",
        description="Case-averaged within-margin recall of the admission rules at budgets 0-3, against the "
        "per-case budget or against the attempts really spent (target + donor); approvals of memory failures "
        f"or above-margin targets are ringed. {EXTRA_NOTE}",
    )
    admission.add_argument("--policy", metavar="MODULE:ATTR", help="also replay this policy of yours")
    admission.add_argument(
        "--against",
        choices=("budget", "attempts"),
        default="budget",
        help="x axis: the per-case budget (default) or the attempts spent, target plus donor",
    )
    _output(admission, "admission.png")
    add_timeout(admission, "policy")
    admission.set_defaults(handler=run_admission)

    estimation = kinds.add_parser(
        "estimation",
        help="approvals per held-out model family and estimator",
        description="The three reference estimators fitted with one model family held out at a time: approvals of "
        "each family's 30 configurations by observed label (within margin useful; above margin and memory failure "
        f"errors), with correct labels and usable settings rejected. {EXTRA_NOTE}",
    )
    _output(estimation, "estimation.png")
    estimation.set_defaults(handler=run_estimation)


def _output(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--output", default=default, metavar="F.png", help=f"PNG file to write (default {default})")


def run_feasibility(args: argparse.Namespace) -> int:
    from ..reporting.plots import plot_feasibility, require_matplotlib

    require_matplotlib()
    return _save(plot_feasibility(_source(args)), args.output)


def run_stages(args: argparse.Namespace) -> int:
    from ..reporting.plots import plot_stages, require_matplotlib

    require_matplotlib()
    return _save(plot_stages(_source(args), configuration_id=args.config_id, study=args.study), args.output)


def run_admission(args: argparse.Namespace) -> int:
    from ..reporting.plots import plot_admission, require_matplotlib

    require_matplotlib()
    return _save(
        plot_admission(_source(args), policy=args.policy, against=args.against, timeout=args.timeout), args.output
    )


def run_estimation(args: argparse.Namespace) -> int:
    from ..reporting.comparison import plot_estimation
    from ..reporting.plots import require_matplotlib

    require_matplotlib()
    return _save(plot_estimation(_source(args)), args.output)


def _source(args: argparse.Namespace) -> Source:
    """The command's source, once its output was checked against its inputs (before any work)."""
    from ..data.tables.output import object_file
    from .shared.common import checked_source

    return checked_source(args, [args.output], {"--policy": object_file(getattr(args, "policy", None))})


def _save(fig: Figure, output: str) -> int:
    from ..reporting.plots import save_png

    save_png(fig, output)
    print(f"wrote {output}")
    return 0
