"""The ``rlvrambench`` command line: argument parsing and printing only; the work is done by the cores.

Each module of this package that defines ``register(subparsers)`` contributes its commands. A handler takes
the parsed arguments and returns the exit status. Errors of the package print one line and exit with 2;
``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from typing import NoReturn

from .. import __version__
from ..errors import RLVRAMBenchError
from ._common import EXIT_ERROR, needs_subcommand

EPILOG = (
    "Every error prints one line and exits with status 2 (--debug shows the traceback). Optional extras: "
    "pip install 'rlvrambench-hf[plots]' for plot and report, 'rlvrambench-hf[release]' for the Croissant check "
    "of release verify. COMMAND --help describes each command."
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse's own convention too)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rlvrambench",
        description="Typed access, metrics, admission replay, follow-up scores and releases for RLVRAMBench "
        "(the kobzaond/RLVRAMBench dataset on the Hugging Face Hub).",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"rlvrambench-hf {__version__}")
    parser.add_argument(
        "--source", help="Hub repo id or local directory (default: $RLVRAMBENCH_SOURCE, else kobzaond/RLVRAMBench)"
    )
    parser.add_argument(
        "--revision",
        help="Hub revision: branch, tag or commit (default: $RLVRAMBENCH_REVISION, else the pinned release commit)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    subparsers = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    needs_subcommand(parser)
    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Library warnings (download retries, resumes) would blur the one-line errors; HF_HUB_VERBOSITY overrides.
    os.environ.setdefault("HF_HUB_VERBOSITY", "error")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except RLVRAMBenchError as exc:
        if args.debug:
            raise
        print(f"rlvrambench: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("rlvrambench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
