"""Reading plans: a grid CSV of 10 / 1,000 / 100,000 planned runs to validated Plans (issue 17, items 4 and 7).

Prints, per size, the median seconds of ``read_plans`` in process (typing, range and consistency checks, levels
and flags, the release's ``configurations`` table read once per call), the part spent typing and checking the
cells, and the whole process (interpreter start and imports included) with its peak RSS. The CSV half of the
sweep target (100,000 plans, <= 3 s and <= 600 MiB for the whole sweep) must leave room for the answers: reading
should take well under a second.
"""

from __future__ import annotations

import csv
import itertools
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import ROOT, SNAPSHOT, median_seconds

SIZES = (10, 1_000, 100_000)
RUNS = 5
GRID = {
    "model_id": ["Qwen/Qwen2.5-3B-Instruct", "microsoft/Phi-4-mini-instruct", "ibm-granite/granite-3.3-2b-instruct"],
    "workload_id": ["gsm8k", "math", "code_standard", "longer_prompt_code"],
    "gpu_count": [2, 4, 8],
    "actor_micro_batch": [1, 2, 4, 8, 16, 32],
    "vllm_gpu_memory_utilization": [0.3, 0.45, 0.5, 0.6, 0.7, 0.8, 0.85],
    "parameter_offload": ["True", "False"],
    "max_response_length": [512, 1024, 2048, 4096],
    "rollout_n": [2, 4, 5, 8],
    "rollout_logprob_micro_batch": [4, 8],
}
FIXED = {"rollout_tp_size": 1, "ref_logprob_micro_batch": 4, "optimizer_offload": "False", "max_prompt_length": 512,
         "train_batch_size": 64}  # fmt: skip


def write_grid(path: Path, size: int) -> None:
    columns = [*GRID, *FIXED, "max_model_len"]
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for values in itertools.islice(itertools.cycle(itertools.product(*GRID.values())), size):
            row = dict(zip(GRID, values)) | FIXED
            row["max_model_len"] = row["max_prompt_length"] + row["max_response_length"]
            writer.writerow([row[c] for c in columns])


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        paths = {size: Path(folder) / f"grid-{size}.csv" for size in SIZES}
        for size, path in paths.items():
            write_grid(path, size)
        # whole processes first: a child's peak RSS counts the parent's pages at fork time
        processes = {size: whole_process(path) for size, path in paths.items()}
        in_process(paths, processes)


def in_process(paths: dict[int, Path], processes: dict[int, tuple[float, float, float]]) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from rlvrambench_hf.advisor import read_plans
    from rlvrambench_hf.advisor.read.checks import Where, check_ranges, typed_from_text
    from rlvrambench_hf.data.schema.registry import get_spec

    spec = get_spec("configurations")
    print(f"read_plans of a grid CSV (median of {RUNS}; release {SNAPSHOT})")
    print(f"{'plans':>8} {'MB':>6} {'read_plans s':>13} {'typing+checks s':>16} {'process s':>10} {'cpu s':>6} "
          f"{'peak MiB':>9}")  # fmt: skip
    for size, path in paths.items():
        assert len(read_plans(path, source=SNAPSHOT)) == size
        options = pacsv.ConvertOptions(column_types={c: pa.string() for c in spec.column_names})
        raw = pacsv.read_csv(path, convert_options=options)
        where = Where(str, {})

        def typed(raw: pa.Table = raw, where: Where = where) -> None:
            check_ranges(typed_from_text(raw, spec.columns, where), where)

        whole = median_seconds(lambda path=path: read_plans(path, source=SNAPSHOT), RUNS)
        checks = median_seconds(typed, RUNS)
        process, cpu, peak = processes[size]
        print(f"{size:>8} {path.stat().st_size / 1e6:>6.1f} {whole:>13.3f} {checks:>16.3f} {process:>10.2f} "
              f"{cpu:>6.2f} {peak:>9.0f}")  # fmt: skip


def whole_process(path: Path) -> tuple[float, float, float]:
    """Median wall and CPU seconds and the largest peak RSS (MiB, as the process itself reports it at its end) of
    ``python -c read_plans(...)`` as a fresh process (CPU time shows the work when the shared machine is busy)."""
    code = (
        "import resource, sys; from rlvrambench_hf.advisor import read_plans; "
        f"assert len(read_plans(sys.argv[1], source={str(SNAPSHOT)!r})) > 0; "
        "use = resource.getrusage(resource.RUSAGE_SELF); print(use.ru_maxrss, use.ru_utime + use.ru_stime)"
    )
    times, cpu, peak = [], [], 0.0
    for _ in range(RUNS):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code, str(path)], check=True, cwd=ROOT, capture_output=True)
        times.append(time.perf_counter() - start)
        rss, seconds = done.stdout.split()[-2:]
        peak, cpu = max(peak, int(rss) / 1024), [*cpu, float(seconds)]
    return statistics.median(times), statistics.median(cpu), peak


if __name__ == "__main__":
    main()
