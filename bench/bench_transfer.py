"""Speed of transfer scoring: prints medians of several runs and the ratios against the targets.

1. ``rlvrambench --source DIR evaluate`` as a whole process vs ``bench/reference_evaluate.py`` (standard library
   only) on the same predictions (target: the CLI within 2x of the reference).
2. The scoring core on 10,000,000 synthetic predictions: building the hidden key once, then validating, aligning
   and scoring the prediction rows (target: < 2 s), and reading the same rows from a CSV file; rows per second and
   peak RSS, each measured in a fresh process.
3. ``compute()`` of the evaluate module on 400 predictions once the labels are cached (target: < 10 ms).

Usage: ``python bench/bench_transfer.py [--runs 7] [--rows 10000000] [--source DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = os.environ.get("RLVRAMBENCH_SNAPSHOT") or str(ROOT.parent / "shared" / "rlvrambench" / "hub")


def timed_process(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_cli(source: str, runs: int, work: Path) -> dict:
    predictions = work / "predictions.csv"
    subprocess.run([sys.executable, "-m", "rlvrambench_hf", "--source", source, "baseline", "--output",
                    str(predictions)], check=True, capture_output=True)
    cli = [sys.executable, "-m", "rlvrambench_hf", "--source", source, "evaluate", "--predictions",
           str(predictions), "--output", str(work / "cli.json")]
    reference = [sys.executable, str(ROOT / "bench" / "reference_evaluate.py"), source, str(predictions),
                 str(work / "reference.json")]
    cli_s, reference_s = timed_process(cli, runs), timed_process(reference, runs)
    same = (work / "cli.json").read_bytes() == (work / "reference.json").read_bytes()
    imports = subprocess.run([sys.executable, "-c", "import sys, runpy; sys.argv = " + repr(cli[2:]) +
                              "; import rlvrambench_hf.cli as c; c.main(sys.argv[1:]); "
                              "print([m for m in ('pandas', 'datasets', 'evaluate') if m in sys.modules], "
                              "file=sys.stderr)"], capture_output=True, text=True)
    return {"cli_evaluate_s": cli_s, "reference_script_s": reference_s, "ratio": cli_s / reference_s,
            "identical_score_files": same, "heavy_modules_imported": imports.stderr.strip().splitlines()[-1]}


_CORE_WORKER = r"""
import json, resource, sys, time
import numpy as np, pyarrow as pa, pyarrow.compute as pc
from rlvrambench_hf import transfer

rows, mode, csv_path, per_task = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
rng = np.random.default_rng(0)
def ids(prefix, codes):  # zero-padded, so that ids sort like their numbers (the real ids are sorted too)
    digits = pc.utf8_lpad(pa.array(codes).cast(pa.string()), 12, "0")
    return pc.binary_join_element_wise(pa.scalar(prefix), digits, "")
task = np.arange(rows) // per_task
n_targets = max(rows // 10, 1)
queries = pa.table({
    "query_id": ids("query-", np.arange(rows)),
    "task_id": ids("task-", task),
    "track": pa.array(np.array(transfer.TRACKS)[task % 4]),
    "source_configuration_id": ids("cfg-s", (task * 3 + np.arange(rows) % 3) % n_targets),
    "target_configuration_id": ids("cfg-t", rng.integers(0, n_targets, rows)),
})
observed = rng.integers(0, 3, n_targets)
outcomes = pa.table({
    "configuration_id": pa.concat_arrays([ids("cfg-t", np.arange(n_targets)), ids("cfg-s", np.arange(n_targets))]),
    "observed_state": pa.array(np.array(transfer.OUTCOME_LABELS)[np.concatenate([observed, observed])]),
    "eligible_processes": pa.array(np.full(2 * n_targets, 3)),
    "recorded_attempts": pa.array(np.full(2 * n_targets, 4)),
})
start = time.perf_counter()
key = transfer.scoring_key(queries, outcomes)
key.scope_counts, key.cell_base
key_s = time.perf_counter() - start
# predictions: 90 % correct; in query order (as `baseline` writes them) or shuffled
truth = key.observed
predicted = np.where(rng.random(rows) < 0.9, truth, rng.integers(0, 3, rows).astype(np.int8))
order = rng.permutation(rows) if mode == "shuffled" else np.arange(rows)
pred_ids = pc.take(key.query_ids, pa.array(order))
pred_states = pc.take(pa.array(transfer.OUTCOME_LABELS), pa.array(predicted[order]))
if mode == "write_csv":
    with open(csv_path, "w") as handle:
        handle.write("query_id,predicted_state\n")
        for chunk in range(0, rows, 1_000_000):
            ids_ = pred_ids.slice(chunk, 1_000_000).to_pylist()
            st_ = pred_states.slice(chunk, 1_000_000).to_pylist()
            handle.write("".join(f"{q},{s}\n" for q, s in zip(ids_, st_)))
    print(json.dumps({}))
    sys.exit()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
if mode == "csv":
    pred_ids, pred_states = transfer.read_predictions(csv_path)
read_s = time.perf_counter() - start
scores = transfer.score_predictions(key, pred_ids, pred_states)
total_s = time.perf_counter() - start
assert scores["overall"]["queries"] == rows and len(scores["per_task"]) == len(key.task_ids)
print(json.dumps({"key_s": key_s, "read_s": read_s, "score_s": total_s - read_s, "total_s": total_s,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rss_before_scoring_mib": before / 1024}))
"""


def bench_core(rows: int, runs: int, work: Path, per_task: int) -> dict:
    csv_path = work / "synthetic.csv"
    worker = [sys.executable, "-c", _CORE_WORKER, str(rows)]
    subprocess.run(worker + ["write_csv", str(csv_path), str(per_task)], check=True, capture_output=True)
    out = {}
    for mode in ("ordered", "csv", "shuffled"):
        results = [json.loads(subprocess.run(worker + [mode, str(csv_path), str(per_task)], check=True,
                                             capture_output=True, text=True).stdout) for _ in range(runs)]
        med = {k: statistics.median(r[k] for r in results) for k in results[0]}
        med["rows_per_s"] = rows / med["total_s"]
        out[mode] = med
    csv_path.unlink()
    return out


_COMPUTE_WORKER = r"""
import json, statistics, sys, time
import evaluate
from rlvrambench_hf import transfer
source, metric_path = sys.argv[1], sys.argv[2]
tables = transfer.load_transfer_tables(source)
p = transfer.reference_predictions(tables["queries"], tables["outcomes"], "source_label")
ids, states = p.column("query_id").to_pylist(), p.column("predicted_state").to_pylist()
out = {}
for keep in (False, True):
    metric = evaluate.load(metric_path, keep_in_memory=keep)
    start = time.perf_counter()
    metric.compute(predictions=states, query_ids=ids, source=source)
    first = time.perf_counter() - start
    times = []
    for _ in range(50):
        start = time.perf_counter()
        metric.compute(predictions=states, query_ids=ids, source=source)
        times.append(time.perf_counter() - start)
    out["keep_in_memory" if keep else "on_disk"] = {"first_call_ms": first * 1000,
                                                    "cached_median_ms": statistics.median(times) * 1000}
start = time.perf_counter()
for _ in range(50):
    transfer.score_lists(ids, states, source=source)
out["core_score_lists_ms"] = (time.perf_counter() - start) / 50 * 1000
print(json.dumps(out))
"""


def bench_compute(source: str, work: Path) -> dict:
    env = {**os.environ, "HF_HOME": str(work / "hf-home")}
    r = subprocess.run([sys.executable, "-c", _COMPUTE_WORKER, source, str(ROOT / "metrics" / "rlvrambench")],
                       check=True, capture_output=True, text=True, env=env)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rows-per-task", type=int, default=1000)
    parser.add_argument("--source", default=DEFAULT_SOURCE)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-transfer-") as tmp:
        work = Path(tmp)
        cli = bench_cli(args.source, args.runs, work)
        print(f"CLI evaluate (whole process), median of {args.runs}: {cli['cli_evaluate_s']:.3f} s")
        print(f"dependency-free reference script:            {cli['reference_script_s']:.3f} s")
        print(f"ratio CLI / reference: {cli['ratio']:.2f} (target <= 2); identical score files: "
              f"{cli['identical_score_files']}; heavy modules on the path: {cli['heavy_modules_imported']}")
        core = bench_core(args.rows, max(3, args.runs // 2), work, args.rows_per_task)
        print(f"core on {args.rows:,} synthetic predictions, {args.rows // args.rows_per_task:,} tasks in 4 tracks "
              f"(medians of {max(3, args.runs // 2)} fresh processes):")
        for mode, m in core.items():
            print(f"  {mode:8s}: validate+score {m['score_s']:.3f} s"
                  + (f" + read CSV {m['read_s']:.3f} s" if mode == "csv" else "")
                  + f" = {m['total_s']:.3f} s ({m['rows_per_s'] / 1e6:.1f} M rows/s; target < 2 s: "
                  f"{m['total_s'] / 2:.2f}x of budget); peak RSS {m['peak_rss_mib']:.0f} MiB; "
                  f"hidden key built once in {m['key_s']:.3f} s")
        compute = bench_compute(args.source, work)
        for mode in ("on_disk", "keep_in_memory"):
            c = compute[mode]
            print(f"evaluate compute() on 400 predictions ({mode}): first {c['first_call_ms']:.1f} ms, "
                  f"cached median {c['cached_median_ms']:.2f} ms (target < 10 ms)")
        print(f"core score_lists on 400 predictions (cached): {compute['core_score_lists_ms']:.2f} ms")


if __name__ == "__main__":
    main()
