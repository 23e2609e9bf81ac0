#!/bin/bash
# open-r1's way to launch GRPO: accelerate with its DeepSpeed config, one GPU left to vLLM's server, the recipe
# named with --config (the training script is open-r1's own, not here).
NUM_GPUS=8
ACCELERATE_LOG_LEVEL=info accelerate launch \
    --config_file ../accelerate/zero2.yaml \
    --num_processes=$(( NUM_GPUS - 1 )) \
    --num_machines 1 \
    src/open_r1/grpo.py \
    --config recipes/qwen2_5_1_5b_grpo.yaml \
    --vllm_mode server
