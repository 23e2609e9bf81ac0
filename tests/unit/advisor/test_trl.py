"""A TRL GRPO run as a plan: the GRPOConfig YAML ``trl grpo --config`` takes, with the accelerate config it is
launched with (DDP, DeepSpeed ZeRO-2 / ZeRO-3 with offloads, FSDP, several machines) and what accelerate refuses;
and a TRL training script read as Python source with :mod:`ast`, never run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rlvrambench_hf.advisor import read_plans
from rlvrambench_hf.advisor.plan.mapping import TRL_STACK_FLAG
from rlvrambench_hf.errors import InputError
from unit.advisor.given import QWEN3B, answers

pytestmark = pytest.mark.unit

GRPO_YAML = f"""\
# trl grpo --config grpo.yaml
model_name_or_path: {QWEN3B}
dataset_name: openai/gsm8k
output_dir: outputs/qwen-3b-grpo
use_peft: true
lora_r: 64
lora_alpha: 128
lora_target_modules: all-linear
use_vllm: true
vllm_mode: colocate
vllm_gpu_memory_utilization: 0.55
vllm_enable_sleep_mode: true
vllm_max_model_length: 1280
num_generations: 4
per_device_train_batch_size: 4
gradient_accumulation_steps: 2
max_completion_length: 768
learning_rate: 1.0e-5
bf16: true
report_to: none
"""
#: accelerate configs as ``accelerate config`` writes them.
ACCELERATE = {
    "ddp": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nmixed_precision: bf16\nnum_machines: 1\n"
    "num_processes: 2\nuse_cpu: false\n",
    "zero2": "compute_environment: LOCAL_MACHINE\ndeepspeed_config:\n  offload_optimizer_device: cpu\n"
    "  offload_param_device: none\n  zero_stage: 2\ndistributed_type: DEEPSPEED\nnum_machines: 1\nnum_processes: 2\n",
    "zero3": "compute_environment: LOCAL_MACHINE\ndeepspeed_config:\n  offload_optimizer_device: cpu\n"
    "  offload_param_device: cpu\n  zero3_init_flag: true\n  zero_stage: 3\ndistributed_type: DEEPSPEED\n"
    "num_machines: 1\nnum_processes: 4\n",
    "fsdp": "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nfsdp_config:\n  fsdp_offload_params: true\n"
    "  fsdp_sharding_strategy: FULL_SHARD\n  fsdp_version: 2\nnum_machines: 1\nnum_processes: 2\n",
    "two_machines": "compute_environment: LOCAL_MACHINE\ndeepspeed_config:\n  zero_stage: 3\n"
    "distributed_type: DEEPSPEED\nmachine_rank: 0\nmain_process_ip: 10.0.0.1\nmain_process_port: 29500\n"
    "num_machines: 2\nnum_processes: 16\n",
}
PROMPT = {"max_prompt_length": 512}  # TRL 1.16 does not cap prompts: the user gives the longest


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def read(path: Path, source: Path, accelerate: str | None = None, **settings: object):
    launcher = write(path.parent, f"{accelerate}.yaml", ACCELERATE[accelerate]) if accelerate else None
    return read_plans(path, kind="trl", workload="gsm8k", settings=settings or PROMPT, source=source,
                      accelerate_config=launcher)  # fmt: skip


def refused(call) -> str:
    with pytest.raises(InputError) as caught:
        call()
    assert "\n" not in str(caught.value)
    return str(caught.value)


@pytest.mark.parametrize(
    ("accelerate", "expected"),
    [
        ("ddp", {"gpu_count": 2, "nnodes": 1, "train_batch_size": 4, "strategy": "ddp", "zero_stage": None,
                 "parameter_offload": False, "optimizer_offload": False}),
        ("zero2", {"gpu_count": 2, "train_batch_size": 4, "strategy": "deepspeed", "zero_stage": 2,
                   "parameter_offload": False, "optimizer_offload": True}),
        ("zero3", {"gpu_count": 4, "train_batch_size": 8, "strategy": "deepspeed", "zero_stage": 3,
                   "parameter_offload": True, "optimizer_offload": True}),
        ("fsdp", {"gpu_count": 2, "strategy": "fsdp2", "parameter_offload": True, "optimizer_offload": True}),
        ("two_machines", {"gpu_count": 16, "nnodes": 2, "train_batch_size": 32, "strategy": "deepspeed",
                          "zero_stage": 3}),
    ],
)  # fmt: skip
def test_a_grpo_config_runs_as_its_accelerate_config_launches_it(shared_mini, tmp_path, accelerate, expected):
    """The train batch is the prompts of one generation: per-device batch × processes × steps per generation
    (gradient accumulation, 2) / generations (4)."""
    plans = read(write(tmp_path, "grpo.yaml", GRPO_YAML), shared_mini.root, accelerate)
    got = plans.settings(0)
    assert {k: got.get(k) for k in expected} == expected
    common = {"model_id": QWEN3B, "rollout_n": 4, "actor_micro_batch": 4, "max_response_length": 768,
              "max_model_len": 1280, "vllm_gpu_memory_utilization": 0.55, "free_cache_engine": True, "lora_rank": 64,
              "adaptation": "LoRA", "rollout_engine": "vllm", "vllm_mode": "colocate"}  # fmt: skip
    assert {k: got[k] for k in common} == common
    assert plans.source("gpu_count", 0) == f"the accelerate config {tmp_path / f'{accelerate}.yaml'}"
    assert plans.row_flags(0)[0] == TRL_STACK_FLAG


def test_a_grpo_config_without_its_launcher_names_what_is_missing(shared_mini, tmp_path):
    path = write(tmp_path, "grpo.yaml", GRPO_YAML)
    assert refused(lambda: read_plans(path, kind="trl", workload="gsm8k", source=shared_mini.root)) == (
        f"{path}: missing TRL setting(s) num_processes, max_prompt_length: not set (the GPU count: --setting "
        "gpu_count=N, or --accelerate-config FILE; this TRL does not cap prompts: --setting max_prompt_length=N)"
    )
    assert read(path, shared_mini.root, gpu_count=2, max_prompt_length=512).settings(0)["gpu_count"] == 2


@pytest.mark.parametrize(
    ("launcher", "message"),
    [
        ("distributed_type: MULTI_GPUS\nnum_processes: 2\n",
         "distributed_type 'MULTI_GPUS' is not one accelerate has (NO, MULTI_CPU, MULTI_GPU, DEEPSPEED, ...)"),
        ("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 4\nnum_processes: 2\n",
         "deepspeed_config.zero_stage 4 is not a ZeRO stage (0, 1, 2 or 3)"),
        ("distributed_type: MULTI_GPU\nnum_machines: 4\nnum_processes: 2\n",
         "num_machines 4 is more than num_processes 2: accelerate's num_processes counts the processes of all "
         "machines"),
        ("- distributed_type: MULTI_GPU\n",
         "an accelerate config is a mapping (distributed_type:, num_processes:, ...)"),
    ],
)  # fmt: skip
def test_what_accelerate_refuses_is_one_line_naming_its_file(shared_mini, tmp_path, launcher, message):
    config, bad = write(tmp_path, "grpo.yaml", GRPO_YAML), write(tmp_path, "launcher.yaml", launcher)
    found = refused(lambda: read_plans(config, kind="trl", workload="gsm8k", settings=PROMPT, source=shared_mini.root,
                                       accelerate_config=bad))  # fmt: skip
    assert found == f"{bad}: {message}"


DEEPSPEED_FILES = {  # the DeepSpeed JSON an accelerate config names -> what the one line says
    "nested 100,000 deep": (b"[" * 100_000, "nested more than 100 deep"),
    "an integer of 10,000 digits": (b'{"zero_optimization": {"stage": ' + b"9" * 10_000 + b"}}", "10,000 digits"),
    "not JSON": (b"{oops", "is not valid JSON"),
    "not UTF-8": (b'{"zero_optimization": "\xff"}', "is not UTF-8"),
    "binary": (b"\x00\x01" * 100, "binary"),
}


@pytest.mark.parametrize("kind", list(DEEPSPEED_FILES))
def test_a_deepspeed_file_that_cannot_be_read_is_one_line_naming_it(shared_mini, tmp_path, kind):
    content, said = DEEPSPEED_FILES[kind]
    (tmp_path / "ds.json").write_bytes(content)
    launcher = write(tmp_path, "launcher.yaml", "distributed_type: DEEPSPEED\ndeepspeed_config:\n"
                     "  deepspeed_config_file: ds.json\nnum_processes: 2\n")  # fmt: skip
    config = write(tmp_path, "grpo.yaml", GRPO_YAML)
    found = refused(lambda: read_plans(config, kind="trl", workload="gsm8k", settings=PROMPT, source=shared_mini.root,
                                       accelerate_config=launcher))  # fmt: skip
    assert "launcher.yaml: deepspeed_config.deepspeed_config_file: the DeepSpeed config '" in found, found
    assert said in found, found


def test_a_key_both_files_give_must_agree(shared_mini, tmp_path):
    config = write(tmp_path, "grpo.yaml", GRPO_YAML + "num_processes: 4\n")
    found = refused(lambda: read(config, shared_mini.root, "ddp"))
    assert found == f"{config}: num_processes = 4 but the accelerate config {tmp_path / 'ddp.yaml'} gives 2"


def test_an_accelerate_config_goes_with_trl_only(verl_defaults, shared_mini, tmp_path):
    from unit.advisor.given import verl_tree, verl_yaml

    verl = write(tmp_path, "run.yaml", verl_yaml(verl_tree()))
    launcher = write(tmp_path, "ddp.yaml", ACCELERATE["ddp"])
    assert refused(lambda: read_plans(verl, workload="gsm8k", source=shared_mini.root, accelerate_config=launcher)) == (
        "an accelerate config goes with a TRL run (--trl), not with a VERL one"
    )


def test_a_supervised_fine_tuning_config_is_no_grpo_run(shared_mini, tmp_path):
    sft = write(tmp_path, "sft.yaml", f"model_name_or_path: {QWEN3B}\npacking: true\nmax_length: 2048\n")
    assert refused(lambda: read(sft, shared_mini.root)) == (
        f"{sft}: an SFTConfig (max_length, packing), not a GRPOConfig: the advisor answers GRPO runs "
        "(num_generations, max_completion_length, use_vllm, ...)"
    )


def test_a_grpo_config_is_answered_with_its_offloads_in_the_memory_model(shared_mini, tmp_path, mini_context):
    """ZeRO-3 is physics the release measured none of: the answer prints its peaks with the band part that says so,
    and the offloads it reads are the ones the model's terms take."""
    from unit.advisor.given import model_of

    plans = read(write(tmp_path, "grpo.yaml", GRPO_YAML), shared_mini.root, "zero3")
    (found,) = answers(plans, mini_context)
    assert found["phases"] and found["predicted_peak_mib"] is not None and "not_modelled" not in found
    assert found["verdict"]["state"] is not None
    model = model_of([found["settings"]], mini_context)
    rollout = {t.name: t for t in model.terms["rollout"]}
    assert float(rollout["resident_actor"].mib[0]) == 0.0  # parameters offloaded to the CPU while vLLM generates
    update = {t.name: t for t in model.terms["actor_update"]}
    assert "Adam offloaded" in update["adapter_gradients_and_adam"].arithmetic(0)


SCRIPT = f'''\
"""GRPO with LoRA on GSM8K, as TRL's quickstart writes it."""
import os
from pathlib import Path

from datasets import load_dataset
from peft import LoraConfig
from trl import GRPOConfig, GRPOTrainer

Path("WROTE_AT_IMPORT").write_text("the script ran")
os.makedirs("outputs", exist_ok=True)

MODEL = "{QWEN3B}"
dataset = load_dataset("openai/gsm8k", "main", split="train")


def reward_len(completions, **kwargs):
    return [-abs(20 - len(c)) for c in completions]


training_args = GRPOConfig(
    output_dir=os.path.join("outputs", "grpo"),
    use_vllm=True,
    vllm_mode="colocate",
    vllm_gpu_memory_utilization=0.55,
    vllm_enable_sleep_mode=True,
    num_generations=4,
    per_device_train_batch_size=BATCH,
    max_completion_length=768,
)
peft_config = LoraConfig(RANK, lora_alpha=128, target_modules="all-linear", task_type="CAUSAL_LM")
trainer = GRPOTrainer(model=MODEL, reward_funcs=reward_len, args=training_args, train_dataset=dataset,
                      peft_config=peft_config)

if __name__ == "__main__":
    open("WROTE_IN_MAIN", "w").write("ran")
    trainer.train()
'''


def script(tmp_path: Path, batch: str = "4", rank: str = "r=64", name: str = "train_grpo.py") -> Path:
    return write(tmp_path, name, SCRIPT.replace("BATCH", batch).replace("RANK", rank))


def test_a_training_script_is_read_as_source_and_never_run(shared_mini, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = script(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    plans = read(path, shared_mini.root, "ddp")
    got = plans.settings(0)
    assert (got["model_id"], got["lora_rank"], got["rollout_n"], got["actor_micro_batch"]) == (QWEN3B, 64, 4, 4)
    assert (got["vllm_gpu_memory_utilization"], got["max_response_length"], got["gpu_count"]) == (0.55, 768, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "ddp.yaml"])  # nothing written
    assert not Path(os.getcwd(), "WROTE_AT_IMPORT").exists()


def test_a_field_the_script_computes_when_it_runs_is_refused_with_its_line(shared_mini, tmp_path):
    path = script(tmp_path, batch='int(os.environ.get("BATCH", "4"))')
    line = next(i for i, text in enumerate(path.read_text().split("\n"), 1) if "per_device_train_batch_size" in text)
    assert refused(lambda: read(path, shared_mini.root, "ddp")) == (
        f"{path} line {line}: per_device_train_batch_size is computed when the script runs; write its value"
    )


def test_a_lora_config_without_a_rank_is_peft_s_default_rank(shared_mini, tmp_path):
    plans = read(script(tmp_path, rank="task_type='CAUSAL_LM'"), shared_mini.root, "ddp")
    assert (plans.settings(0)["lora_rank"], plans.settings(0)["adaptation"]) == (8, "LoRA")
    assert "LoRA rank 8 (the measurements use rank-64 adapters)" in plans.row_flags(0)


def test_a_model_loaded_from_the_hub_in_the_script_is_that_model(shared_mini, tmp_path):
    text = (
        SCRIPT.replace("BATCH", "4")
        .replace("RANK", "r=64")
        .replace(
            f'MODEL = "{QWEN3B}"', f'MODEL = AutoModelForCausalLM.from_pretrained("{QWEN3B}", torch_dtype="bfloat16")'
        )
    )
    assert read(write(tmp_path, "train.py", text), shared_mini.root, "ddp").settings(0)["model_id"] == QWEN3B


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("from trl import GRPOConfig\nargs = GRPOConfig(num_generations=4)\nother = GRPOConfig(num_generations=8)\n",
         "2 GRPOConfig(...) calls; the advisor reads a script with one"),
        ("import trl\nprint('no config here')\n", "no GRPOConfig(...) calls; the advisor reads a script with one"),
        ("from trl import GRPOConfig\nargs = GRPOConfig(\n    num_generations=4,,\n)\n",
         "not a Python script (line 3)"),
    ],
)  # fmt: skip
def test_a_script_the_advisor_cannot_read_is_one_line(shared_mini, tmp_path, text, message):
    path = write(tmp_path, "train.py", text)
    assert refused(lambda: read(path, shared_mini.root, "ddp")) == f"{path}: {message}"
