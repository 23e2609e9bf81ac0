"""Timing of the admission replay: ``rlvrambench replay`` as a whole process, against a bare interpreter.

Prints medians (seconds) and ratios; it asserts nothing. The source is the release snapshot
($RLVRAMBENCH_SNAPSHOT, else ../shared/rlvrambench/hub).

    .venv/bin/python bench/bench_admission.py [--repeat 9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = Path(os.environ.get("RLVRAMBENCH_SNAPSHOT") or ROOT.parent / "shared" / "rlvrambench" / "hub")


def median_seconds(command: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def median_in_process(repeat: int) -> float:
    from rlvrambench_hf.admission import replay_report

    replay_report(SNAPSHOT)  # warm the imports
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        replay_report(SNAPSHOT)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out, summary = Path(tmp) / "scores.json", Path(tmp) / "summary.csv"
        cli = [sys.executable, "-m", "rlvrambench_hf", "--source", str(SNAPSHOT)]
        rows = {
            "python -c pass": median_seconds([sys.executable, "-c", "pass"], args.repeat),
            "rlvrambench --help": median_seconds([*cli, "--help"], args.repeat),
            "rlvrambench replay (3 rules x 4 budgets)": median_seconds(
                [*cli, "replay", "--output", str(out), "--summary", str(summary)], args.repeat),
            "rlvrambench replay --attempts attempts.json": median_seconds(
                [*cli, "replay", "--attempts", str(SNAPSHOT / "benchmark/decision/results/attempts.json"),
                 "--output", str(out)], args.repeat),
            "replay_report() in process": median_in_process(args.repeat),
        }
    base = rows["python -c pass"]
    print(f"admission replay, median of {args.repeat} runs, source {SNAPSHOT}")
    width = max(map(len, rows))
    for name, seconds in rows.items():
        print(f"{name:<{width}}  {seconds:8.3f} s  {seconds / base:6.1f}x bare interpreter")


if __name__ == "__main__":
    main()
