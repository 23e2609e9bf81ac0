"""Hostile plans: every bad setting is one line naming it as the user wrote it, exit 2, nothing written.

Each case runs ``rlvrambench estimate advise`` in a fresh interpreter with ``--output`` in a folder that must stay
as it was. The cases cover the three ways in (planned CSV, VERL launch script or YAML, TRL config) and the files
themselves (huge, binary, a YAML alias bomb); a pipe is read, as tests/test_advisor_plans.py shows.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml

from rlvrambench_hf.data.tables.reader import load_table

from conftest import cli_env, invoke

MEASURED = "cfg-338d9224eb9d2f3a"  # Qwen2.5-3B, gsm8k, c2, 2 GPUs
PLANNED = ("model_id", "workload_id", "gpu_count", "rollout_tp_size", "actor_micro_batch",
           "rollout_logprob_micro_batch", "ref_logprob_micro_batch", "vllm_gpu_memory_utilization",
           "parameter_offload", "optimizer_offload", "max_prompt_length", "max_response_length", "max_model_len",
           "rollout_n", "train_batch_size")  # fmt: skip
VERL = """#!/bin/bash
MODEL=Qwen/Qwen2.5-3B-Instruct
python3 -m verl.trainer.main_ppo \\
  algorithm.adv_estimator=grpo actor_rollout_ref.model.path=${MODEL} actor_rollout_ref.model.lora_rank=64 \\
  trainer.n_gpus_per_node=2 trainer.nnodes=1 actor_rollout_ref.rollout.tensor_model_parallel_size=1 \\
  actor_rollout_ref.rollout.gpu_memory_utilization=0.6 actor_rollout_ref.rollout.n=2 \\
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \\
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \\
  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 actor_rollout_ref.actor.fsdp_config.param_offload=False \\
  actor_rollout_ref.actor.fsdp_config.optimizer_offload=False data.max_prompt_length=1024 \\
  data.max_response_length=2048 data.train_batch_size=32
"""
TRL = {
    "model_name_or_path": "Qwen/Qwen2.5-3B-Instruct",
    "num_processes": 2,
    "use_vllm": True,
    "vllm_gpu_memory_utilization": 0.6,
    "vllm_tensor_parallel_size": 1,
    "max_prompt_length": 512,
    "max_completion_length": 512,
    "num_generations": 2,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 8,
}


@pytest.fixture(scope="module")
def plan_row(snapshot: Path) -> dict:
    row = next(r for r in load_table("configurations", snapshot).to_pylist() if r["configuration_id"] == MEASURED)
    return {k: row[k] for k in PLANNED}


def _csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _planned(work: Path, row: dict, **changed: object) -> list[str]:
    _csv(work / "plans.csv", [row, {**row, **changed}, row])
    return ["--planned", "plans.csv"]


def _verl(work: Path, old: str = "", new: str = "") -> list[str]:
    (work / "run.sh").write_text(VERL.replace(old, new) if old else VERL)
    return ["--verl", "run.sh", "--workload", "gsm8k"]


def _trl(work: Path, **changed: object) -> list[str]:
    (work / "grpo.yaml").write_text(yaml.safe_dump({**TRL, **changed}))
    return ["--trl", "grpo.yaml", "--workload", "math"]


def _special(work: Path, kind: str) -> list[str]:
    path = work / "plans.csv"
    if kind == "huge":
        with open(path, "wb") as handle:
            handle.truncate(300 * 2**20)  # sparse: no disk used
    elif kind == "binary":
        path.write_bytes(b"model_id,gpu_count\n\x00\x01\x02\xff,2\n")
    elif kind == "bomb":
        lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 12)]
        (work / "plans.yaml").write_text("\n".join(lines) + "\n")
        return ["--planned", "plans.yaml"]
    return ["--planned", "plans.csv"]


CASES: dict[str, tuple] = {
    "csv NaN": (lambda w, r: _planned(w, r, vllm_gpu_memory_utilization="nan"),
                "plans.csv row 2: column 'vllm_gpu_memory_utilization': 'nan' is not a finite number"),
    "csv inf": (lambda w, r: _planned(w, r, vllm_gpu_memory_utilization="-inf"), "'-inf' is not a finite number"),
    "csv overflowing float": (lambda w, r: _planned(w, r, vllm_gpu_memory_utilization="1e999"),
                              "'1e999' is not a finite number"),
    "csv 2**70": (lambda w, r: _planned(w, r, gpu_count=2**70),
                  "plans.csv row 2: column 'gpu_count': '1180591620717411303424' is an integer beyond int64"),
    "csv negative count": (lambda w, r: _planned(w, r, rollout_n=-2),
                           "plans.csv row 2: column 'rollout_n': -2 is not a positive count"),
    "csv string in a number field": (lambda w, r: _planned(w, r, actor_micro_batch="eight"),
                                     "column 'actor_micro_batch': 'eight' is not an integer"),
    "csv float count": (lambda w, r: _planned(w, r, actor_micro_batch="8.5"), "'8.5' is not an integer"),
    "csv fraction out of range": (lambda w, r: _planned(w, r, vllm_gpu_memory_utilization=1.5),
                                  "1.5 is not a fraction strictly between 0 and 1"),
    "csv tensor parallelism": (lambda w, r: _planned(w, r, rollout_tp_size=4),
                               "plans.csv row 2: column 'gpu_count' = 2 is not divisible by column 'rollout_tp_size' "
                               "= 4"),
    "csv escapes values": (lambda w, r: _planned(w, r, gpu_count="2\x1b[31m"), r"'2\x1b[31m' is not an integer"),
    "csv unknown column": (lambda w, r: _planned(w, {**r, "learning_rate": 1}),
                           "plans.csv: unknown setting(s) 'learning_rate'"),
    "huge file": (lambda w, r: _special(w, "huge"), "bytes is more than the 268435456 bytes read"),
    "binary file": (lambda w, r: _special(w, "binary"), "is a binary file (NUL bytes), not text"),
    "yaml alias bomb": (lambda w, r: _special(w, "bomb"), "more than 200000 values (a YAML alias bomb?)"),
    "verl unresolved variable": (lambda w, r: _verl(w, "${MODEL}", "$MODEL_DIR/Qwen2.5-3B-Instruct"),
                                 "run.sh line 3: actor_rollout_ref.model.path uses $MODEL_DIR, which is not set in "
                                 "the script or environment"),
    "verl command substitution": (lambda w, r: _verl(w, "trainer.n_gpus_per_node=2",
                                                     "trainer.n_gpus_per_node=$(nvidia-smi -L | wc -l)"),
                                  "trainer.n_gpus_per_node uses $(nvidia-smi -L | wc -l), which is computed when the "
                                  "script runs"),
    # VERL not installed: its defaults ship with the package; the per-GPU micro-batch is null in them
    "verl missing setting": (lambda w, r: _verl(w, "ppo_micro_batch_size_per_gpu=8", ""),
                             "run.sh line 3: missing VERL setting(s) "
                             "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: not set, and null in VERL 0.9.1's "
                             "defaults"),
    "verl NaN": (lambda w, r: _verl(w, "gpu_memory_utilization=0.6", "gpu_memory_utilization=nan"),
                 "run.sh line 3: actor_rollout_ref.rollout.gpu_memory_utilization: nan is not a finite number"),
    "verl 2**70": (lambda w, r: _verl(w, "rollout.n=2", f"rollout.n={2**70}"),
                   "actor_rollout_ref.rollout.n: 1180591620717411303424 is an integer beyond int64"),
    "verl string in a number field": (lambda w, r: _verl(w, "ppo_micro_batch_size_per_gpu=8",
                                                         "ppo_micro_batch_size_per_gpu=eight"),
                                      "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 'eight' is not an "
                                      "integer"),
    "verl negative count": (lambda w, r: _verl(w, "rollout.n=2", "rollout.n=-1"),
                            "run.sh line 3: actor_rollout_ref.rollout.n: -1 is not a positive count"),
    "verl fraction": (lambda w, r: _verl(w, "gpu_memory_utilization=0.6", "gpu_memory_utilization=0"),
                      "actor_rollout_ref.rollout.gpu_memory_utilization: 0.0 is not a fraction strictly between"),
    "verl tensor parallelism": (lambda w, r: _verl(w, "tensor_model_parallel_size=1", "tensor_model_parallel_size=4"),
                                "run.sh line 3: trainer.n_gpus_per_node × trainer.nnodes = 2 is not divisible by "
                                "actor_rollout_ref.rollout.tensor_model_parallel_size = 4"),
    "verl no launch": (lambda w, r: _verl(w, VERL, "#!/bin/sh\necho hello\n"),
                       "run.sh: no VERL launch (python3 -m verl.trainer.main_ppo key=value ...) and no overrides"),
    "trl negative generations": (lambda w, r: _trl(w, num_generations=-2),
                                 "grpo.yaml: num_generations: -2 is not a positive count"),
    "trl indivisible batch": (lambda w, r: _trl(w, num_generations=3),
                              "grpo.yaml: per_device_train_batch_size × GPUs × steps per generation = 128 completions "
                              "is not divisible by num_generations = 3"),
    "trl string": (lambda w, r: _trl(w, vllm_gpu_memory_utilization="high"),
                   "grpo.yaml: vllm_gpu_memory_utilization: 'high' is not a number"),
    "trl no prompt cap": (lambda w, r: _trl(w, max_prompt_length=None),
                          "grpo.yaml: missing TRL setting(s) max_prompt_length: not set (this TRL does not cap "
                          "prompts: --setting max_prompt_length=N)"),
    "setting not NAME=VALUE": (lambda w, r: [*_trl(w), "--setting", "max_prompt_length"],
                               "--setting 'max_prompt_length': write NAME=VALUE, e.g. max_prompt_length=1024"),
    "setting unknown": (lambda w, r: [*_trl(w), "--setting", "lr=1e-5"],
                        "unknown setting(s) 'lr' (use the columns of benchmark/configurations.csv)"),
    "setting not a number": (lambda w, r: [*_trl(w), "--setting", "max_prompt_length=nan"],
                             "given settings: max_prompt_length: 'nan' is not an integer"),
    "setting out of range": (lambda w, r: [*_trl(w), "--setting", "vllm_gpu_memory_utilization=1.5"],
                             "vllm_gpu_memory_utilization: 1.5 is not a fraction strictly between 0 and 1"),
    "setting twice": (lambda w, r: [*_trl(w), "--setting", "max_prompt_length=1", "--setting", "max_prompt_length=2"],
                      "--setting 'max_prompt_length' is given twice with different values"),
    "trl missing": (lambda w, r: _trl(w, num_processes=None),
                    "grpo.yaml: missing TRL setting(s) num_processes: not set (the GPU count: --setting gpu_count=N, "
                    "or --accelerate-config FILE)"),
    "accelerate processes disagree": (lambda w, r: _accelerate(w, "num_processes: 4\n"),
                                      "grpo.yaml: num_processes = 2 but the accelerate config accelerate.yaml gives 4"),
    "accelerate not a config": (lambda w, r: _accelerate(w, "- a list\n"),
                                "accelerate.yaml: an accelerate config is a mapping (distributed_type:, "
                                "num_processes:, ...)"),
    "accelerate with verl": (lambda w, r: [*_verl(w), "--accelerate-config", _write(w, "a.yaml", "num_processes: 2\n")],
                             "an accelerate config goes with a TRL run (--trl), not with a VERL one"),
    "verl refuses its config": (lambda w, r: [*_verl(w, "data.train_batch_size=32", "data.train_batch_size=32 "
                                                     "actor_rollout_ref.actor.ppo_mini_batch_size=64"),
                                              "--verl-version", "0.9.1"],
                                "run.sh line 3: VERL refuses this config before running: data.train_batch_size = 32 is "
                                "below actor_rollout_ref.actor.ppo_mini_batch_size = 64"),
}  # fmt: skip


def _write(work: Path, name: str, text: str) -> str:
    (work / name).write_text(text)
    return name


def _accelerate(work: Path, text: str) -> list[str]:
    return [*_trl(work), "--accelerate-config", _write(work, "accelerate.yaml", text)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_plan_is_one_line_exit_2_and_nothing_written(
    snapshot: Path, tmp_path: Path, plan_row: dict, case: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    make, message = CASES[case]
    arguments = make(work, plan_row)
    before = sorted(p.name for p in work.iterdir())
    result = invoke(
        "--source", str(snapshot), "estimate", "advise", *arguments, "--output", str(work / "advice.json"),
        env=cli_env(MODEL_DIR=None), cwd=work, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert message in lines[0], lines[0]
    assert sorted(p.name for p in work.iterdir()) == before
