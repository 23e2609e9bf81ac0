#!/bin/bash
# EasyR1 (its own package is also named verl): a config file and its own keys on the command line.
set -x

MODEL_PATH=Qwen/Qwen2.5-3B-Instruct  # replace it with your local file path

python3 -m verl.trainer.main \
    config=easyr1/qwen2_5_7b_math.yaml \
    data.max_response_length=1024 \
    worker.actor.model.model_path=${MODEL_PATH} \
    worker.actor.model.lora.rank=64 \
    worker.actor.model.lora.alpha=64 \
    worker.actor.optim.lr=1e-5 \
    worker.rollout.tensor_parallel_size=1 \
    trainer.experiment_name=qwen2_5_3b_math_grpo_lora \
    trainer.n_gpus_per_node=2
