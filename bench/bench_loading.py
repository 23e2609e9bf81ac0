"""Benchmark: typed loading against the plain alternatives, and streaming through an olah-served Hub.

For each config: ``rlvrambench_hf.load_dataset`` cold (empty cache) and warm, plain ``datasets.load_dataset`` on
the CSV card (warm; a copy of the card without the absent config, since plain loading fails otherwise), and
``pandas.read_csv`` followed by the dtype fixes needed to reach the same types. Then streaming through olah:
time to first row and rows per second. Prints medians of several runs and the ratios measured in the same run.

    python bench/bench_loading.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from timing import ROOT, SNAPSHOT, median_seconds

WORK = Path(tempfile.mkdtemp(prefix="rlvrambench-bench-"))
os.environ["HF_HOME"] = str(WORK / "hf-home")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"


def plain_card_copy() -> Path:
    """The release with the absent config removed from the card, so plain load_dataset can run at all."""
    copy = WORK / "plain-card"
    shutil.copytree(SNAPSHOT, copy)
    card = (copy / "README.md").read_text()
    card = re.sub(r"- config_name: configuration_feasibility\n(  .*\n)+", "", card)
    (copy / "README.md").write_text(card)
    return copy


def pandas_typed(spec, path: Path):
    """What a user writes by hand with pandas to reach the registry's types."""
    import pandas as pd

    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    for column in spec.columns:
        values = frame[column.name].replace({"": None, "nan": None})
        if column.kind == "int64":
            frame[column.name] = pd.array(values, dtype="Int64")
        elif column.kind == "float64":
            frame[column.name] = pd.to_numeric(values).astype("Float64")
        elif column.kind == "bool":
            frame[column.name] = values.map({"True": True, "False": False, "1": True, "0": False}).astype("boolean")
        elif column.kind == "label":
            frame[column.name] = pd.Categorical(values, categories=list(column.labels))
        elif column.kind == "string_list":
            frame[column.name] = values.map(lambda v: v.split(";") if v is not None else None)
        else:
            frame[column.name] = values
    return frame


def bench_configs(runs: int) -> None:

    from rlvrambench_hf.data.schema.registry import card_configs

    plain_root = plain_card_copy()
    print(f"{'config':30s} {'cold':>8s} {'warm':>8s} {'plain':>8s} {'pandas':>8s}  warm/plain  warm/pandas")
    ratios = []
    for spec in card_configs():
        if (SNAPSHOT / spec.path).is_file():
            ratios.append(bench_config(spec, plain_root, runs))
    print(f"median warm/plain ratio: {statistics.median(ratios):.2f} (target: <= 1.00)")


def bench_streaming(runs: int) -> None:
    from rlvrambench_hf import load_dataset

    first, rates = [], []
    for _ in range(runs):
        start = time.perf_counter()
        stream = iter(
            load_dataset(
                "stage_measurements", "measured", source="kobzaond/RLVRAMBench", revision="main", streaming=True
            )
        )
        next(stream)
        first.append(time.perf_counter() - start)
        start = time.perf_counter()
        rows = 1 + sum(1 for _ in stream)
        rates.append(rows / (time.perf_counter() - start))
    print(
        f"streaming stage_measurements through olah ({rows} rows): time to first row {first[0]:.3f} s with an "
        f"empty Hub cache, median {statistics.median(first[1:]):.3f} s warm; "
        f"median {statistics.median(rates):,.0f} rows/s after the first row"
    )


def start_hub():
    """An olah server for the streaming part; HF_ENDPOINT must be set before huggingface_hub is imported."""
    sys.path.insert(0, str(ROOT / "tests"))
    from hubserver import HubServer

    server = HubServer(WORK / "olah")
    server.add_repo("kobzaond/RLVRAMBench", SNAPSHOT)
    os.environ["HF_ENDPOINT"] = server.endpoint
    return server.start()


def bench_config(spec, plain_root: Path, runs: int) -> float:
    """Print one config's load times; returns its warm/plain ratio."""
    import datasets

    from rlvrambench_hf import load_dataset

    counter = iter(range(10_000))
    cold = median_seconds(
        lambda: load_dataset(spec.name, spec.split, source=SNAPSHOT, cache_dir=str(WORK / f"cold-{next(counter)}")),
        runs,
    )
    warm_dir = str(WORK / "warm")
    load_dataset(spec.name, spec.split, source=SNAPSHOT, cache_dir=warm_dir)
    warm = median_seconds(lambda: load_dataset(spec.name, spec.split, source=SNAPSHOT, cache_dir=warm_dir), runs)
    plain_dir = str(WORK / "plain")
    datasets.load_dataset(str(plain_root), spec.name, split=spec.split, cache_dir=plain_dir)
    plain = median_seconds(
        lambda: datasets.load_dataset(str(plain_root), spec.name, split=spec.split, cache_dir=plain_dir), runs
    )
    by_hand = median_seconds(lambda: pandas_typed(spec, SNAPSHOT / spec.path), runs)
    print(
        f"{spec.name:30s} {cold:8.3f} {warm:8.3f} {plain:8.3f} {by_hand:8.3f}  {warm / plain:10.2f}"
        f"  {warm / by_hand:11.2f}"
    )
    return warm / plain


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, snapshot {SNAPSHOT}")
    server = start_hub()
    try:
        bench_configs(args.runs)
        bench_streaming(max(args.runs, 2))
    finally:
        server.stop()
        shutil.rmtree(WORK, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
