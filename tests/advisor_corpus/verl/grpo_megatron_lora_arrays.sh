#!/usr/bin/env bash
# GRPO with a Megatron LoRA actor, the overrides kept in bash arrays (the shape of VERL's newer examples):
# LoRA written as model.lora.rank, comments inside the arrays, one array appended to, "${ARRAY[@]}" in the launch.
set -xeuo pipefail

rollout_engine=vllm
prompt_length=1024
response_length=1024

DATA=(
    data.train_batch_size=64
    data.max_prompt_length=${prompt_length}
    data.max_response_length=${response_length}
)
MODEL=(
    actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct
    actor_rollout_ref.model.lora.rank=128   # Megatron reads LoRA here
    actor_rollout_ref.model.lora.alpha=256
    # actor_rollout_ref.model.lora.dropout=0.05
)
ACTOR=(
    actor_rollout_ref.actor.ppo_mini_batch_size=32
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2
    actor_rollout_ref.actor.use_kl_loss=True
    actor_rollout_ref.actor.kl_loss_coef=0.001
)
ACTOR+=(actor_rollout_ref.actor.megatron.param_offload=True)
ROLLOUT=(
    actor_rollout_ref.rollout.name=${rollout_engine}
    actor_rollout_ref.rollout.n=4
    actor_rollout_ref.rollout.gpu_memory_utilization=0.5
    actor_rollout_ref.rollout.tensor_model_parallel_size=1
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8
)
REF=(actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8)
TRAINER=(
    trainer.logger='["console"]'
    trainer.n_gpus_per_node=4
    trainer.nnodes=1
    trainer.total_training_steps=10
)

python3 -m verl.trainer.main_ppo \
    --config-path=config \
    --config-name='ppo_megatron_trainer.yaml' \
    algorithm.adv_estimator=grpo \
    "${DATA[@]}" \
    "${MODEL[@]}" \
    "${ACTOR[@]}" \
    "${ROLLOUT[@]}" \
    "${REF[@]}" \
    "${TRAINER[@]}" \
    "$@"
