"""Start-up of the command line (issues 27 and 39): whole processes, medians, and the ratios of the targets.

Each figure is the median wall time of fresh processes, interpreter start included: ``python -c pass``,
``python -c 'import pyarrow'``, the import floor of ``evaluate``'s libraries (``import pyarrow, pyarrow.compute,
pyarrow.csv, numpy``), ``rlvrambench --version``, ``--help``, ``advise --help``, ``estimate advise --help``,
``configs``, ``evaluate`` on the 400 ``baseline`` predictions beside ``bench/reference_evaluate.py`` (standard
library only) on the same file, ``estimate retrospective``, and ``advise --verl`` on two launch scripts: a small
one written here and the corpus's ``grpo_gsm8k_qwen2_5_3b_lora.sh`` with ``--workload gsm8k``, offline
(``HF_HUB_OFFLINE=1``) with VERL's packaged configs importable (``--verl-site``, default ``/tmp/verlsite``), once the
release context is in the advisor's store (every command runs once before the timed runs).

Targets: ``--version`` ≤ 1.5× ``import pyarrow`` (issue 27); ``evaluate`` ≤ 1.5× its import floor and the corpus
launch file ≤ 2.5× ``import pyarrow`` on a warm store (issue 39; ``evaluate`` ≤ 4× the reference script was issue 27's
and is withdrawn). Besides the times, each tree's ``python -X importtime`` says whether ``advise --help`` and
``estimate advise --help`` import numpy and whether ``estimate retrospective`` imports scikit-learn (none should).
The runs of all commands are interleaved (round-robin), so that a change of the machine's load falls on all alike.

``--tree DIR`` (repeatable) measures the package of another checkout too (its folder put first on ``PYTHONPATH``),
for a before/after in one session.

Usage: ``python bench/bench_startup.py [--runs 15] [--source DIR] [--tree DIR ...] [--verl-site DIR]``
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
  actor_rollout_ref.rollout.free_cache_engine=True actor_rollout_ref.model.target_modules=all-linear \\
  actor_rollout_ref.actor.ppo_mini_batch_size=16
"""


#: The launch file of issue 39's target, answered offline on a warm store.
CORPUS_SCRIPT = ROOT / "tests" / "advisor_corpus" / "verl" / "grpo_gsm8k_qwen2_5_3b_lora.sh"
FLOOR = "import pyarrow, pyarrow.compute, pyarrow.csv, numpy"
#: The commands the targets' ratios read (``--targets-only``).
TARGETS_NEED = (
    "python -c 'import pyarrow'",
    "evaluate's import floor",
    "rlvrambench --version",
    "evaluate (400 rows)",
    "reference_evaluate.py",
    "advise --verl (corpus file)",
)
#: (command, module that must not be imported): checked with python -X importtime in every tree.
NOT_IMPORTED = (
    ("advise --help", "numpy"),
    ("estimate advise --help", "numpy"),
    ("estimate retrospective", "sklearn"),
)


def commands(source: str, work: Path) -> dict[str, list[str]]:
    """Name -> argv of every measured process (the package's commands without the interpreter)."""
    cli = ["-m", "rlvrambench_hf", "--source", source]
    predictions = work / "baseline.csv"
    return {
        "python -c pass": ["-c", "pass"],
        "python -c 'import pyarrow'": ["-c", "import pyarrow"],
        "evaluate's import floor": ["-c", FLOOR],
        "rlvrambench --version": ["-m", "rlvrambench_hf", "--version"],
        "rlvrambench --help": ["-m", "rlvrambench_hf", "--help"],
        "advise --help": ["-m", "rlvrambench_hf", "advise", "--help"],
        "estimate advise --help": ["-m", "rlvrambench_hf", "estimate", "advise", "--help"],
        "configs": [*cli, "configs"],
        "evaluate (400 rows)": [*cli, "evaluate", "--predictions", str(predictions), "--output", str(work / "s.json")],
        "reference_evaluate.py": [
            str(ROOT / "bench" / "reference_evaluate.py"),
            source,
            str(predictions),
            str(work / "r.json"),
        ],
        "estimate retrospective": [*cli, "estimate", "retrospective"],
        "advise --verl": [*cli, "advise", "--verl", str(work / "run.sh"), "--workload", "gsm8k"],
        "advise --verl (corpus file)": [*cli, "advise", "--verl", str(CORPUS_SCRIPT), "--workload", "gsm8k"],
    }


def environment(path: str, verl_site: str) -> dict[str, str]:
    """The environment of every measured process: the tree first on the path, VERL's packaged configs after it,
    offline (every command reads a local release; the corpus file names a model the release measured), bytecode
    cached."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([path, verl_site]), "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as users run: modules from their bytecode cache, written by the warm-up
    return env


#: In a fresh process: the release context built from the release and read from the advisor's store (warm), each
#: the median of several calls in process, seconds (a tree without the store builds it both times).
CONTEXT = """
import statistics, sys, time
from rlvrambench_hf.advisor.assess import context
stored = "stored" in context.load_context.__code__.co_varnames
def built():
    return context.load_context(sys.argv[1], stored=False) if stored else context.load_context(sys.argv[1])
def warm():
    return context.load_context(sys.argv[1])
warm()
for name, call in (("built", built), ("from the store", warm)):
    times = []
    for _ in range(int(sys.argv[2])):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    print(name, statistics.median(times))
"""


def context_seconds(trees: dict[str, str], source: str, verl_site: str, runs: int) -> dict[str, dict[str, float]]:
    """(tree) -> {"built": s, "from the store": s}: the release context in process."""
    found = {}
    for tree, path in trees.items():
        argv = [sys.executable, "-c", CONTEXT, source, str(runs)]
        done = subprocess.run(argv, capture_output=True, text=True, env=environment(path, verl_site), check=True)
        found[tree] = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in done.stdout.splitlines()}
    return found


def not_imported(trees: dict[str, str], argvs: dict[str, list[str]], verl_site: str, work: Path) -> dict[str, bool]:
    """(tree, command) -> whether the module that command must not import stayed unimported."""
    found = {}
    for tree, path in trees.items():
        for name, module in NOT_IMPORTED:
            argv = [sys.executable, "-X", "importtime", *argvs[name]]
            done = subprocess.run(argv, capture_output=True, text=True, env=environment(path, verl_site), cwd=work)
            imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
            found[f"{tree}: {name} without {module}"] = module not in imported
    return found


def measure(
    trees: dict[str, str], argvs: dict[str, list[str]], runs: int, work: Path, verl_site: str
) -> dict[tuple[str, str, str], float]:
    """Median wall and CPU seconds (user + system, of the process and its children) of each (tree, command, "wall"
    or "cpu"), the runs interleaved round-robin after one warm-up run of each. On a loaded machine the CPU figures
    are the steadier ones."""
    times: dict[tuple[str, str, str], list[float]] = {(t, n, k): [] for t in trees for n in argvs for k in KINDS}
    for path in trees.values():
        for argv in argvs.values():  # warm: the advisor's store, the fitted references, the page cache
            subprocess.run(
                [sys.executable, *argv], check=True, capture_output=True, env=environment(path, verl_site), cwd=work
            )
    for _ in range(runs):
        for tree, path in trees.items():
            env = environment(path, verl_site)
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
    parser.add_argument("--verl-site", default="/tmp/verlsite", help="a folder holding VERL's packaged configs")
    parser.add_argument("--targets-only", action="store_true", help="time only what the targets' ratios need")
    args = parser.parse_args()
    trees = {"this": str(ROOT), **{f"tree {i + 1}": str(Path(t).resolve()) for i, t in enumerate(args.tree)}}
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "run.sh").write_text(VERL_SCRIPT)
        baseline = ["-m", "rlvrambench_hf", "--source", args.source, "baseline", "--output", str(work / "baseline.csv")]
        subprocess.run(
            [sys.executable, *baseline], check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
        )
        every = commands(args.source, work)
        argvs = {n: a for n, a in every.items() if n in TARGETS_NEED} if args.targets_only else every
        medians = measure(trees, argvs, args.runs, work, args.verl_site)  # from a folder outside every tree
        same = (work / "s.json").read_bytes() == (work / "r.json").read_bytes()
        clean = not_imported(trees, every, args.verl_site, work)
    contexts = context_seconds(trees, args.source, args.verl_site, max(3, args.runs // 3))
    print(f"median of {args.runs} processes each, seconds (load average {os.getloadavg()[0]:.1f} at the end)")
    for tree, path in trees.items():
        print(f"\n{tree}: {path}\n  {'':28s} {'wall':>6s} {'cpu':>6s}")
        for name in argvs:
            print(f"  {name:28s} {medians[(tree, name, 'wall')]:6.3f} {medians[(tree, name, 'cpu')]:6.3f}")
        for kind in KINDS:
            m = {name: medians[(tree, name, kind)] for name in argvs}
            version = m["rlvrambench --version"] / m["python -c 'import pyarrow'"]
            evaluate = m["evaluate (400 rows)"] / m["evaluate's import floor"]
            advise = m["advise --verl (corpus file)"] / m["python -c 'import pyarrow'"]
            print(
                f"  {kind}: --version / import pyarrow {version:.2f} (target <= 1.5: {_met(version <= 1.5)}); "
                f"evaluate / its import floor {evaluate:.2f} (target <= 1.5: {_met(evaluate <= 1.5)}); "
                f"corpus launch file / import pyarrow {advise:.2f} (target <= 2.5: {_met(advise <= 2.5)}); "
                f"evaluate / reference script {m['evaluate (400 rows)'] / m['reference_evaluate.py']:.2f}"
            )
    print()
    for tree, seconds in contexts.items():
        built, warm = seconds["built"], seconds["from the store"]
        print(f"{tree}: release context in process: built {built:.3f} s, from the store {warm:.3f} s")
    print()
    for check, ok in clean.items():
        print(f"{check}: {'yes' if ok else 'NO'}")
    print(f"\nscore files of evaluate and the reference script identical (last tree measured): {same}")


def _met(ok: bool) -> str:
    return "met" if ok else "missed"


if __name__ == "__main__":
    main()
