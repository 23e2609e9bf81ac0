"""open-r1's GRPO recipes as its README launches them, each answered with a verdict (issue 35): the accelerate
configs (DDP, ZeRO-2, ZeRO-3), the recipes and the launch commands are written here in huggingface/open-r1's shapes
(``recipes/accelerate_configs/*.yaml``, ``recipes/<model>/grpo/config_demo*.yaml``, the README's ``accelerate
launch`` lines; facts only). The README configures them "for a node of 8 x H100s (80GB)": every one ran there.
Full fine-tuning, DeepSpeed, DDP and vLLM in server mode are physics the release measured none of; each answer
prints its peak with the band part that says so, and none is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rlvrambench_hf.advisor import advise, read_plans
from rlvrambench_hf.advisor.assess.context import load_context
from rlvrambench_hf.advisor.output.document import document
from rlvrambench_hf.advisor.plan.hardware import Hardware

#: recipes/accelerate_configs/*.yaml of huggingface/open-r1: the keys a launch reads.
_ACCELERATE = {"compute_environment": "LOCAL_MACHINE", "machine_rank": 0, "main_training_function": "main",
               "mixed_precision": "bf16", "num_machines": 1, "num_processes": 8, "rdzv_backend": "static",
               "same_network": True, "use_cpu": False}  # fmt: skip
ACCELERATE = {
    "ddp.yaml": {**_ACCELERATE, "distributed_type": "MULTI_GPU", "gpu_ids": "all"},
    "zero2.yaml": {**_ACCELERATE, "distributed_type": "DEEPSPEED", "deepspeed_config": {
        "deepspeed_multinode_launcher": "standard", "offload_optimizer_device": "none",
        "offload_param_device": "none", "zero3_init_flag": False, "zero_stage": 2}},
    "zero3.yaml": {**_ACCELERATE, "distributed_type": "DEEPSPEED", "deepspeed_config": {
        "deepspeed_multinode_launcher": "standard", "offload_optimizer_device": "none",
        "offload_param_device": "none", "zero3_init_flag": True, "zero3_save_16bit_model": True, "zero_stage": 3}},
}  # fmt: skip
_GRPO = {"torch_dtype": "bfloat16", "attn_implementation": "flash_attention_2", "bf16": True, "use_vllm": True,
         "do_eval": False, "gradient_accumulation_steps": 4, "gradient_checkpointing": True,
         "gradient_checkpointing_kwargs": {"use_reentrant": False}, "max_steps": -1, "num_train_epochs": 1,
         "per_device_train_batch_size": 16, "reward_funcs": ["accuracy", "format", "tag_count"], "seed": 42,
         "dataset_name": "open-r1/OpenR1-Math-220k", "dataset_prompt_column": "problem",
         "save_strategy": "epoch", "output_dir": "data/out"}  # fmt: skip
#: recipes/<model>/grpo/config_demo*.yaml: the GRPO fields that set memory.
RECIPES = {
    "Qwen2.5-1.5B-Instruct/grpo/config_demo.yaml": {**_GRPO, "model_name_or_path": "Qwen/Qwen2.5-1.5B-Instruct",
        "max_prompt_length": 512, "max_completion_length": 1024, "num_generations": 16},
    "Qwen2.5-1.5B-Instruct/grpo/config_demo_code.yaml": {**_GRPO, "model_name_or_path": "Qwen/Qwen2.5-1.5B-Instruct",
        "beta": 0.01, "max_prompt_length": 1024, "max_completion_length": 2048, "num_generations": 14,
        "dataset_name": "open-r1/verifiable-coding-problems-python"},
    "DeepSeek-R1-Distill-Qwen-1.5B/grpo/config_demo.yaml": {**_GRPO,
        "model_name_or_path": "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", "max_prompt_length": 512,
        "max_completion_length": 2048, "num_generations": 16, "temperature": 0.7},
}  # fmt: skip
#: The README's launch commands (and the DDP config with the demo recipe), as (name, text, what it carries).
LAUNCHES = (
    ("colocate_zero3.sh", "ACCELERATE_LOG_LEVEL=info \\\n    accelerate launch --config_file "
     "recipes/accelerate_configs/zero3.yaml \\\n    src/open_r1/grpo.py --config "
     "recipes/DeepSeek-R1-Distill-Qwen-1.5B/grpo/config_demo.yaml \\\n    --vllm_mode colocate\n",
     {"strategy": "deepspeed", "zero_stage": 3, "vllm_mode": "colocate", "gpu_count": 8}),
    ("server_zero2_code.sh", "CUDA_VISIBLE_DEVICES=1,2,3,4,5,6,7 ACCELERATE_LOG_LEVEL=info \\\n    accelerate launch "
     "--config_file recipes/accelerate_configs/zero2.yaml --num_processes=7 \\\n    src/open_r1/grpo.py --config "
     "recipes/Qwen2.5-1.5B-Instruct/grpo/config_demo_code.yaml --vllm_mode server\n",
     {"strategy": "deepspeed", "zero_stage": 2, "vllm_mode": "server", "gpu_count": 7, "reference_model": True}),
    ("ddp_demo.sh", "accelerate launch --config_file recipes/accelerate_configs/ddp.yaml src/open_r1/grpo.py "
     "--config recipes/Qwen2.5-1.5B-Instruct/grpo/config_demo.yaml --vllm_mode colocate\n",
     {"strategy": "ddp", "gpu_count": 8}),
)  # fmt: skip


@pytest.fixture(scope="module")
def openr1(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("open-r1")
    for name, config in ACCELERATE.items():
        path = root / "recipes" / "accelerate_configs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
    for name, recipe in RECIPES.items():
        path = root / "recipes" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(recipe), encoding="utf-8")
    for name, text, _ in LAUNCHES:
        (root / name).write_text("#!/bin/bash\n" + text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def answered(openr1: Path, snapshot: Path) -> list[tuple[dict, dict]]:
    from huggingface_hub import constants

    offline = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = True  # the models' sizes from the config.json facts the package ships
    try:
        context = load_context(snapshot)
        out = []
        for name, _, facts in LAUNCHES:
            plans = read_plans(openr1 / name, kind="trl", workload="math", source=snapshot)
            (entry,) = document(advise(plans, snapshot, context=context, hardware=Hardware.of(None, None, gpu="H100")))[
                "configurations"
            ]
            out.append((facts, entry))
        return out
    finally:
        constants.HF_HUB_OFFLINE = offline


def test_every_grpo_recipe_as_open_r1_launches_it_gets_a_verdict_on_its_h100s(answered: list) -> None:
    for facts, entry in answered:
        settings = entry["settings"]
        assert {k: settings.get(k) for k in facts} == facts
        assert settings["lora_rank"] == 0  # open-r1 trains every parameter
        assert entry["verdict"]["state"] is not None and entry["predicted_peak_mib"], entry["verdict"]
        assert "not_modelled" not in entry
        parts = {p["part"] for p in entry["band"]["parts"]}
        assert {"device_not_measured", "model_not_calibrated"} <= parts
        update = next(p for p in entry["phases"] if p["phase"] == "actor_update")
        assert any(t["term"] == "actor_optimizer_states" and t["mib"] > 0 for t in update["terms"])


def test_vllm_in_server_mode_leaves_the_training_gpus_without_a_reservation(answered: list) -> None:
    by_mode = {facts.get("vllm_mode"): entry for facts, entry in answered if facts.get("vllm_mode")}
    rollout = {p["phase"]: {t["term"]: t for t in p["terms"]} for p in by_mode["server"]["phases"]}["rollout"]
    assert rollout["vllm_reservation"]["mib"] == 0 and "other GPUs" in rollout["vllm_reservation"]["arithmetic"]
    colocated = {p["phase"]: {t["term"]: t for t in p["terms"]} for p in by_mode["colocate"]["phases"]}["rollout"]
    assert colocated["vllm_reservation"]["mib"] > 0


def test_zero2_replicates_the_parameters_and_ddp_replicates_everything(answered: list) -> None:
    def update(entry: dict) -> dict:
        return {t["term"]: t for p in entry["phases"] if p["phase"] == "actor_update" for t in p["terms"]}

    (zero2,) = [e for f, e in answered if f.get("zero_stage") == 2]
    (ddp,) = [e for f, e in answered if f.get("strategy") == "ddp"]
    assert "replicated" in update(zero2)["actor_shards"]["arithmetic"]
    assert "/ 7 GPUs" in update(zero2)["actor_optimizer_states"]["arithmetic"]
    assert "(not sharded)" in update(ddp)["actor_optimizer_states"]["arithmetic"]
    assert update(ddp)["actor_optimizer_states"]["mib"] > update(zero2)["actor_optimizer_states"]["mib"]
