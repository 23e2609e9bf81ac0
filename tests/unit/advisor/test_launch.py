"""A VERL launch script read as text, never run (``read_plans`` of a ``.sh`` file, ``read_launches``): line
continuations, comments, quoting, variables and their defaults, the environment, arithmetic, bash arrays, several
commands and launches, a base config named by ``--config-name``, and a value the script computes when it runs
refused in one line naming its key and line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rlvrambench_hf.advisor import read_plans
from rlvrambench_hf.advisor.read.verl.launch import read_launches
from rlvrambench_hf.errors import InputError
from unit.advisor.given import PLAN, QWEN3B, VERL_OVERRIDES

pytestmark = pytest.mark.unit

#: :data:`PLAN`'s overrides but the ones a test writes in its own way.
WRITTEN_HERE = ("trainer.n_gpus", "data.train_batch", "actor_rollout_ref.model.path")
SHARED = tuple(o for o in VERL_OVERRIDES if not o.startswith(WRITTEN_HERE))


def write(tmp_path: Path, text: str, name: str = "run.sh") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def read(path: Path | str, source: Path):
    return read_plans(path, workload="gsm8k", source=source)


def continued(lines: list[str], indent: str = "    ") -> str:
    return " \\\n".join(indent + line for line in lines)


def test_a_script_with_continuations_comments_quotes_and_variables_is_the_plan(verl_defaults, shared_mini, tmp_path):
    text = (
        "#!/usr/bin/env bash\n"
        "# GRPO with LoRA on GSM8K: python3 -m verl.trainer.main_ppo in a comment is no launch\n"
        "set -xeuo pipefail\n"
        "export VLLM_ATTENTION_BACKEND=XFORMERS\n"
        f"MODEL={QWEN3B}   # the model\n"
        "N_GPUS=2\n"
        "python3 -m verl.trainer.main_ppo \\\n"
        + continued([*SHARED, "data.train_batch_size=16", 'actor_rollout_ref.model.path="$MODEL"',
                     "trainer.experiment_name='qwen 3b # lora'", "trainer.n_gpus_per_node=${N_GPUS}"])
        + ' "$@"  # the end\n'
    )  # fmt: skip
    path = write(tmp_path, text)
    plans = read(path, shared_mini.root)
    assert plans.origins == [f"{path} line 7"]
    assert {k: plans.settings(0)[k] for k in PLAN} == {**PLAN, "max_model_len": 1280}
    lines = text.split("\n")
    n_gpus = next(i for i, line in enumerate(lines, 1) if "n_gpus_per_node" in line)
    assert plans.source("gpu_count", 0).startswith(f"{path} line {n_gpus}")
    utilization = next(i for i, line in enumerate(lines, 1) if "gpu_memory_utilization" in line)
    assert plans.source("vllm_gpu_memory_utilization", 0) == f"{path} line {utilization}"


@pytest.mark.parametrize(("environment", "gpus", "batch"), [({}, 2, 16), ({"GPUS": "4", "BATCH": "32"}, 4, 32)])
def test_defaults_of_variables_give_way_to_the_environment(
    verl_defaults, shared_mini, tmp_path, monkeypatch, environment, gpus, batch
):
    for name in ("GPUS", "BATCH", "PER_GPU"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    text = (
        "GPUS=${GPUS:-2}\nBATCH=${BATCH-16}\nENGINE=${1:-vllm}\nMODEL_PATH=${MODEL_PATH:-" + QWEN3B + "}\n"
        "python3 -m verl.trainer.main_ppo \\\n"
        + continued([*SHARED, "data.train_batch_size=$BATCH", "actor_rollout_ref.model.path=$MODEL_PATH",
                     "actor_rollout_ref.rollout.name=$ENGINE", "trainer.n_gpus_per_node=$GPUS"]) + "\n"
    )  # fmt: skip
    got = read(write(tmp_path, text), shared_mini.root).settings(0)
    assert (got["gpu_count"], got["train_batch_size"], got["rollout_engine"]) == (gpus, batch, "vllm")


def test_an_assigning_default_sets_the_variable_for_the_rest_of_the_script(verl_defaults, shared_mini, tmp_path,
                                                                          monkeypatch):  # fmt: skip
    monkeypatch.delenv("BATCH", raising=False)
    text = (
        ": ${BATCH:=16}\npython3 -m verl.trainer.main_ppo \\\n"
        + continued([*SHARED, "data.train_batch_size=$BATCH", f"actor_rollout_ref.model.path={QWEN3B}",
                     "trainer.n_gpus_per_node=2"]) + "\n"
    )  # fmt: skip
    assert read(write(tmp_path, text), shared_mini.root).settings(0)["train_batch_size"] == 16


def test_arithmetic_over_the_scripts_own_values_is_computed_as_bash_does(verl_defaults, shared_mini, tmp_path):
    text = (
        "N_GPUS=2\nPER_GPU=8\nPROMPT=512; RESPONSE=$(( 3 * 256 ))\n"
        "python3 -m verl.trainer.main_ppo \\\n"
        + continued([*(o for o in SHARED if not o.startswith(("data.max_",))),
                     "data.train_batch_size=$(( N_GPUS * PER_GPU ))", "data.max_prompt_length=$PROMPT",
                     "data.max_response_length=$RESPONSE",
                     "actor_rollout_ref.rollout.max_model_len=$((PROMPT + RESPONSE))",
                     f"actor_rollout_ref.model.path={QWEN3B}", "trainer.n_gpus_per_node=$(( (7 - 3) / 2 ))"]) + "\n"
    )  # fmt: skip
    got = read(write(tmp_path, text), shared_mini.root).settings(0)
    assert (got["train_batch_size"], got["max_response_length"], got["max_model_len"], got["gpu_count"]) == (
        16, 768, 1280, 2)  # fmt: skip


def test_bash_arrays_of_overrides_expand_one_element_per_word(verl_defaults, shared_mini, tmp_path):
    text = (
        "DATA=(\n  data.train_batch_size=16   # a comment inside\n  data.max_prompt_length=512\n)\n"
        "DATA+=(data.max_response_length=768)\n"
        "declare -a ACTOR=(" + " ".join(o for o in SHARED if o.startswith("actor_rollout_ref.")) + ")\n"
        'python3 -m verl.trainer.main_ppo "${DATA[@]}" "${ACTOR[@]}" algorithm.adv_estimator=grpo \\\n'
        f"    actor_rollout_ref.model.path={QWEN3B} trainer.n_gpus_per_node=2 trainer.nnodes=1\n"
    )
    got = read(write(tmp_path, text), shared_mini.root).settings(0)
    assert {k: got[k] for k in PLAN} == {**PLAN, "max_model_len": 1280}


def test_every_launch_of_a_script_is_a_plan_and_other_commands_are_not(verl_defaults, shared_mini, tmp_path):
    one = continued([*SHARED, "data.train_batch_size=16", f"actor_rollout_ref.model.path={QWEN3B}"], "  ")
    text = (
        "mkdir -p logs && cd logs\necho starting; date\n"
        f"python3 -m verl.trainer.main_ppo \\\n{one} \\\n  trainer.n_gpus_per_node=2 > first.log 2>&1\n"
        "sleep 10\n"
        f"ray job submit --address=http://127.0.0.1:8265 -- python3 -m verl.trainer.main_ppo \\\n{one} \\\n"
        "  trainer.n_gpus_per_node=4 actor_rollout_ref.rollout.gpu_memory_utilization=0.7\n"
    )
    path = write(tmp_path, text)
    plans = read(path, shared_mini.root)
    starts = [i for i, line in enumerate(text.split("\n"), 1) if "verl.trainer.main_ppo" in line]
    assert list(plans.origins) == [f"{path} line {n}" for n in starts]
    assert [(plans.settings(i)["gpu_count"], plans.settings(i)["vllm_gpu_memory_utilization"]) for i in (0, 1)] == [
        (2, 0.55), (4, 0.7)]  # fmt: skip


RUNS = "which is computed when the script runs"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("$(nvidia-smi -L | wc -l)", r"uses \$\(nvidia-smi -L \| wc -l\), " + RUNS),
        ("`nproc`", r"uses `\.\.\.`, " + RUNS),
        ("$SLURM_GPUS_ON_NODE", r"uses \$SLURM_GPUS_ON_NODE, which is not set in the script or environment"),
        ("${SLURM_GPUS_ON_NODE}", r"uses \$SLURM_GPUS_ON_NODE, which is not set in the script or environment"),
        ("$(( NODES * 8 ))", r"uses \$\(\(NODES \* 8\)\), which is arithmetic over a value the script does not give"),
    ],
)  # fmt: skip
def test_a_value_the_script_computes_when_it_runs_is_refused_naming_its_key_and_line(
    verl_defaults, shared_mini, tmp_path, monkeypatch, value, why
):
    monkeypatch.delenv("SLURM_GPUS_ON_NODE", raising=False)
    monkeypatch.delenv("NODES", raising=False)
    one_line = "python3 -m verl.trainer.main_ppo " + " ".join([*SHARED, "data.train_batch_size=16",
                                                             f"actor_rollout_ref.model.path={QWEN3B}"])  # fmt: skip
    path = write(tmp_path, f"set -x\n{one_line} trainer.n_gpus_per_node={value}\n")
    with pytest.raises(InputError) as caught:
        read(path, shared_mini.root)
    message = str(caught.value)
    assert re.fullmatch(rf"{re.escape(str(path))} line 2: trainer\.n_gpus_per_node {why}; write its value, set it, or "
                        r"give --setting gpu_count=VALUE", message), message  # fmt: skip
    # on a continuation line, the line named is the launch's or the key's own
    spread = write(tmp_path, f"set -x\n{one_line} \\\n  trainer.nnodes=1 \\\n  trainer.n_gpus_per_node={value}\n")
    with pytest.raises(InputError, match=rf"^{re.escape(str(spread))} line [24]: trainer\.n_gpus_per_node "):
        read(spread, shared_mini.root)


def test_a_computed_value_of_a_key_the_advisor_does_not_read_is_no_error(verl_defaults, shared_mini, tmp_path):
    text = (
        "STAMP=$(date +%s)\npython3 -m verl.trainer.main_ppo \\\n"
        + continued([*SHARED, "data.train_batch_size=16", f"actor_rollout_ref.model.path={QWEN3B}",
                     "trainer.n_gpus_per_node=2", "trainer.experiment_name=run_$STAMP",
                     "trainer.default_local_dir=`pwd`/ckpt"]) + "\n"
    )  # fmt: skip
    assert read(write(tmp_path, text), shared_mini.root).settings(0)["gpu_count"] == 2


def test_a_base_config_named_by_config_name_lies_under_the_overrides(verl_defaults, shared_mini, tmp_path):
    config = tmp_path / "configs"
    config.mkdir()
    (config / "grpo_lora.yaml").write_text(
        "defaults:\n  - ppo_trainer\n  - _self_\nactor_rollout_ref:\n  rollout:\n    free_cache_engine: false\n"
        "    gpu_memory_utilization: 0.4\ntrainer:\n  n_gpus_per_node: 4\n"
    )
    text = (
        "python3 -m verl.trainer.main_ppo --config-path=configs --config-name grpo_lora \\\n"
        + continued([*SHARED, "data.train_batch_size=16", f"actor_rollout_ref.model.path={QWEN3B}"]) + "\n"
    )  # fmt: skip
    path = write(tmp_path, text)
    plans = read(path, shared_mini.root)
    got = plans.settings(0)
    # the YAML's values stand where no override is given; the command line's win (0.55 over 0.4)
    assert (got["free_cache_engine"], got["gpu_count"], got["vllm_gpu_memory_utilization"]) == (False, 4, 0.55)
    missing = write(tmp_path, text.replace("grpo_lora", "no_such_run"), "missing.sh")
    with pytest.raises(InputError, match=r"^.*missing.sh line 1: --config-name 'no_such_run': no no_such_run.yaml "):
        read(missing, shared_mini.root)


def test_a_pasted_command_line_is_one_launch(verl_defaults, shared_mini):
    line = " ".join([*VERL_OVERRIDES])
    plans = read(line, shared_mini.root)
    assert plans.origins == ["command line line 1"] and plans.settings(0)["gpu_count"] == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("echo hello\nls -la\n", r"run.sh: no VERL launch \(python3 -m verl.trainer.main_ppo key=value ...\)"),
        ("torchrun --nproc_per_node=2 -m verl.trainer.fsdp_sft_trainer data.micro_batch_size_per_gpu=4\n",
         r"run.sh line 1: runs verl.trainer.fsdp_sft_trainer, not VERL's RL trainer \(verl.trainer.main_ppo\)"),
        ("echo\npython3 -m verl.trainer.main_ppo data.train_batch_size='16\n",
         r"run.sh line 2: a quote opened here is never closed$"),
        ("ARGS=(\n  data.train_batch_size=16\npython3 -m verl.trainer.main_ppo \"${ARGS[@]}\"\n",
         r"run.sh line 1: an array's parenthesis opened here is never closed$"),
    ],
)  # fmt: skip
def test_a_script_without_a_readable_launch_is_one_line(text, message):
    with pytest.raises(InputError) as caught:
        read_launches(text, "run.sh", {})
    assert re.search(message, str(caught.value)) and "\n" not in str(caught.value)


def test_launchers_around_the_trainer_are_read_through(tmp_path):
    text = (
        "torchrun --nproc_per_node 2 /opt/verl/verl/trainer/main_ppo.py data.train_batch_size=16\n"
        "srun --ntasks=1 python3 -u -m verl.trainer.main_ppo trainer.nnodes=2 \\\n  trainer.n_gpus_per_node=8\n"
    )
    first, second = read_launches(text, "run.sh", {})
    assert (first.line, first.overrides) == (1, [("", "data.train_batch_size", "16")])
    assert (second.line, second.overrides) == (2, [("", "trainer.nnodes", "2"), ("", "trainer.n_gpus_per_node", "8")])
