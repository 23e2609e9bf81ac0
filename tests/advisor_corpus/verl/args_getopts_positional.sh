#!/bin/bash
# Options with getopts, then positional arguments with defaults (the model and the rollout engine):
#   bash args_getopts_positional.sh -g 4 -u 0.6 Qwen/Qwen2.5-7B-Instruct vllm
GPUS=2
UTIL=0.4
while getopts "g:u:h" opt; do
    case $opt in
        g) GPUS=$OPTARG ;;
        u) UTIL=$OPTARG ;;
        h) echo "usage: $0 [-g GPUS] [-u UTIL] [MODEL] [ENGINE]"; exit 0 ;;
        *) exit 1 ;;
    esac
done
shift $((OPTIND - 1))
MODEL=${1:-Qwen/Qwen2.5-3B-Instruct}
ENGINE=${2:-vllm}
set -- "trainer.total_training_steps=50"

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_batch_size=32 data.max_prompt_length=512 data.max_response_length=512 \
    actor_rollout_ref.model.path=$MODEL \
    actor_rollout_ref.model.lora_rank=64 \
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.rollout.name=$ENGINE \
    actor_rollout_ref.rollout.n=4 \
    actor_rollout_ref.rollout.gpu_memory_utilization=$UTIL \
    actor_rollout_ref.rollout.max_model_len=1024 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    trainer.n_gpus_per_node=$GPUS trainer.nnodes=1 "$@"
