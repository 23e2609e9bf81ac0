#!/usr/bin/env bash
# GRPO with LoRA whose model, GPU count, group size and utilization come from the script's own arguments:
#   bash args_while_case_qwen2_5_3b.sh --model Qwen/Qwen2.5-7B-Instruct --gpus 4 -n 8
set -euo pipefail

MODEL=Qwen/Qwen2.5-3B-Instruct
GPUS=2
ROLLOUT_N=5
UTIL=0.5
EXTRA=()

usage() {
    echo "usage: $0 [--model M] [--gpus N] [-n N] [--util=U] [key=value ...]" >&2
    exit 1
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        --model) MODEL="$2"; shift 2 ;;
        --gpus) GPUS="$2"; shift 2 ;;
        -n|--rollout-n) ROLLOUT_N="$2"; shift 2 ;;
        --util=*) UTIL="${1#*=}"; shift ;;
        -h|--help) usage ;;
        *=*) EXTRA+=("$1"); shift ;;
        *) echo "unknown option $1" >&2; usage ;;
    esac
done

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_batch_size=64 \
    data.max_prompt_length=512 \
    data.max_response_length=1024 \
    actor_rollout_ref.model.path="$MODEL" \
    actor_rollout_ref.model.lora_rank=64 \
    actor_rollout_ref.model.target_modules=all-linear \
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n="$ROLLOUT_N" \
    actor_rollout_ref.rollout.gpu_memory_utilization="$UTIL" \
    actor_rollout_ref.rollout.max_model_len=1536 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16 \
    trainer.n_gpus_per_node="$GPUS" \
    trainer.nnodes=1 \
    "${EXTRA[@]}"
