"""Timing of the admission replay: ``rlvrambench replay`` as a whole process, against a bare interpreter.

Prints medians (seconds) and ratios; it asserts nothing. The source is the release snapshot
($RLVRAMBENCH_SOURCE, else ../shared/rlvrambench/hub).

    .venv/bin/python bench/bench_admission.py [--repeat 9]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from timing import SNAPSHOT, median_process_seconds, median_seconds


def median_in_process(repeat: int) -> float:
    from rlvrambench_hf.admission import replay_report

    replay_report(SNAPSHOT)  # warm the imports
    return median_seconds(lambda: replay_report(SNAPSHOT), repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out, summary = Path(tmp) / "scores.json", Path(tmp) / "summary.csv"
        cli = [sys.executable, "-m", "rlvrambench_hf", "--source", str(SNAPSHOT)]
        rows = {
            "python -c pass": median_process_seconds([sys.executable, "-c", "pass"], args.repeat),
            "rlvrambench --help": median_process_seconds([*cli, "--help"], args.repeat),
            "rlvrambench replay (3 rules x 4 budgets)": median_process_seconds(
                [*cli, "replay", "--output", str(out), "--summary", str(summary)], args.repeat
            ),
            "rlvrambench replay --attempts attempts.json": median_process_seconds(
                [
                    *cli,
                    "replay",
                    "--attempts",
                    str(SNAPSHOT / "benchmark/decision/results/attempts.json"),
                    "--output",
                    str(out),
                ],
                args.repeat,
            ),
            "replay_report() in process": median_in_process(args.repeat),
        }
    base = rows["python -c pass"]
    print(f"admission replay, median of {args.repeat} runs, source {SNAPSHOT}")
    width = max(map(len, rows))
    for name, seconds in rows.items():
        print(f"{name:<{width}}  {seconds:8.3f} s  {seconds / base:6.1f}x bare interpreter")


if __name__ == "__main__":
    main()
