"""``rlvrambench demo``: the main job on the real data (``make demo``).

The configs table and a typed sample of every config, then the headline results: the transfer reference rule
scored per track, the admission replay summary and the follow-up study scores. Each step is a command of this
CLI, run with the same global ``--source`` / ``--revision``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from .shared.common import source_of


def add_demo(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run the main job on the real data, each step a command of this CLI with the same global --source and "
        "--revision: the configs table and a typed sample of every config, then the transfer reference rule "
        "scored per track, the admission panel's published rules at budgets 0-3, the follow-up studies' scores "
        "and the estimator comparison with model families held out. Writes nothing outside a temporary folder."
    )
    parser.set_defaults(handler=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    from ..data.schema.registry import card_configs
    from . import main

    common = [a for pair in (("--source", args.source), ("--revision", args.revision)) if pair[1] for a in pair]
    status = main([*common, "configs"])
    source = source_of(args)
    for spec in card_configs():
        if source.has(spec.path):
            print()
            status = max(status, main([*common, "show", spec.name, "--limit", "2"]))
    with tempfile.TemporaryDirectory(prefix="rlvrambench-demo-") as folder:
        predictions, scores = str(Path(folder) / "predictions.csv"), str(Path(folder) / "scores.json")
        steps = [
            (
                "Transfer tasks: the source_label reference rule, scored per track",
                [
                    ["baseline", "--rule", "source_label", "--output", predictions],
                    ["evaluate", "--predictions", predictions, "--output", scores],
                ],
            ),
            (
                "Admission panel: the three published rules at budgets 0-3",
                [["replay", "--output", str(Path(folder) / "admission.json")]],
            ),
            (
                "Follow-up studies: the frozen predictions, resolved subset beside unscored approvals",
                [["followup", "score", "--study", "larger_model"], ["followup", "score", "--study", "expanded_host"]],
            ),
            (
                "Estimator comparison: the references with each model family held out",
                [["estimate", "retrospective", "--output", str(Path(folder) / "retrospective.json")]],
            ),
        ]
        for title, commands in steps:
            print(f"\n== {title}")
            for command in commands:
                status = max(status, main([*common, *command]))
    return status
