"""The ``rlvrambench`` command line: argument parsing and printing only; the work is done by the cores.

Each module of this package that defines ``register(subparsers)`` contributes its commands. A handler takes
the parsed arguments and returns the exit status. Every error prints one line through
:func:`~rlvrambench_hf.errors.error_line` and exits with 2 (130 for an interrupt, also one raised by a user's
policy or estimator); an exception that is not the package's own is a bug: one line too, exit 1. ``--debug``
prints the traceback first, credentials redacted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from typing import NoReturn

from .. import __version__
from ..data.sources.hubnet import hub_traffic
from ..errors import EXIT_INTERRUPTED, InputError, RLVRAMBenchError, debug_text, error_line, first_line, one_line
from ._common import EXIT_ERROR, needs_subcommand

EPILOG = (
    "Every error prints one line and exits with status 2 (--debug shows the traceback). Optional extras: "
    "pip install 'rlvrambench-hf[plots]' for plot and report, 'rlvrambench-hf[release]' for the Croissant check "
    "of release verify. COMMAND --help describes each command."
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse's own convention too)
        self.exit(EXIT_ERROR, f"{one_line(self.prog, 60)}: error: {one_line(message)}\n")


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
        with hub_traffic(install_client=False):  # one deadline for the command's Hub traffic
            return int(args.handler(args) or 0)
    except RLVRAMBenchError as exc:
        return _failed(exc, args.debug, exc.exit_status)
    except KeyboardInterrupt:
        print("rlvrambench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except MemoryError as exc:  # pyarrow's ArrowMemoryError too: readers state their bounds, this is the rest
        said = f"an allocation failed ({first_line(exc, typed=True, limit=120)}): the inputs need more memory than "
        return _failed(InputError(said + "this process may use (its limits: ulimit -v)"), args.debug, EXIT_ERROR)
    except Exception as exc:  # a bug of the package: still one line, never a bare traceback
        return _failed(exc, args.debug, EXIT_BUG)


#: Exit status of an exception that is not the package's own (a bug, not the user's input).
EXIT_BUG = 1


def _failed(exc: BaseException, debug: bool, status: int) -> int:
    if debug:
        print(debug_text(exc), file=sys.stderr, end="")
    print(error_line(exc), file=sys.stderr)
    return status


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
