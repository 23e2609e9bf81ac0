"""Helpers shared by the command modules: the source of a command, plain-text tables and help texts.

Imported by every command (and by ``--version``): only the standard library and the package's errors at import."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from ...errors import EXIT_ERROR, escaped, quote, redact

if TYPE_CHECKING:  # pragma: no cover
    from ...data.sources.base import Source
    from ...release.push import PushResult

#: How option help names the accepted predictions formats.
PREDICTIONS_FORMATS = "CSV, JSON Lines or Parquet, optionally .gz/.bz2/.zst-compressed; - reads standard input"
__all__ = ["EXIT_ERROR"]  # the exit status of every error (rlvrambench_hf.errors)


def needs_subcommand(parser: argparse.ArgumentParser) -> None:
    """Make ``parser`` (a command group) print its usage and one error line, exit 2, when no subcommand is given."""

    def usage(args: argparse.Namespace) -> int:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: choose a subcommand (see {parser.prog} --help)", file=sys.stderr)
        return EXIT_ERROR

    parser.set_defaults(handler=usage)


def add_group(
    parser: argparse.ArgumentParser, *, description: str, metavar: str
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """Make ``parser`` (e.g. ``rlvrambench release``) a command group; returns its subcommands' action. Without a
    subcommand it prints its usage and exits 2."""
    parser.description = description
    name = parser.prog.split()[-1]
    commands = parser.add_subparsers(dest=f"{name}_command", metavar=metavar)
    needs_subcommand(parser)
    return commands


def choices_text(names: Iterable[str]) -> str:
    """``a, b or c``: a list of names as help texts write it."""
    items = list(names)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def source_of(args: argparse.Namespace) -> Source:
    """The source named by the global ``--source`` / ``--revision`` options (or the environment)."""
    from ...data.sources.resolve import open_source

    return open_source(args.source, args.revision)


def checked_source(
    args: argparse.Namespace, outputs: Sequence[str | None], inputs: Mapping[str, str | None] | None = None
) -> Source:
    """The command's source, after refusing (before any work) ``outputs`` that cannot be written or would overwrite
    one of its ``inputs`` (option name -> file) or the source itself."""
    from ...data.tables.output import check_outputs

    source = source_of(args)
    check_outputs(outputs, inputs=inputs, source=source)
    return source


def add_timeout(parser: argparse.ArgumentParser, what: str) -> None:
    """The ``--timeout SECONDS`` option of a command that runs user code (``what``: "policy", "estimator")."""
    from ...scoring.bounded import DEFAULT_TIMEOUT

    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"time limit of each call into your {what} (default {DEFAULT_TIMEOUT:g}); a call that takes longer is "
        "stopped and the command fails with one line",
    )


def _seconds(text: str) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {quote(text)}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {quote(text)}")
    return value


def format_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A left-aligned plain-text table; ``None`` prints as an empty cell, floats with up to 4 decimals, and
    characters that are not printable escaped (a name a user chose: an escape sequence, a bidi override)."""

    def cell(value: object) -> str:
        if value is None:
            return ""
        if isinstance(value, float):
            return f"{value:.4f}".rstrip("0").rstrip(".") if value == value else "nan"
        if isinstance(value, (list, tuple)):
            return escaped(";".join(map(str, value)), keep="")
        return escaped(str(value), keep="")

    body = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in body]
    return "\n".join(lines)


class _Escaping:
    """A text stream that writes to ``inner`` with every character that is not printable escaped, line breaks
    kept (see :func:`escaping_output`); anything else (``buffer``, ``fileno``, ``isatty``) is ``inner``'s."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        self._inner.write(escaped(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@contextlib.contextmanager
def escaping_output() -> Iterator[None]:
    """Within the block, what is printed on standard output never carries a raw control character (an escape
    sequence, a bell, a C1 control, a bidi override, a carriage return): each is written escaped, so that no
    value from a user's file, name or code can move the cursor, clear the screen or reorder a line. Each
    command escapes the values it shows; this is the last bound, for any it did not."""
    inner = sys.stdout
    if inner is None:
        yield
        return
    sys.stdout = _Escaping(inner)
    try:
        yield
    finally:
        if isinstance(sys.stdout, _Escaping):
            sys.stdout = inner


def add_push_options(parser: argparse.ArgumentParser, *, default_message: str, tag: bool = False) -> None:
    """The options of the verify-plan-commit commands (``release push``, ``metric push``)."""
    parser.add_argument("--revision", dest="push_revision", default="main", help="branch to commit to (default main)")
    parser.add_argument("--create-pr", action="store_true", help="open a pull request instead of committing")
    if tag:
        parser.add_argument("--tag", help="tag the new commit, e.g. v1.1.0")
    parser.add_argument("--message", help=f"commit message (default: {default_message})")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and change nothing")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")


def push_and_print(push: Callable[..., PushResult], args: argparse.Namespace, **options: Any) -> int:
    """Run ``push(args.folder, args.repo_id, ...)`` with the options of :func:`add_push_options` and print the plan
    and what was done."""
    result = push(
        args.folder,
        args.repo_id,
        revision=args.push_revision,
        create_pr=args.create_pr,
        message=args.message,
        dry_run=args.dry_run,
        **options,
    )
    print_push(result, repo_id=args.repo_id, revision=args.push_revision, dry_run=args.dry_run, as_json=args.json)
    return 0


def print_push(result: PushResult, *, repo_id: str, revision: str, dry_run: bool, as_json: bool) -> None:
    """What ``release push`` and ``metric push`` print: the plan (text or JSON), then what was done."""
    import json

    print(json.dumps(result.plan.as_json(), indent=2) if as_json else result.plan.describe())
    if dry_run:
        print("dry run: nothing was changed")
    elif result.commit_url:
        print(f"committed: {redact(result.commit_url)}")
    else:
        print(f"nothing to commit: {repo_id}@{revision} already holds this folder")
    if result.tag and not dry_run:
        print(f"tagged {result.commit} as {result.tag}")
