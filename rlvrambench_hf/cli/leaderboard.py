"""``rlvrambench leaderboard``: score files or evaluation results gathered into one table per track.

Argument parsing, file gathering and printing only; :mod:`rlvrambench_hf.reporting.leaderboard` ranks and groups.
"""

from __future__ import annotations

import argparse
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import quote
from .shared.common import checked_source, format_table
from .shared.intervals import add_interval_options, interval_options_of

if TYPE_CHECKING:  # pragma: no cover
    from ..reporting.leaderboard import Standing


def add_leaderboard(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Gather transfer score files (JSON from evaluate --output, best made with --intervals) and the "
        "Hub's evaluation results (.eval_results/*.yaml, read with huggingface_hub) and print, per track, each "
        "method's within-margin recall with its interval, approved memory failures and above-margin approvals, "
        "sorted by recall and grouped where the intervals overlap. A folder is searched for *.json score files and "
        ".eval_results/*.yaml; a method is named by its file (an .eval_results file by the folder holding it)."
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help=f"score files, .eval_results YAML files, folders, or {HUB_PREFIX}OWNER/NAME for the .eval_results of a "
        "Hub model repository (read through huggingface_hub); a path without a suffix (/dev/stdin, <(...)) is read as "
        "a score file",
    )
    p.add_argument("--references", action="store_true", help="add the three reference rules, scored now with intervals")
    p.add_argument("--output", metavar="F.csv|F.html", help="also write the table as CSV or HTML")
    add_interval_options(p, flag=None)  # --level/--seed/--resamples of the --references' intervals
    p.set_defaults(handler=run_leaderboard)


HUB_PREFIX = "hub:"


def gather(paths: list[str]) -> dict[str, tuple[str, Path]]:
    """Method name → (kind, file) of every score file ("scores") and evaluation-results file ("entries");
    ``hub:`` repositories are left to :func:`run_leaderboard`."""
    from ..errors import InputError
    from ..release.evalresults import EVAL_RESULTS_FOLDER
    from ..userfile import file_mode

    found: dict[str, tuple[str, Path]] = {}

    def add(file: Path) -> None:
        if file.suffix in (".json", ""):  # without a suffix (/dev/stdin, <(...)): a score file
            name, kind = file.stem, "scores"
        elif file.suffix in (".yaml", ".yml"):
            name = file.parent.parent.resolve().name if file.parent.name == EVAL_RESULTS_FOLDER else file.stem
            kind = "entries"
        else:
            raise InputError(
                f"{quote(str(file))}: a leaderboard takes .json score files and .eval_results .yaml files (a path "
                "without a suffix, such as /dev/stdin, is read as a score file)"
            )
        if name in found:
            raise InputError(f"two inputs name the method {quote(name)} ({found[name][1]} and {file}); rename one")
        found[name] = (kind, file)

    for given in (Path(p) for p in paths if not p.startswith(HUB_PREFIX)):
        for file in folder_files(given) if stat.S_ISDIR(file_mode(given, quote(str(given)))) else [given]:
            add(file)
    return found


def folder_files(folder: Path) -> list[Path]:
    """The score files and evaluation-results files of a folder (or of an ``.eval_results`` folder)."""
    from ..errors import InputError
    from ..release.evalresults import EVAL_RESULTS_FOLDER

    files = sorted(folder.glob("*.json")) + sorted((folder / EVAL_RESULTS_FOLDER).glob("*.yaml"))
    if folder.name == EVAL_RESULTS_FOLDER:
        files += sorted(folder.glob("*.yaml"))
    if not files:
        raise InputError(f"folder {folder} holds no *.json score file and no .eval_results/*.yaml")
    return files


def file_standings(found: dict[str, tuple[str, Path]]) -> list[Standing]:
    """The standings of every gathered file (score files and evaluation-results files)."""
    from ..release.evalresults import check_scores, read_eval_results
    from ..reporting.leaderboard import standings_from_entries, standings_from_scores
    from ..userfile import user_json

    standings: list[Standing] = []
    for name, (kind, file) in found.items():
        if kind == "entries":
            standings += standings_from_entries(name, read_eval_results(file))
            continue
        label = f"score file {quote(str(file))}"
        standings += standings_from_scores(name, check_scores(user_json(file, label), label))
    return standings


def run_leaderboard(args: argparse.Namespace) -> int:
    from ..data.tables.output import check_outputs, write_atomic
    from ..errors import InputError
    from ..release.evalresults import hub_eval_results
    from ..reporting.leaderboard import (
        LEGEND,
        leaderboard_csv,
        leaderboard_html,
        leaderboard_table,
        standings_from_entries,
        standings_from_scores,
    )

    if args.output and Path(args.output).suffix.lower() not in (".csv", ".html"):
        raise InputError(f"--output {args.output} must end in .csv or .html")
    found = gather(args.paths)
    repos = [p[len(HUB_PREFIX) :] for p in args.paths if p.startswith(HUB_PREFIX)]
    if not found and not repos and not args.references:
        raise InputError("no score files given (PATH...), and no --references")
    inputs = {f"PATH {name}": str(file) for name, (_, file) in found.items()}
    source = checked_source(args, [args.output], inputs) if args.references else None
    if source is None:
        check_outputs([args.output], inputs=inputs)
    standings = file_standings(found)
    for repo in repos:
        standings += standings_from_entries(repo, hub_eval_results(repo))
    if args.references:
        from ..transfer import RULES, reference_scores

        options = interval_options_of(args)
        for rule in RULES:
            standings += standings_from_scores(rule, reference_scores(rule, source, intervals=options))
    table = leaderboard_table(standings)
    if args.output:
        text = leaderboard_html(table) if args.output.lower().endswith(".html") else leaderboard_csv(table)
        write_atomic(args.output, text)
    rows = [["null" if v is None else v for v in row] for row in table.rows]
    print(format_table(table.headers, rows))
    print(LEGEND)
    return 0
