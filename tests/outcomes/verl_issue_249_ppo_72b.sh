#!/usr/bin/env bash
# PPO (GAE: actor and critic of the same model) on Qwen2.5-72B-Instruct, two nodes of eight A800 80GB, every
# per-GPU micro-batch 1, rollout TP 8: the script of verl-project/verl issue #249 (comment of 2025-03-25), reported
# out of memory. The report's script is cut after the rollout's TP; what it leaves unsaid is passed in place of $@
# by the outcome table (outcomes.yaml), every filling a plan.
model=/mnt/data/qwen/model/Qwen2.5-72B-Instruct
actor_model_path=$model
critic_model_path=$model

export NPROC_PER_NODE=8
export ROLLOUT_TP_SIZE=8
export NNODES=2

python3 -m verl.trainer.main_ppo \
    data.train_files=data/gsm8k/train.parquet \
    data.val_files=data/gsm8k/test.parquet \
    data.train_batch_size=64 \
    data.max_prompt_length=512 \
    data.max_response_length=256 \
    actor_rollout_ref.model.path=$actor_model_path \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=64 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=$ROLLOUT_TP_SIZE \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1 \
    critic.model.path=$critic_model_path \
    critic.ppo_micro_batch_size_per_gpu=1 \
    trainer.n_gpus_per_node=$NPROC_PER_NODE \
    trainer.nnodes=$NNODES $@
