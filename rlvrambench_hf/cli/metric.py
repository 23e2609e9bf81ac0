"""``rlvrambench metric path|space|push``: where the installed ``evaluate`` module is, and the metric as a Space.

Argument parsing and printing only; :mod:`rlvrambench_hf.release.space` does the work.
"""

from __future__ import annotations

import argparse

from .shared.common import add_group, add_push_options, push_and_print

_SPACE_ID_HELP = "the Space OWNER/NAME; evaluate.load('OWNER/NAME') loads NAME.py from it (default: {})"


def add_metric(parser: argparse.ArgumentParser) -> None:
    from ..adapters.metric import METRIC_CONFIGS
    from ..release.space import DEFAULT_SPACE_ID

    commands = add_group(
        parser,
        description="The RLVRAMBench metric travels in the wheel: `evaluate.load(rlvrambench_hf.metric_path())` "
        f"loads it from any folder (configs {', '.join(METRIC_CONFIGS)}). These commands print that path, write the "
        "metric's Hub Space folder and publish it, so that evaluate.load('OWNER/NAME') works for everyone.",
        metavar="ACTION",
    )

    path = commands.add_parser(
        "path",
        help="print the installed module's folder (for evaluate.load)",
        description="Print the folder of the installed evaluate module (evaluate.load(PATH), or "
        f"evaluate.load(PATH, CONFIG) with CONFIG one of {', '.join(METRIC_CONFIGS)}); --loading-script prints the "
        "installed builder module instead.",
    )
    path.add_argument("--loading-script", action="store_true", help="print the builder module's path instead")
    path.set_defaults(handler=run_path)

    space = commands.add_parser(
        "space",
        help="write the metric's Hub Space folder",
        description="Write the folder of the metric's Hub Space: the module as NAME.py, the metric card with "
        "its Space YAML (README.md), evaluate's Gradio app.py and requirements.txt naming this package.",
    )
    space.add_argument("--output", required=True, metavar="DIR", help="folder to write (must not exist or be empty)")
    space.add_argument("--repo-id", default=DEFAULT_SPACE_ID, help=_SPACE_ID_HELP.format(DEFAULT_SPACE_ID))
    space.add_argument("--overwrite", action="store_true", help="replace the Space files of a previous write")
    space.set_defaults(handler=run_space)

    push = commands.add_parser(
        "push",
        help="verify, then commit a Space folder to a Hub Space repository",
        description="Verify that FOLDER is exactly the Space this package writes for --repo-id, compare it with "
        "the remote revision file by file, print the plan and commit it as one atomic commit (a missing Space "
        "is created with the Gradio SDK). --dry-run needs no token.",
    )
    push.add_argument("folder", metavar="FOLDER", help="the Space folder (written by metric space)")
    push.add_argument("--repo-id", default=DEFAULT_SPACE_ID, help=_SPACE_ID_HELP.format(DEFAULT_SPACE_ID))
    add_push_options(push, default_message="names the package version")
    push.set_defaults(handler=run_push)


def run_path(args: argparse.Namespace) -> int:
    from .. import loading_script_path, metric_path

    print(loading_script_path() if args.loading_script else metric_path())
    return 0


def run_space(args: argparse.Namespace) -> int:
    from ..release.space import space_files, write_space

    folder = write_space(args.output, args.repo_id, overwrite=args.overwrite)
    names = ", ".join(space_files(args.repo_id))
    print(f"wrote the Space {args.repo_id} to {folder}: {names}")
    return 0


def run_push(args: argparse.Namespace) -> int:
    from ..release.space import push_space

    return push_and_print(push_space, args)
