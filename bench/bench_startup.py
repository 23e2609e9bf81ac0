"""Start-up of the command line (issue 27, item 1): whole processes, medians, and the ratios of the targets.

Each figure is the median wall time of fresh processes, interpreter start included: ``python -c pass``,
``python -c 'import pyarrow'``, ``rlvrambench --version``, ``--help``, ``configs``, ``evaluate`` on the 400
``baseline`` predictions beside ``bench/reference_evaluate.py`` (standard library only) on the same file, and one
``advise --verl`` launch script. Targets: ``--version`` ≤ 1.5× ``import pyarrow``; ``evaluate`` ≤ 4× the reference.
The runs of all commands are interleaved (round-robin), so that a change of the machine's load falls on all alike.

``--tree DIR`` (repeatable) measures the package of another checkout too (its folder put first on ``PYTHONPATH``),
for a before/after in one session.

Usage: ``python bench/bench_startup.py [--runs 15] [--source DIR] [--tree DIR ...]``
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import ROOT, SNAPSHOT

VERL_SCRIPT = """python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_batch_size=32 \\
  data.max_prompt_length=1024 data.max_response_length=2048 actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct \\
  actor_rollout_ref.model.lora_rank=64 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \\
  actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \\
  actor_rollout_ref.rollout.n=2 actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \\
  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 trainer.n_gpus_per_node=2 trainer.nnodes=1 \\
  actor_rollout_ref.rollout.tensor_model_parallel_size=1 actor_rollout_ref.actor.fsdp_config.param_offload=False \\
  actor_rollout_ref.actor.fsdp_config.optimizer_offload=False actor_rollout_ref.rollout.max_num_seqs=64 \\
  actor_rollout_ref.rollout.free_cache_engine=True actor_rollout_ref.model.target_modules=all-linear
"""


def commands(source: str, work: Path) -> dict[str, list[str]]:
    """Name -> argv of every measured process (the package's commands without the interpreter)."""
    cli = ["-m", "rlvrambench_hf", "--source", source]
    predictions = work / "baseline.csv"
    return {
        "python -c pass": ["-c", "pass"],
        "python -c 'import pyarrow'": ["-c", "import pyarrow"],
        "rlvrambench --version": ["-m", "rlvrambench_hf", "--version"],
        "rlvrambench --help": ["-m", "rlvrambench_hf", "--help"],
        "configs": [*cli, "configs"],
        "evaluate (400 rows)": [*cli, "evaluate", "--predictions", str(predictions), "--output", str(work / "s.json")],
        "reference_evaluate.py": [
            str(ROOT / "bench" / "reference_evaluate.py"),
            source,
            str(predictions),
            str(work / "r.json"),
        ],
        "advise --verl": [*cli, "advise", "--verl", str(work / "run.sh"), "--workload", "gsm8k"],
    }


def measure(
    trees: dict[str, str], argvs: dict[str, list[str]], runs: int, work: Path
) -> dict[tuple[str, str, str], float]:
    """Median wall and CPU seconds (user + system, of the process and its children) of each (tree, command, "wall"
    or "cpu"), the runs interleaved round-robin. On a loaded machine the CPU figures are the steadier ones."""
    times: dict[tuple[str, str, str], list[float]] = {(t, n, k): [] for t in trees for n in argvs for k in KINDS}
    for _ in range(runs):
        for tree, path in trees.items():
            env = {**os.environ, "PYTHONPATH": path}
            for name, argv in argvs.items():
                before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
                subprocess.run([sys.executable, *argv], check=True, capture_output=True, env=env, cwd=work)
                wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
                times[(tree, name, "wall")].append(wall)
                cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                times[(tree, name, "cpu")].append(cpu)
    return {key: statistics.median(values) for key, values in times.items()}


KINDS = ("wall", "cpu")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--source", default=str(SNAPSHOT))
    parser.add_argument("--tree", action="append", default=[], help="another checkout to measure beside this one")
    args = parser.parse_args()
    trees = {"this": str(ROOT), **{f"tree {i + 1}": str(Path(t).resolve()) for i, t in enumerate(args.tree)}}
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "run.sh").write_text(VERL_SCRIPT)
        baseline = ["-m", "rlvrambench_hf", "--source", args.source, "baseline", "--output", str(work / "baseline.csv")]
        subprocess.run(
            [sys.executable, *baseline], check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
        )
        argvs = commands(args.source, work)
        medians = measure(trees, argvs, args.runs, work)  # from a folder outside every tree
        same = (work / "s.json").read_bytes() == (work / "r.json").read_bytes()
    print(f"median of {args.runs} processes each, seconds (load average {os.getloadavg()[0]:.1f} at the end)")
    for tree, path in trees.items():
        print(f"\n{tree}: {path}\n  {'':28s} {'wall':>6s} {'cpu':>6s}")
        for name in argvs:
            print(f"  {name:28s} {medians[(tree, name, 'wall')]:6.3f} {medians[(tree, name, 'cpu')]:6.3f}")
        for kind in KINDS:
            version = (
                medians[(tree, "rlvrambench --version", kind)] / medians[(tree, "python -c 'import pyarrow'", kind)]
            )
            evaluate = medians[(tree, "evaluate (400 rows)", kind)] / medians[(tree, "reference_evaluate.py", kind)]
            print(
                f"  {kind}: --version / import pyarrow {version:.2f} (target <= 1.5: {_met(version <= 1.5)}); "
                f"evaluate / reference script {evaluate:.2f} (target <= 4: {_met(evaluate <= 4)})"
            )
    print(f"\nscore files of evaluate and the reference script identical (last tree measured): {same}")


def _met(ok: bool) -> str:
    return "met" if ok else "missed"


if __name__ == "__main__":
    main()
