"""Speed of the estimator comparison: prints medians of several runs and the ratios against the targets.

1. In process (imports done, inputs read once): the whole retrospective (3 folds × 3 methods, fitted and scored),
   the final fit and the 36 prospective predictions (target: < 1 s); also with the inputs read from the release.
2. Whole processes: ``rlvrambench --source DIR estimate retrospective`` and ``estimate prospective``, interpreter
   start and imports included (target: < 3 s each); and ``rlvrambench configs`` to show that the lazy imports of
   scipy and scikit-learn leave other commands alone.
(The advisor, which answers planned runs with these methods, has its own ``bench_advisor.py``.)

Usage: ``python bench/bench_estimation.py [--runs 7] [--source DIR]``
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import SNAPSHOT, median_process_seconds, median_seconds

IN_PROCESS_TARGET_S = 1.0
COLD = """
import sys, time
import rlvrambench_hf
start = time.perf_counter()
from rlvrambench_hf.estimation import load_inputs
from rlvrambench_hf.estimation.folds import final_fit, prospective, retrospective
inputs = load_inputs(sys.argv[1])
retrospective(inputs.pool, inputs.parameters)
prospective(final_fit(inputs.pool, inputs.parameters), inputs.targets)
print(time.perf_counter() - start)
"""
CLI_TARGET_S = 3.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per median (default 7)")
    parser.add_argument("--source", default=str(SNAPSHOT), help="release folder (default: the shared snapshot)")
    args = parser.parse_args()

    from rlvrambench_hf.estimation import load_inputs
    from rlvrambench_hf.estimation.folds import final_fit, prospective, retrospective

    inputs = load_inputs(args.source)  # warms the imports (scipy, scikit-learn) and reads the release once

    def comparison() -> None:
        retrospective(inputs.pool, inputs.parameters)
        prospective(final_fit(inputs.pool, inputs.parameters), inputs.targets)

    def comparison_with_inputs() -> None:
        fresh = load_inputs(args.source)
        retrospective(fresh.pool, fresh.parameters)
        prospective(final_fit(fresh.pool, fresh.parameters), fresh.targets)

    core = median_seconds(comparison, args.runs)
    whole = median_seconds(comparison_with_inputs, args.runs)
    print(
        f"in process, retrospective (3 folds x 3 methods) + final fit + 36 prospective predictions: "
        f"median {core:.3f} s over {args.runs} runs "
        f"(target < {IN_PROCESS_TARGET_S} s: {_met(core, IN_PROCESS_TARGET_S)})"
    )
    print(
        f"  the same with the inputs read from the release each time: median {whole:.3f} s "
        f"({_met(whole, IN_PROCESS_TARGET_S)})"
    )

    cold = []
    for _ in range(args.runs):
        out = subprocess.run([sys.executable, "-c", COLD, args.source], check=True, capture_output=True, text=True)
        cold.append(float(out.stdout))
    first = statistics.median(cold)
    print(
        f"  first call in a fresh interpreter (reads the inputs, imports scipy and scikit-learn): median "
        f"{first:.3f} s ({_met(first, IN_PROCESS_TARGET_S)})"
    )

    base = [sys.executable, "-m", "rlvrambench_hf", "--source", args.source]
    with tempfile.TemporaryDirectory() as folder:
        for command in (["estimate", "retrospective"], ["estimate", "prospective"]):
            seconds = median_process_seconds([*base, *command, "--output", str(Path(folder) / "out.json")], args.runs)
            print(
                f"whole process `rlvrambench {' '.join(command)}`: median {seconds:.3f} s "
                f"(target < {CLI_TARGET_S} s: {_met(seconds, CLI_TARGET_S)})"
            )
    configs = median_process_seconds([*base, "configs"], args.runs)
    bare = median_process_seconds([sys.executable, "-c", "pass"], args.runs)
    print(
        f"whole process `rlvrambench configs` (no scipy / scikit-learn import): median {configs:.3f} s; "
        f"bare interpreter {bare:.3f} s"
    )

    return 0


def _met(seconds: float, target: float) -> str:
    return f"met, {seconds / target:.2f} of the target" if seconds < target else f"MISSED, {seconds / target:.2f}x"


if __name__ == "__main__":
    sys.exit(main())
