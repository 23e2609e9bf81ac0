"""The main job on the real data (``make demo``): the configs table and a typed sample of every config,
then the headline results: the transfer reference rule scored per track, the admission replay summary and the
follow-up study scores.

``python -m rlvrambench_hf.demo [--source S] [--revision R]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

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
    with tempfile.TemporaryDirectory(prefix="rlvrambench-demo-") as folder:
        predictions, scores = str(Path(folder) / "predictions.csv"), str(Path(folder) / "scores.json")
        steps = [
            ("Transfer tasks: the source_label reference rule, scored per track", [
                ["baseline", "--rule", "source_label", "--output", predictions],
                ["evaluate", "--predictions", predictions, "--output", scores]]),
            ("Admission panel: the three published rules at budgets 0-3", [
                ["replay", "--output", str(Path(folder) / "admission.json")]]),
            ("Follow-up studies: the frozen predictions, resolved subset beside unscored approvals", [
                ["followup", "score", "--study", "larger_model"], ["followup", "score", "--study", "expanded_host"]]),
        ]
        for title, commands in steps:
            print(f"\n== {title}")
            for command in commands:
                status = max(status, cli_main(common + command))
    return status


if __name__ == "__main__":
    sys.exit(main())
