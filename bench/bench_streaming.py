"""Benchmark: a full streamed pass of one file through the package beside plain ``datasets`` streaming.

For ``eligible_runs`` (``benchmark/runs.csv``) and the largest table, ``stage_measurements``, both ways stream the
same file of the local release copy: ``rlvrambench_hf.load_dataset(config, split, source=DIR, streaming=True)``
(typed: labels as ClassLabel, nulls, lists) and ``datasets.load_dataset("csv", data_files=FILE, streaming=True)``
(types inferred by pyarrow). Two measurements, medians over repeats:

- **pass**: iterating every row of a stream made beforehand, from ``iter()`` to the last row;
- **made + first pass**: making the stream and iterating it, with the package's in-process copy of the typed table
  emptied first, so that its reading, typing and digest check are counted as plain streaming's parsing is.

Ratios are package rows/s over plain rows/s, measured in the same run (target: >= 1.0).

    python bench/bench_streaming.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

from timing import SNAPSHOT

os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="rlvrambench-bench-streaming-")
os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"

CONFIGS = ("eligible_runs", "stage_measurements")


def full_pass(stream: object) -> int:
    return sum(1 for _ in stream)  # type: ignore[attr-defined]


def median_rate(make: Callable[[], object], runs: int, *, made_beforehand: bool, reset: Callable[[], None]) -> float:
    """Median rows/s of a full pass; the stream is made outside the timing when ``made_beforehand``."""
    rates = []
    for _ in range(runs):
        reset()
        start = time.perf_counter()
        stream = make()
        if made_beforehand:
            start = time.perf_counter()
        rows = full_pass(stream)
        rates.append(rows / (time.perf_counter() - start))
    return statistics.median(rates)


def bench_config(config: str, runs: int) -> tuple[float, float]:
    """Print one config's figures; return its two ratios (pass, made + first pass)."""
    import datasets

    from rlvrambench_hf import load_dataset
    from rlvrambench_hf.data import builder
    from rlvrambench_hf.data.schema.registry import get_spec

    spec = get_spec(config)
    path = str(SNAPSHOT / spec.path)

    def package() -> object:
        return load_dataset(config, spec.split, source=SNAPSHOT, streaming=True)

    def plain() -> object:
        return datasets.load_dataset("csv", data_files=path, split="train", streaming=True)

    rows = full_pass(package())
    assert rows == full_pass(plain()), "both ways must stream the same rows"
    full_pass(plain())  # warm both once: imports, page cache
    keep, empty = (lambda: None), builder._read_once.cache_clear
    figures = {
        "pass": (
            median_rate(package, runs, made_beforehand=True, reset=keep),
            median_rate(plain, runs, made_beforehand=True, reset=keep),
        ),
        "made + first pass": (
            median_rate(package, runs, made_beforehand=False, reset=empty),
            median_rate(plain, runs, made_beforehand=False, reset=keep),
        ),
    }
    ratios = []
    for what, (ours, theirs) in figures.items():
        ratios.append(ours / theirs)
        print(f"{config:20s} {rows:6d} {what:18s} {ours:14,.0f} {theirs:14,.0f} {ours / theirs:8.2f}")
    return ratios[0], ratios[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    import datasets

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, datasets {datasets.__version__}, {SNAPSHOT}")
    print(f"{'config':20s} {'rows':>6s} {'measured':18s} {'package rows/s':>14s} {'plain rows/s':>14s} {'ratio':>8s}")
    ratios = [bench_config(config, args.runs) for config in CONFIGS]
    worst = min(r for pair in ratios for r in pair)
    print(f"lowest ratio package/plain: {worst:.2f} (target: >= 1.00, {'met' if worst >= 1 else 'missed'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
