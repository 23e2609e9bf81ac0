#!/usr/bin/env bash
# GRPO with a rank-64 LoRA adapter on Qwen2.5-1.5B-Instruct and GSM8K with TRL: two processes under FSDP2, vLLM
# colocated with sleep mode. An example shipped with rlvrambench-hf:
#   rlvrambench advise --trl example:qwen2.5-1.5b-grpo-lora --gpu H100
# The GRPOConfig is grpo-qwen2.5-1.5b-lora.yaml and the accelerate config fsdp2.yaml, both beside this file.
set -euo pipefail

accelerate launch --config_file fsdp2.yaml -m trl.scripts.grpo --config grpo-qwen2.5-1.5b-lora.yaml "$@"
