"""Speed and memory of the advisor on sweeps: 10, 1,000 and 100,000 planned configurations (issue 17, item 7).

A grid of plans (the release's four models and workloads, levels c1-c4, 2 or 4 GPUs, micro-batches, log-prob
micro-batches, utilizations, offload, lengths, responses per prompt, batches) is written as a planned CSV (the
columns of ``targets.csv``) and as a typed Parquet file. Each figure is the median of several fresh processes:

1. whole process: ``rlvrambench estimate advise --planned grid.csv --output answers.csv`` (and ``.parquet``),
   interpreter start, reading, answering and writing included; target for 100,000 plans: <= 3 s and <= 600 MiB
   peak RSS;
2. the answering part alone, in a fresh process: the plans read from a typed Arrow IPC file (no CSV parsing),
   answered, the sweep table written as CSV — the time after imports, and the peak RSS of the process.

Besides the wall time, the CPU time (user + system) of the processes is printed: on a shared machine the wall
time of a single-threaded process grows with the load, its CPU time much less.

The fitted references are in huggingface_hub's assets folder after the first run (``advisor/fitted.py``); the
first process of a machine fits them (about 1.5 s more). Usage: ``python bench/bench_advisor.py [--runs 5]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import SNAPSHOT

SIZES = (10, 1_000, 100_000)
TARGET_S, TARGET_MIB = 3.0, 600.0
#: Runs the CLI in this interpreter and prints the peak RSS (MiB) on stderr's last line.
WHOLE = """
import resource, sys
from rlvrambench_hf.cli import main
try:
    code = main(sys.argv[1:])
finally:
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, file=sys.stderr)
sys.exit(code)
"""
ANSWERING = """
import resource, sys, time
import pyarrow as pa
from rlvrambench_hf.advisor import Plans, advise
from rlvrambench_hf.advisor.output.sweep import write_sweep
start = time.perf_counter()
table = pa.ipc.open_file(sys.argv[2]).read_all()
answers = advise(Plans(table, ["grid"] * table.num_rows), sys.argv[1])
write_sweep(answers, sys.argv[3])
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def grid(count: int):
    """``count`` plans drawn from the grid with a fixed seed (a typed table with the columns of targets.csv)."""
    import numpy as np
    import pyarrow as pa

    from rlvrambench_hf.data.schema.registry import get_spec

    rng = np.random.default_rng(17)
    values = {
        "model_id": [
            "Qwen/Qwen2.5-3B-Instruct",
            "Qwen/Qwen2.5-7B-Instruct",
            "ibm-granite/granite-3.3-2b-instruct",
            "microsoft/Phi-4-mini-instruct",
        ],
        "workload_id": ["gsm8k", "math", "code_standard", "longer_prompt_code"],
        "configuration_level": ["c1", "c2", "c3", "c4"],
        "gpu_count": [2, 4],
        "rollout_tp_size": [1],
        "actor_micro_batch": [4, 8, 16],
        "rollout_logprob_micro_batch": [4, 8],
        "ref_logprob_micro_batch": [4, 8],
        "vllm_gpu_memory_utilization": [0.4, 0.5, 0.6, 0.7, 0.8],
        "parameter_offload": [False, True],
        "optimizer_offload": [False],
        "free_cache_engine": [True],
        "max_prompt_length": [512, 1024],
        "max_response_length": [512, 1024, 2048],
        "max_num_seqs": [64, 128],
        "rollout_n": [2, 5],
        "train_batch_size": [32, 64],
    }
    columns = {name: [options[i] for i in rng.integers(0, len(options), count)] for name, options in values.items()}
    columns["max_model_len"] = [p + r for p, r in zip(columns["max_prompt_length"], columns["max_response_length"])]
    columns["configuration_id"] = [f"grid-{i + 1}" for i in range(count)]
    spec = get_spec("estimation_targets")
    return pa.table({n: pa.array(v, spec.column(n).arrow_type) for n, v in columns.items()})


def whole(source: str, planned: Path, output: Path, runs: int) -> tuple[float, float, float]:
    """(median wall seconds, median peak MiB, median CPU seconds) of the whole command."""
    import resource
    import time

    seconds, peaks, cpu = [], [], []
    for _ in range(runs):
        argv = [
            sys.executable,
            "-c",
            WHOLE,
            "--source",
            source,
            "estimate",
            "advise",
            "--planned",
            str(planned),
            "--output",
            str(output),
        ]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        seconds.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        peaks.append(float(done.stderr.strip().splitlines()[-1]))
    return statistics.median(seconds), statistics.median(peaks), statistics.median(cpu)


def answering(source: str, plans: Path, output: Path, runs: int) -> tuple[float, float]:
    seconds, peaks = [], []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", ANSWERING, source, str(plans), str(output)],
            capture_output=True,
            text=True,
            check=True,
        )
        took, peak = done.stdout.split()
        seconds.append(float(took))
        peaks.append(float(peak))
    return statistics.median(seconds), statistics.median(peaks)


def main() -> int:
    import pyarrow.csv as pacsv

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per median (default 5)")
    parser.add_argument("--source", default=str(SNAPSHOT), help="release folder (default: the shared snapshot)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        subprocess.run(
            [sys.executable, "-c", ANSWERING, args.source, *_files(work, 10, pacsv)[1:]],
            check=True,
            capture_output=True,
        )  # the first process stores the fitted references
        print("plans    | whole CLI to CSV: wall, CPU, peak | to Parquet: wall, CPU, peak | answering alone: s, peak")
        for count in SIZES:
            csv_in, parquet_in, _ = _files(work, count, pacsv)
            to_csv = whole(args.source, Path(csv_in), work / "answers.csv", args.runs)
            to_parquet = whole(args.source, Path(csv_in), work / "answers.parquet", args.runs)
            alone = answering(args.source, Path(parquet_in), work / "alone.csv", args.runs)
            print(
                f"{count:>8,} | {to_csv[0]:6.2f} s {to_csv[2]:6.2f} s {to_csv[1]:5.0f} MiB | {to_parquet[0]:6.2f} s "
                f"{to_parquet[2]:6.2f} s {to_parquet[1]:5.0f} MiB | {alone[0]:6.2f} s {alone[1]:5.0f} MiB"
            )
            if count == SIZES[-1]:
                _verdict(to_csv)
    return 0


def _verdict(to_csv: tuple[float, float, float]) -> None:
    """The bound for 100,000 plans, on the wall time and on the CPU time (with the machine's load beside it)."""
    wall, peak, cpu = to_csv
    load = os.getloadavg()[0]
    memory = "met" if peak <= TARGET_MIB else "MISSED"
    print(
        f"100,000 plans, whole process to CSV (target <= {TARGET_S} s, <= {TARGET_MIB:.0f} MiB): wall {wall:.2f} s "
        f"({'met' if wall <= TARGET_S else 'MISSED'}), CPU {cpu:.2f} s ({'met' if cpu <= TARGET_S else 'MISSED'}), "
        f"peak {peak:.0f} MiB ({memory}); load average {load:.1f} on {os.cpu_count()} cores"
    )


def _files(work: Path, count: int, pacsv: object) -> tuple[str, str, str]:
    import pyarrow as pa

    table = grid(count)
    csv_path, arrow_path = work / f"grid-{count}.csv", work / f"grid-{count}.arrow"
    text = table
    for i, field in enumerate(table.schema):  # booleans as the release writes them (True / False)
        if str(field.type) == "bool":
            text = text.set_column(i, field.name, [["True" if v else "False" for v in table[field.name].to_pylist()]])
    pacsv.write_csv(text, csv_path)  # type: ignore[attr-defined]
    with pa.ipc.new_file(arrow_path, table.schema) as writer:
        writer.write_table(table)
    return str(csv_path), str(arrow_path), str(work / "first.csv")


if __name__ == "__main__":
    sys.exit(main())
