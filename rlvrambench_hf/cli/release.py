"""``rlvrambench release build|verify|diff|push|publish-mirror``: typed Hub releases of the dataset."""

from __future__ import annotations

import argparse
import json
import sys

from ._common import format_table, source_of


def register(subparsers) -> None:
    parser = subparsers.add_parser("release", help="build, verify, compare and publish typed Hub releases")
    commands = parser.add_subparsers(dest="release_command", required=True, metavar="ACTION")

    build = commands.add_parser("build", help="build a Hub-ready release folder from --source/--revision")
    build.add_argument("--version", required=True, help="release version X.Y.Z")
    build.add_argument("--output", required=True, help="folder to create (must not exist or be empty)")
    build.add_argument("--repo-id", help="Hub repository named in the card and Croissant (default: the source's)")
    build.add_argument("--overwrite", action="store_true", help="replace a previous build in --output")
    build.set_defaults(handler=_build)

    verify = commands.add_parser("verify", help="check digests, card, Parquet files and Croissant of a release")
    verify.add_argument("folder")
    verify.set_defaults(handler=_verify)

    diff = commands.add_parser("diff", help="rows added, removed and changed between two releases")
    diff.add_argument("old", help="folder, REPO_ID@REVISION, or a revision of the --source Hub repository")
    diff.add_argument("new", help="same forms as OLD")
    diff.add_argument("--config", action="append", dest="configs", help="compare only this config (repeatable)")
    diff.add_argument("--format", choices=("table", "json"), default="table")
    diff.add_argument("--output", help="also write the JSON report to this file")
    diff.add_argument("--limit", type=int, default=50, help="changed cells listed in the table (default 50)")
    diff.set_defaults(handler=_diff)

    push = commands.add_parser("push", help="verify, then commit a release folder to a Hub dataset repository")
    push.add_argument("folder")
    push.add_argument("--repo-id", required=True)
    push.add_argument("--revision", dest="push_revision", default="main", help="branch to commit to (default main)")
    push.add_argument("--create-pr", action="store_true", help="open a pull request instead of committing")
    push.add_argument("--tag", help="tag the new commit, e.g. v1.1.0")
    push.add_argument("--message", help="commit message (default: Release X.Y.Z)")
    push.add_argument("--dry-run", action="store_true", help="print the plan and change nothing")
    push.add_argument("--json", action="store_true", help="print the plan as JSON")
    push.set_defaults(handler=_push)

    mirror = commands.add_parser("publish-mirror", help="commit a release folder into a local olah mirror repo")
    mirror.add_argument("folder")
    mirror.add_argument("--mirror", required=True, help="git repository, e.g. MIRRORS/datasets/ORG/NAME")
    mirror.add_argument("--tag", required=True, help="tag of the new commit, e.g. v1.1.0")
    mirror.add_argument("--branch", default="main")
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
    from ..errors import IntegrityError
    from ..release.verify import verify_release

    report = verify_release(args.folder)
    if report.problems:
        for problem in report.problems:  # the full list is the report (stdout); stderr gets the one-line error
            print(f"problem: {problem}")
        more = f" (and {len(report.problems) - 1} more, listed above)" if len(report.problems) > 1 else ""
        raise IntegrityError(f"release {report.folder} failed verification: {report.problems[0]}{more}")
    print(
        f"release {report.folder} verified: {report.files} files, {len(report.configs)} configs; digests, "
        "card, Parquet schemas and rows and Croissant agree with the registry"
    )
    return 0


def _diff(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..data.output import check_outputs, write_atomic
    from ..release.diff import diff_releases, resolve_side

    sides = {"OLD": Path(args.old).expanduser(), "NEW": Path(args.new).expanduser()}
    check_outputs([args.output], input_folders={k: v for k, v in sides.items() if v.is_dir()})
    result = diff_releases(resolve_side(args.old, args.source), resolve_side(args.new, args.source), args.configs)
    document = json.dumps(result.as_json(), indent=2, ensure_ascii=False, default=str) + "\n"
    if args.output:
        write_atomic(args.output, document)
    if args.format == "json":
        sys.stdout.write(document)
        return 0
    print(f"OLD {result.old}\nNEW {result.new}\n")
    rows = [
        (
            c.config,
            c.status,
            c.old_rows,
            c.new_rows,
            len(c.added),
            len(c.removed),
            c.changed_rows,
            ", ".join(f"{k}({v})" for k, v in c.changed_columns.items()),
        )
        for c in result.configs
    ]
    print(
        format_table(
            ("config", "status", "old rows", "new rows", "added", "removed", "changed", "changed columns"), rows
        )
    )
    labels = [
        (c.config, _key(cell.key), cell.column, cell.old, cell.new) for c in result.configs for cell in c.label_changes
    ]
    if labels:
        print("\nlabel changes")
        print(format_table(("config", "key", "column", "old", "new"), labels))
    cells = [
        (c.config, _key(cell.key), cell.column, cell.old, cell.new)
        for c in result.configs
        for cell in c.cells
        if cell.column not in c.label_columns
    ]
    if cells:
        shown = cells[: max(args.limit, 0)]
        print(f"\nother changed cells ({len(cells)}{'' if len(shown) == len(cells) else f', first {len(shown)}'})")
        print(format_table(("config", "key", "column", "old", "new"), shown))
    for c in result.configs:
        for verb, keys in (("added", c.added), ("removed", c.removed)):
            if keys:
                listed = "; ".join(_key(k) for k in keys[:10]) + (" ..." if len(keys) > 10 else "")
                print(f"\n{c.config}: {verb} {len(keys)} row(s): {listed}")
    if not result.changed:
        print("\nno differences")
    return 0


def _key(key: dict) -> str:
    return ",".join(str(v) for v in key.values())


def _push(args: argparse.Namespace) -> int:
    from ..release.push import push_release

    result = push_release(
        args.folder,
        args.repo_id,
        revision=args.push_revision,
        create_pr=args.create_pr,
        tag=args.tag,
        message=args.message,
        dry_run=args.dry_run,
    )
    if args.json:
        print(json.dumps(result.plan.as_json(), indent=2))
    else:
        print(result.plan.describe())
    if args.dry_run:
        print("dry run: nothing was changed")
    elif result.commit_url:
        print(f"committed: {result.commit_url}")
    else:
        print(f"nothing to commit: {args.repo_id}@{args.push_revision} already holds this release")
    if result.tag and not args.dry_run:
        print(f"tagged {result.commit} as {result.tag}")
    return 0


def _publish_mirror(args: argparse.Namespace) -> int:
    from ..release.mirror import publish_mirror

    result = publish_mirror(args.folder, args.mirror, args.tag, branch=args.branch, message=args.message)
    what = "new commit" if result.changed else "unchanged tree, existing commit"
    print(f"published {args.folder} to {result.repo} {result.branch} at {result.commit} ({what}), tagged {result.tag}")
    return 0
