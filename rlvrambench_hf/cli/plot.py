"""``rlvrambench plot feasibility|stages|admission``: draw a figure of the release to a PNG file."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("plot", help="draw the feasibility heatmap, stage peaks or admission curves")
    kinds = parser.add_subparsers(dest="plot_kind", required=True, metavar="FIGURE")

    feasibility = kinds.add_parser("feasibility", help="boundary study: repeated label and peak per setting")
    _output(feasibility, "feasibility.png")
    feasibility.set_defaults(handler=run_feasibility)

    stages = kinds.add_parser("stages", help="per-stage device-memory peaks against the limit")
    scope = stages.add_mutually_exclusive_group()
    scope.add_argument("--config-id", metavar="ID", help="one configuration")
    scope.add_argument("--study", metavar="S", help="one study (e.g. boundary); default: every process")
    _output(stages, "stages.png")
    stages.set_defaults(handler=run_stages)

    admission = kinds.add_parser("admission", help="case-averaged recall against the screening budget")
    admission.add_argument("--policy", metavar="MODULE:ATTR", help="also replay this user policy")
    _output(admission, "admission.png")
    admission.set_defaults(handler=run_admission)


def _output(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--output", default=default, metavar="F.png", help=f"PNG file to write (default {default})")


def run_feasibility(args: argparse.Namespace) -> int:
    from ..reporting.plots import plot_feasibility

    return _save(plot_feasibility(_source(args)), args.output)


def run_stages(args: argparse.Namespace) -> int:
    from ..reporting.plots import plot_stages

    return _save(plot_stages(_source(args), configuration_id=args.config_id, study=args.study), args.output)


def run_admission(args: argparse.Namespace) -> int:
    from ..reporting.plots import plot_admission

    return _save(plot_admission(_source(args), policy=args.policy), args.output)


def _source(args: argparse.Namespace):
    """The command's source, once its output was checked against its inputs (before any work)."""
    from ..data.output import check_outputs, object_file
    from ._common import source_of

    source = source_of(args)
    check_outputs([args.output], inputs={"--policy": object_file(getattr(args, "policy", None))}, source=source)
    return source


def _save(fig, output: str) -> int:
    from ..reporting.plots import save_png

    save_png(fig, output)
    print(f"wrote {output}")
    return 0
