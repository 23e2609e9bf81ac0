"""What every benchmark script shares: where the release is, and median timings (functions or whole processes)."""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The release folder: $RLVRAMBENCH_SOURCE when it names a folder, else $RLVRAMBENCH_SNAPSHOT (its older name), else
#: ../shared/rlvrambench/hub beside the checkout.
SNAPSHOT = (
    Path(
        next(
            (v for v in (os.environ.get("RLVRAMBENCH_SOURCE"),) if v and Path(v).expanduser().is_dir()),
            os.environ.get("RLVRAMBENCH_SNAPSHOT") or ROOT.parent / "shared" / "rlvrambench" / "hub",
        )
    )
    .expanduser()
    .resolve()
)


def median_seconds(run: Callable[[], object], runs: int) -> float:
    """Median wall time of ``run()`` over ``runs`` calls."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def median_process_seconds(argv: list[str], runs: int, cwd: Path = ROOT) -> float:
    """Median wall time of a whole process, interpreter start included (run from the repository root)."""
    return median_seconds(lambda: subprocess.run(argv, check=True, capture_output=True, cwd=cwd), runs)
