"""Speed of transfer scoring: prints medians of several runs and the ratios against the targets.

1. ``rlvrambench --source DIR evaluate`` as a whole process vs ``bench/reference_evaluate.py`` (standard library
   only) on the same predictions (target: the CLI within 2x of the reference), and ``python -X importtime`` of the
   CLI path (evaluate, replay, configs, show must not import datasets, evaluate, matplotlib or pandas).
2. The scoring core on 1 M and 10 M synthetic predictions with the release's task structure (52 tasks in 4
   tracks, scaled up in queries per task), each figure a median of fresh processes with its peak RSS: encoded
   labels (score only; target >= 50 M rows/s), string arrays in query order and shuffled (target: < 2 s and
   < 1 GiB peak RSS for 10 M), and a CSV file read with ``read_predictions`` in both orders.
3. ``compute()`` of the evaluate module on 400 predictions once the labels are cached (target: < 10 ms).

Usage: ``python bench/bench_transfer.py [--runs 7] [--rows 1000000,10000000] [--source DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from rlvrambench_hf.scoring.predictionbounds import MAX_ROWS

from timing import ROOT, SNAPSHOT, median_process_seconds

DEFAULT_SOURCE = str(SNAPSHOT)


def bench_cli(source: str, runs: int, work: Path) -> dict:
    predictions = work / "predictions.csv"
    subprocess.run(
        [sys.executable, "-m", "rlvrambench_hf", "--source", source, "baseline", "--output", str(predictions)],
        check=True,
        capture_output=True,
    )
    cli = [
        sys.executable,
        "-m",
        "rlvrambench_hf",
        "--source",
        source,
        "evaluate",
        "--predictions",
        str(predictions),
        "--output",
        str(work / "cli.json"),
    ]
    reference = [
        sys.executable,
        str(ROOT / "bench" / "reference_evaluate.py"),
        source,
        str(predictions),
        str(work / "reference.json"),
    ]
    cli_s, reference_s = median_process_seconds(cli, runs), median_process_seconds(reference, runs)
    bare_s = median_process_seconds([sys.executable, "-c", "pass"], runs)
    same = (work / "cli.json").read_bytes() == (work / "reference.json").read_bytes()
    imports = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, runpy; sys.argv = "
            + repr(cli[2:])
            + "; import rlvrambench_hf.cli as c; c.main(sys.argv[1:]); "
            "print([m for m in ('pandas', 'datasets', 'evaluate') if m in sys.modules], "
            "file=sys.stderr)",
        ],
        capture_output=True,
        text=True,
    )
    return {
        "cli_evaluate_s": cli_s,
        "reference_script_s": reference_s,
        "bare_interpreter_s": bare_s,
        "ratio": cli_s / reference_s,
        "identical_score_files": same,
        "heavy_modules_imported": imports.stderr.strip().splitlines()[-1],
    }


_CORE_WORKER = r"""
import json, resource, statistics, sys, time
import numpy as np, pyarrow as pa, pyarrow.compute as pc, pyarrow.csv as pacsv
from rlvrambench_hf import transfer
from rlvrambench_hf.arrow import arrow_ints, arrow_strings
from rlvrambench_hf import OUTCOME_LABELS

rows, mode, csv_path, source = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
peak_rss_mib = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mib():
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize() / 2**20


def reset_peak_rss():
    # Linux: writing 5 to clear_refs resets the peak (VmHWM), so that the peak of one step can be read
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


def peak_since_reset_mib():
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("VmHWM:")) / 1024


def hex_ids(n):
    # "query-" + 16 hex digits of the row number: fixed width and sorted, like the release's query ids
    out = np.empty((n, 22), dtype=np.uint8)
    out[:, :6] = np.frombuffer(b"query-", dtype=np.uint8)
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    for begin in range(0, n, 1 << 20):
        i = np.arange(begin, min(n, begin + (1 << 20)), dtype=np.uint64)
        for k in range(16):
            out[begin:begin + len(i), 21 - k] = digits[(i >> np.uint64(4 * k)) & np.uint64(15)]
    offsets = np.arange(0, 22 * (n + 1), 22, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(out)])


# The release's task structure scaled up: synthetic query i copies task, track, source and target of real
# query i % 400, so there are 52 tasks in 4 tracks (sizes in the real proportions) and 94 targets.
tables = transfer.load_transfer_tables(source)
real, outcomes = tables["queries"], tables["outcomes"]
pick = arrow_ints((np.arange(rows, dtype=np.int64) % real.num_rows).astype(np.int32))
columns = {"query_id": hex_ids(rows)}
for name in ("task_id", "track", "source_configuration_id", "target_configuration_id"):
    encoded = pc.dictionary_encode(real.column(name)).combine_chunks()
    columns[name] = pa.DictionaryArray.from_arrays(pc.take(encoded.indices, pick), encoded.dictionary)
queries = pa.table(columns)
del columns, pick
start = time.perf_counter()
key = transfer.scoring_key(queries, outcomes)
key.scope_counts, key.cell_base
if mode in ("shuffled", "csv_shuffled"):
    getattr(key, "id_index", None)  # the id hash index, built once with the key
key_s = time.perf_counter() - start
del queries
# predictions: 90 % correct; in query order (as `baseline` writes them) or shuffled
# (generated in blocks, so that the generator's temporaries do not set the peak RSS)
rng = np.random.default_rng(0)
predicted = key.observed.copy()
for begin in range(0, rows, 1 << 20):
    block = predicted[begin:begin + (1 << 20)]
    wrong = rng.random(len(block)) >= 0.9
    block[wrong] = rng.integers(0, 3, int(wrong.sum()), dtype=np.int8)
order = rng.permutation(rows).astype(np.int32) if mode.endswith("shuffled") else np.arange(rows, dtype=np.int32)
pred_ids = pc.take(key.query_ids, arrow_ints(order))  # a copy even in query order, as a user has
pred_states = pc.take(arrow_strings(OUTCOME_LABELS), arrow_ints(predicted[order]))
del order
if mode.startswith("write_csv"):
    with open(csv_path, "wb") as handle:
        handle.write(b"query_id,predicted_state\n")
        pacsv.write_csv(pa.table({"query_id": pred_ids, "predicted_state": pred_states}), handle,
                        pacsv.WriteOptions(include_header=False, quoting_style="none"))
    print(json.dumps({}))
    sys.exit()
out = {"key_s": key_s}
pa.default_memory_pool().release_unused()
if mode == "encoded":  # labels already encoded and aligned: the scoring alone, repeated in process
    times = []
    for _ in range(7):
        start = time.perf_counter()
        scores = transfer.score(key, predicted)
        times.append(time.perf_counter() - start)
    out.update(read_s=0.0, score_s=statistics.median(times), total_s=statistics.median(times))
else:
    del predicted
    if mode.startswith("csv"):
        del pred_ids, pred_states
    pa.default_memory_pool().release_unused()  # hand the generator's freed arrow memory back to the system
    before = rss_mib()  # resident now: the key and the prediction rows
    out["peak_rss_setup_mib"] = peak_rss_mib()  # generating the data and building the key
    reset_peak_rss()
    start = time.perf_counter()
    if mode.startswith("csv"):
        pred_ids, pred_states = transfer.read_predictions(csv_path)
    read_s = time.perf_counter() - start
    scores = transfer.score_predictions(key, pred_ids, pred_states)
    total_s = time.perf_counter() - start
    out.update(read_s=read_s, score_s=total_s - read_s, total_s=total_s, rss_before_scoring_mib=before,
               peak_rss_scoring_mib=peak_since_reset_mib())
assert scores["overall"]["queries"] == rows and len(scores["per_task"]) == len(key.task_ids) == 52
out["peak_rss_mib"] = peak_rss_mib()  # string modes: since the reset, i.e. while scoring (key and inputs included)
print(json.dumps(out))
"""

MODES = {
    "encoded": "labels encoded and aligned (score only)",
    "ordered": "string arrays in query order",
    "shuffled": "string arrays in random order",
    "csv": "CSV file in query order",
    "csv_shuffled": "CSV file in random order",
}


def bench_core(rows: int, runs: int, work: Path, source: str) -> dict:
    """Medians over ``runs`` fresh processes of each mode of :data:`MODES` on ``rows`` synthetic predictions."""
    worker = [sys.executable, "-c", _CORE_WORKER, str(rows)]
    out = {}
    for mode in MODES:
        if mode.startswith("csv") and rows > MAX_ROWS:  # a predictions file holds at most MAX_ROWS rows
            continue
        csv_path = work / f"synthetic-{mode}.csv"
        if mode.startswith("csv"):
            subprocess.run(worker + ["write_" + mode, str(csv_path), source], check=True, capture_output=True)
        results = [
            json.loads(
                subprocess.run(
                    worker + [mode, str(csv_path), source], check=True, capture_output=True, text=True
                ).stdout
            )
            for _ in range(runs)
        ]
        med = {k: statistics.median(r[k] for r in results) for k in results[0]}
        med["rows_per_s"] = rows / med["total_s"]
        out[mode] = med
        csv_path.unlink(missing_ok=True)
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
    r = subprocess.run(
        [sys.executable, "-c", _COMPUTE_WORKER, source, str(ROOT / "metrics" / "rlvrambench")],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(r.stdout.strip().splitlines()[-1])


HEAVY_MODULES = ("datasets", "evaluate", "matplotlib", "pandas")


def import_summary(source: str, work: Path, top: int = 6) -> list[str]:
    """``python -X importtime`` of CLI commands: total import time, the top cumulative imports and which heavy
    modules (:data:`HEAVY_MODULES`) were imported."""
    predictions = work / "predictions.csv"
    commands = {
        "evaluate": ["evaluate", "--predictions", str(predictions), "--output", str(work / "cli.json")],
        "replay": ["replay", "--output", str(work / "replay.json")],
        "configs": ["configs"],
        "show": ["show", "transfer_queries", "--limit", "3"],
    }
    lines = []
    for name, argv in commands.items():
        r = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "rlvrambench_hf", "--source", source, *argv],
            capture_output=True,
            text=True,
            check=True,
        )
        entries = []  # (cumulative us, depth, module)
        for line in r.stderr.splitlines():
            if line.startswith("import time:") and "|" in line and "cumulative" not in line:
                _, cumulative, module = line.split("|")
                entries.append((int(cumulative), len(module) - len(module.lstrip()), module.strip()))
        total = sum(c for c, depth, _ in entries if depth == 1)
        heavy = sorted({m.split(".")[0] for _, _, m in entries} & set(HEAVY_MODULES))
        shallow = sorted((e for e in entries if e[1] <= 3), reverse=True)[:top]
        lines.append(
            f"  {name:9s} imports {total / 1e3:6.1f} ms; heavy modules: {', '.join(heavy) or 'none'}; top: "
            + ", ".join(f"{m} {c / 1e3:.0f}" for c, _, m in shallow)
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--rows", default="1000000,10000000", help="comma-separated synthetic sizes")
    parser.add_argument("--source", default=DEFAULT_SOURCE)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-transfer-") as tmp:
        work = Path(tmp)
        cli = bench_cli(args.source, args.runs, work)
        print(f"CLI evaluate (whole process), median of {args.runs}: {cli['cli_evaluate_s']:.3f} s")
        print(f"dependency-free reference script:            {cli['reference_script_s']:.3f} s")
        print(f"bare interpreter (python -c pass):           {cli['bare_interpreter_s']:.3f} s")
        print(
            f"ratio CLI / reference: {cli['ratio']:.2f} (target <= 2); identical score files: "
            f"{cli['identical_score_files']}; heavy modules on the path: {cli['heavy_modules_imported']}"
        )
        print("python -X importtime of the CLI path (cumulative ms):")
        print("\n".join(import_summary(args.source, work)))
        runs = max(3, args.runs // 2)
        for rows in (int(r) for r in args.rows.split(",")):
            core = bench_core(rows, runs, work, args.source)
            print(
                f"core on {rows:,} synthetic predictions (the release's 52 tasks in 4 tracks, scaled up), "
                f"medians of {runs} fresh processes; target for strings: < 2 s and < 1024 MiB peak RSS:"
            )
            for mode, m in core.items():
                print(
                    f"  {MODES[mode]:42s}: "
                    + (f"read CSV {m['read_s']:.3f} s + " if mode.startswith("csv") else "")
                    + f"validate+score {m['score_s']:.3f} s = {m['total_s']:.3f} s "
                    f"({m['rows_per_s'] / 1e6:6.1f} M rows/s{'; target >= 50' if mode == 'encoded' else ''}); "
                    + (
                        f"peak RSS while scoring {m['peak_rss_scoring_mib']:.0f} MiB (resident before "
                        f"{m['rss_before_scoring_mib']:.0f}; set-up peak {m['peak_rss_setup_mib']:.0f})"
                        if "rss_before_scoring_mib" in m
                        else f"peak RSS of the whole process {m['peak_rss_mib']:.0f} MiB"
                    )
                    + f"; key built in {m['key_s']:.2f} s"
                )
            for mode in [m for m in MODES if m not in core]:
                print(f"  {MODES[mode]:42s}: not measured, a predictions file holds at most {MAX_ROWS:,} rows")
        compute = bench_compute(args.source, work)
        for mode in ("on_disk", "keep_in_memory"):
            c = compute[mode]
            print(
                f"evaluate compute() on 400 predictions ({mode}): first {c['first_call_ms']:.1f} ms, "
                f"cached median {c['cached_median_ms']:.2f} ms (target < 10 ms)"
            )
        print(f"core score_lists on 400 predictions (cached): {compute['core_score_lists_ms']:.2f} ms")


if __name__ == "__main__":
    main()
