"""``rlvrambench release build|verify|diff|push|publish-mirror``: typed Hub releases of the dataset."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from .shared.common import add_group, add_push_options, push_and_print, source_of

if TYPE_CHECKING:
    from ..release.push import PushResult


def add_release(parser: argparse.ArgumentParser) -> None:
    commands = add_group(
        parser,
        description="Typed Hub releases of the dataset: build a release folder (Parquet with label names, the card "
        "with the features, Croissant, digests), verify it, compare two releases, push one to a Hub dataset "
        "repository or commit it into a local olah mirror.",
        metavar="ACTION",
    )

    build = commands.add_parser(
        "build",
        help="build a Hub-ready release folder from --source/--revision",
        description="Read every config of --source/--revision (digests checked) and write a release folder: one "
        "Parquet file per config (label columns as their names; datasets reads them as ClassLabel through the card's "
        "features), the card with its YAML, Croissant metadata and release.json with every file's digest.",
    )
    build.add_argument("--version", required=True, help="release version X.Y.Z")
    build.add_argument("--output", required=True, help="folder to create (must not exist or be empty)")
    build.add_argument("--repo-id", help="Hub repository named in the card and Croissant (default: the source's)")
    build.add_argument("--overwrite", action="store_true", help="replace a previous build in --output")
    build.set_defaults(handler=_build)

    verify = commands.add_parser(
        "verify",
        help="check digests, card, Parquet files, Croissant and table relations of a release (extra [release])",
        description="Check a built release folder: every digest of release.json, the card's YAML against the "
        "registry, each Parquet file's schema and rows, Croissant (rendered and validated with mlcroissant: "
        "pip install 'rlvrambench-hf[release]', or --no-croissant to skip the validator), and its tables as "
        "`rlvrambench verify` checks them: every seal, key and declared relation (foreign keys and copies).",
    )
    verify.add_argument("folder", metavar="FOLDER", help="the release folder (written by release build)")
    verify.add_argument(
        "--no-croissant", action="store_true", help="skip the mlcroissant validator (Croissant is still compared)"
    )
    verify.set_defaults(handler=_verify)

    diff = commands.add_parser(
        "diff",
        help="what changed between two releases and what it touches (exit 1 when they differ)",
        description="Compare two releases table by table, every table of the registry (card configs and supporting "
        "tables), rows matched by key. Leads with the changes that move the metrics: configurations whose label or "
        "peak changed, the transfer queries, admission candidates, estimation folds and follow-up studies they "
        "touch; then rows added, removed and changed per table. Exit status 1 when anything differs, 0 when the "
        "releases are identical, 2 on an error (as diff does).",
    )
    diff.add_argument("old", help="folder, REPO_ID@REVISION, or a revision of the --source Hub repository")
    diff.add_argument("new", help="same forms as OLD")
    diff.add_argument("--config", action="append", dest="configs", help="compare only this config (repeatable)")
    diff.add_argument("--format", choices=("table", "json"), default="table", help="output on stdout: table or json")
    diff.add_argument("--json", action="store_const", const="json", dest="format", help="same as --format json")
    diff.add_argument("--output", help="also write the JSON report to this file")
    diff.add_argument("--limit", type=int, default=50, help="ids and changed cells listed per section (default 50)")
    diff.set_defaults(handler=_diff)

    push = commands.add_parser(
        "push",
        help="verify, then commit a release folder to a Hub dataset repository",
        description="Verify a release folder, compare it with the remote revision file by file, print the plan "
        "and commit the changes as one atomic commit (optionally tagged). --dry-run needs no token.",
    )
    push.add_argument("folder", metavar="FOLDER", help="the release folder (written by release build)")
    push.add_argument("--repo-id", required=True, help="Hub dataset repository to push to, e.g. ORG/NAME")
    add_push_options(push, default_message="Release X.Y.Z", tag=True)
    push.add_argument("--private", action="store_true", help="create the repository private if it does not exist yet")
    push.set_defaults(handler=_push)

    mirror = commands.add_parser(
        "publish-mirror",
        help="commit a release folder into a local olah mirror repo",
        description="Verify a release folder and commit it, tagged, into a local git repository laid out for an "
        "olah mirror (MIRRORS/datasets/ORG/NAME); the branch and tag move in one transaction.",
    )
    mirror.add_argument("folder", metavar="FOLDER", help="the release folder (written by release build)")
    mirror.add_argument("--mirror", required=True, help="git repository, e.g. MIRRORS/datasets/ORG/NAME")
    mirror.add_argument("--tag", required=True, help="tag of the new commit, e.g. v1.1.0")
    mirror.add_argument("--branch", default="main", help="branch of the mirror repository to commit to (default main)")
    mirror.add_argument("--message", help="commit message (default: Release X.Y.Z)")
    mirror.set_defaults(handler=_publish_mirror)


def _build(args: argparse.Namespace) -> int:
    from ..release.build import build_release

    result = build_release(args.output, args.version, source_of(args), repo_id=args.repo_id, overwrite=args.overwrite)
    absent = ", ".join(s.name for s in result.absent) or "none"
    print(
        f"built release {result.version} in {result.folder}: {len(result.built)} configs, "
        f"{result.files} files (configs absent from the source: {absent})"
    )
    return 0


def _verify(args: argparse.Namespace) -> int:
    from ..release.verify import VerificationFailed, check_release

    try:
        report = check_release(args.folder, croissant=not args.no_croissant)
    except VerificationFailed as failed:  # the full list is the report (stdout); stderr gets the one-line error
        for problem in failed.problems:
            print(f"problem: {problem}")
        raise
    checked = "Croissant (mlcroissant skipped)" if args.no_croissant else "Croissant"
    print(
        f"release {report.folder} verified: {report.files} files, {len(report.configs)} configs; digests, "
        f"card, every Parquet column and {checked} agree with the registry and the typed tables; seals, keys and "
        "relations hold"
    )
    return 0


def _diff(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..data.tables.output import check_outputs, write_atomic
    from ..release.diff import diff_releases, resolve_side

    sides = {"OLD": Path(args.old).expanduser(), "NEW": Path(args.new).expanduser()}
    check_outputs([args.output], input_folders={k: v for k, v in sides.items() if v.is_dir()})
    result = diff_releases(resolve_side(args.old, args.source), resolve_side(args.new, args.source), args.configs)
    document = json.dumps(result.as_json(), indent=2, ensure_ascii=False, default=str) + "\n"
    if args.output:
        write_atomic(args.output, document)
    if args.format == "json":
        sys.stdout.write(document)
    else:
        from .shared.difftext import diff_text

        print(diff_text(result, max(args.limit, 0)))
    return 1 if result.changed else 0


def _push(args: argparse.Namespace) -> int:
    from ..release.push import push_release

    def push_and_tell(folder: str, repo_id: str, **options: Any) -> PushResult:
        result = push_release(folder, repo_id, **options)
        if result.created:
            print(f"created the dataset repository {repo_id}" + (" (private)" if args.private else ""))
        return result

    return push_and_print(push_and_tell, args, tag=args.tag, private=args.private)


def _publish_mirror(args: argparse.Namespace) -> int:
    from ..release.mirror import publish_mirror

    result = publish_mirror(args.folder, args.mirror, args.tag, branch=args.branch, message=args.message)
    what = "new commit" if result.changed else "unchanged tree, existing commit"
    print(f"published {args.folder} to {result.repo} {result.branch} at {result.commit} ({what}), tagged {result.tag}")
    return 0
