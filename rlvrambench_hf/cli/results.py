"""``rlvrambench results export``: a transfer score file as the Hub's evaluation results of a scored repository.

Argument parsing and printing only; :mod:`rlvrambench_hf.release.evalresults` builds the entries and
:func:`rlvrambench_hf.release.push.push_folder` commits them.
"""

from __future__ import annotations

import argparse
import re

from .shared.common import add_group, add_push_options, print_push

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def add_results(parser: argparse.ArgumentParser) -> None:
    commands = add_group(
        parser,
        description="Turn a transfer score file into the Hub's evaluation results: one entry per track and "
        "reported metric (within-margin recall, approval precision, approved memory failures, approved "
        "above-margin), naming the dataset revision and the package version.",
        metavar="ACTION",
    )
    p = commands.add_parser(
        "export",
        help="write .eval_results/rlvrambench.yaml for a scored repository (and --push it)",
        description="Write FOLDER/.eval_results/rlvrambench.yaml from SCORES (the file evaluate --output writes) "
        "through huggingface_hub's EvalResultEntry. With --push, commit that one file to --repo-id (other files of "
        "the repository are kept); --dry-run prints the plan and changes nothing.",
    )
    p.add_argument("scores", metavar="SCORES", help="a transfer score file (JSON, from evaluate --output)")
    p.add_argument("--repo-id", required=True, help="the scored repository (your model), OWNER/NAME")
    p.add_argument("--repo-type", default="model", choices=("model", "dataset", "space"), help="its type (model)")
    p.add_argument(
        "--dataset-revision",
        metavar="REV",
        help="the dataset commit the scores were computed at (default: the global --revision resolved to its "
        "commit, else the release commit the package pins)",
    )
    p.add_argument("--output", default=".", metavar="FOLDER", help="folder to write .eval_results/ into (default .)")
    p.add_argument("--push", action="store_true", help="commit the file to --repo-id")
    add_push_options(p, default_message="Add RLVRAMBench evaluation results")
    p.set_defaults(handler=run_export)


def dataset_identity(args: argparse.Namespace) -> tuple[str, str]:
    """(dataset id, commit) the scores were computed at, from --dataset-revision or the global options."""
    from ..data.schema.pins import DEFAULT_REPO_ID, DEFAULT_REVISION
    from ..data.sources.resolve import open_source, request

    wanted = request(args.source, args.revision)
    dataset_id = DEFAULT_REPO_ID if wanted.local else wanted.location
    revision = args.dataset_revision or (None if wanted.local else wanted.revision) or DEFAULT_REVISION
    if not _COMMIT.match(revision):
        revision = str(open_source(dataset_id, revision).identity["commit"])
    return dataset_id, revision


def run_export(args: argparse.Namespace) -> int:
    import tempfile
    from pathlib import Path

    from .. import __version__
    from ..data.tables.output import check_outputs, new_folder, write_atomic
    from ..errors import InputError, quote
    from ..release.evalresults import EVAL_RESULTS_FILE, EVAL_RESULTS_FOLDER, eval_entries, eval_results_text
    from ..userfile import user_json

    folder = Path(args.output)  # created when missing, as report's --output
    target = folder / EVAL_RESULTS_FOLDER / EVAL_RESULTS_FILE
    if folder.exists() and not folder.is_dir():
        raise InputError(f"--output {quote(args.output)} is not a folder")
    if target.parent.is_dir():
        check_outputs([target], inputs={"SCORES": args.scores})
    else:
        check_outputs(folders=[target.parent if folder.is_dir() else folder], inputs={"SCORES": args.scores})
    scores = user_json(args.scores, f"score file {quote(args.scores)}")
    dataset_id, revision = dataset_identity(args)
    export = eval_entries(
        scores,
        dataset_id=dataset_id,
        dataset_revision=revision,
        version=__version__,
        source=f"score file {quote(args.scores)}",
    )
    text = eval_results_text(export.entries)
    with new_folder(target.parent):
        write_atomic(target, text)
    print(f"{len(export.entries)} entries ({dataset_id}@{revision}) -> {target}")
    for task in export.left_out:
        print(f"left out (null, never 0): {task}")
    if args.push:
        from ..release.push import push_folder

        with tempfile.TemporaryDirectory() as staging:
            staged = Path(staging) / EVAL_RESULTS_FOLDER / EVAL_RESULTS_FILE
            staged.parent.mkdir()
            staged.write_text(text, encoding="utf-8")
            result = push_folder(
                staging,
                args.repo_id,
                repo_type=args.repo_type,
                prune=False,
                revision=args.push_revision,
                create_pr=args.create_pr,
                message=args.message or "Add RLVRAMBench evaluation results",
                dry_run=args.dry_run,
            )
        print_push(result, repo_id=args.repo_id, revision=args.push_revision, dry_run=args.dry_run, as_json=args.json)
    elif args.dry_run or args.create_pr or args.json or args.message:
        raise InputError("--dry-run, --create-pr, --json and --message apply to --push")
    return 0
