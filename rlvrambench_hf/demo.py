"""The main job on the real data (``make demo``): the configs table and a typed sample of every config.

``python -m rlvrambench_hf.demo [--source S] [--revision R]``
"""

from __future__ import annotations

import argparse
import sys

from .cli import main as cli_main
from .registry import card_configs
from .sources import open_source


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlvrambench_hf.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--source")
    parser.add_argument("--revision")
    args = parser.parse_args(argv)
    common = [a for pair in (("--source", args.source), ("--revision", args.revision)) if pair[1] for a in pair]
    status = cli_main(common + ["configs"])
    source = open_source(args.source, args.revision)
    for spec in card_configs():
        if source.has(spec.path):
            print()
            status = max(status, cli_main(common + ["show", spec.name, "--limit", "2"]))
    return status


if __name__ == "__main__":
    sys.exit(main())
