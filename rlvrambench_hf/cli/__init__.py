"""The ``rlvrambench`` command line: argument parsing and printing only; the work is done by the cores.

:data:`COMMANDS` is the one table of commands: each names the module of this package and the function in it that
adds the command's options and handler to its parser. A module is imported only when its command is chosen (or its
``--help`` asked for), so ``--version``, ``--help`` and every command load what they use and nothing else. A
handler takes the parsed arguments and returns the exit status; what it prints on standard output reaches the
terminal without a raw control character (:func:`~.shared.common.escaping_output`). Every error prints one line through
:func:`~rlvrambench_hf.errors.error_line` and exits with 2 (130 for an interrupt, also one raised by a user's
policy or estimator); an exception that is not the package's own is a bug: one line too, exit 1. ``--debug``
prints the traceback first, credentials redacted.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, cast

from .. import __version__
from ..errors import EXIT_INTERRUPTED, InputError, RLVRAMBenchError, debug_text, error_line, first_line, one_line
from .shared.common import EXIT_ERROR, escaping_output, needs_subcommand

EPILOG = (
    "Every error prints one line and exits with status 2 (--debug shows the traceback). Optional extras: "
    "pip install 'rlvrambench-hf[plots]' for plot and report, 'rlvrambench-hf[release]' for the Croissant check "
    "of release verify. COMMAND --help describes each command."
)


@dataclass(frozen=True)
class Command:
    """``rlvrambench NAME``: ``help`` is its line in ``rlvrambench --help``; ``function`` of the module
    ``rlvrambench_hf.cli.MODULE`` adds its description, options (or subcommands) and handler to its parser."""

    name: str
    help: str
    module: str
    function: str


#: Every command, in the order ``rlvrambench --help`` lists them.
COMMANDS: tuple[Command, ...] = (
    Command("configs", "list the configs with their split, rows and availability", "data", "add_configs"),
    Command("show", "typed preview of a config", "data", "add_show"),
    Command("export", "write a config as CSV, Parquet or JSON Lines", "data", "add_export"),
    Command("verify", "check digests, seals, row counts, keys, relations and the card's figures", "data", "add_verify"),
    Command("inputs", "export the leak-free task inputs as JSON", "transfer", "add_inputs"),
    Command("baseline", "write a reference rule's predictions as CSV", "transfer", "add_baseline"),
    Command("evaluate", "score a predictions file against the transfer labels", "transfer", "add_evaluate"),
    Command(
        "compare",
        "compare two sets of transfer predictions, metric by metric, with paired intervals",
        "compare",
        "add_compare",
    ),
    Command(
        "leaderboard",
        "rank methods per track by recall, grouped where their intervals overlap",
        "leaderboard",
        "add_leaderboard",
    ),
    Command("results", "publish scores as the Hub's evaluation results (.eval_results)", "results", "add_results"),
    Command(
        "replay",
        "replay admission rules or your own policy under the protocol's charging rules",
        "admission",
        "add_replay",
    ),
    Command("followup", "score the larger-model and expanded-host follow-up studies", "followup", "add_followup"),
    Command(
        "estimate",
        "estimator comparison: held-out model families, your estimator, advice for a planned run",
        "estimate",
        "add_estimate",
    ),
    Command(
        "advise",
        "will my run fit? measured records first, physical floors, then the per-phase memory model; or why it failed",
        "advise",
        "add_advise",
    ),
    Command(
        "plot",
        "draw the feasibility heatmap, stage peaks, admission curves or the estimator comparison (extra [plots])",
        "plot",
        "add_plot",
    ),
    Command(
        "report", "write an HTML report (index.html and its figures) to DIR (extra [plots])", "report", "add_report"
    ),
    Command("release", "build, verify, compare and publish typed Hub releases", "release", "add_release"),
    Command("metric", "the evaluate module: its installed path, and its Hub Space folder", "metric", "add_metric"),
    Command("demo", "run the main job on the real data: configs, samples, headline results", "demo", "add_demo"),
)


def add_command(parser: argparse.ArgumentParser, command: Command) -> None:
    """Import ``command``'s module and let its function add the command's options and handler to ``parser``."""
    module = importlib.import_module(f"{__name__}.{command.module}")
    getattr(module, command.function)(parser)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse's own convention too)
        self.exit(EXIT_ERROR, f"{one_line(self.prog, 60)}: error: {one_line(message)}\n")


if TYPE_CHECKING:  # pragma: no cover
    _SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:  # not subscriptable at run time
    _SubParsers = argparse._SubParsersAction


class _Commands(_SubParsers):
    """The subcommands of :data:`COMMANDS`: a command's name and help line are there from the start (its choice and
    its line in ``--help``); its parser is made and filled in (its module imported) when it is chosen. (Making the
    19 parsers up front costs every command a few milliseconds of argparse's message catalogue look-ups.)"""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pending: dict[str, Command] = {}

    def register(self, command: Command) -> None:
        """Make ``command`` a choice, with its help line; its parser waits for :meth:`load`."""
        self._choices_actions.append(self._ChoicesPseudoAction(command.name, (), command.help))
        self._name_parser_map[command.name] = None  # type: ignore[assignment]  # made by load()
        self.pending[command.name] = command

    def load(self, name: str) -> argparse.ArgumentParser:
        """The parser of command ``name``, with its options."""
        command = self.pending.pop(name, None)
        if command is not None:
            parser = self._parser_class(prog=f"{self._prog_prefix} {name}")
            self._name_parser_map[name] = parser
            add_command(parser, command)
        made: argparse.ArgumentParser = self._name_parser_map[name]
        return made

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if isinstance(values, list) and values and values[0] in self.pending:
            self.load(values[0])
        super().__call__(parser, namespace, values, option_string)


def build_parser(*, complete: bool = False) -> argparse.ArgumentParser:
    """The ``rlvrambench`` parser. Commands get their options when chosen; ``complete`` adds them all now (to walk
    every command's options, as the help tests do)."""
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
    commands = cast(
        _Commands, parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND", action=_Commands)
    )
    needs_subcommand(parser)
    for command in COMMANDS:
        commands.register(command)
    if complete:
        for command in COMMANDS:
            commands.load(command.name)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Library warnings (download retries, resumes) would blur the one-line errors; HF_HUB_VERBOSITY overrides.
    os.environ.setdefault("HF_HUB_VERBOSITY", "error")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        from ..data.sources.hubnet import hub_traffic  # after parsing: --version and --help import no core
        from ..data.tables.kept import written_on_success

        # one deadline for the command's Hub traffic; what it keeps for the next runs only when it succeeds
        with hub_traffic(install_client=False), escaping_output(), written_on_success():
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
    """Console-script entry point. The process ends after the command: what it made is frozen out of the cyclic
    garbage collector first, so that the interpreter's last collections do not walk every object of the libraries
    and the answer (10-20 ms of every command); files and streams are closed and flushed as before."""
    status = main()
    gc.freeze()
    sys.exit(status)
