#!/bin/bash
# GRPO with LoRA on Qwen2.5-Coder-7B over two 80 GB GPUs, as reported out of memory in verl-project/verl issue
# #3366 (2025-09-05; "GPU 0 has a total capacity of 79.14 GiB"). The keys the report shows are set as it sets them;
# the actor micro-batch and the LoRA rank it does not show are variables the outcome table fills, and what it
# leaves to VERL comes in place of $@.
set -x

export CUDA_VISIBLE_DEVICES=2,3
MODEL_PATH=Qwen/Qwen2.5-7B-Instruct
MICRO_BATCH=4
LORA_RANK=32

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    algorithm.norm_adv_by_std_in_grpo=True \
    algorithm.kl_ctrl.kl_coef=0.001 \
    data.train_files=${TRAIN_DATA_PATH:-data/code/train.parquet} \
    data.val_files=${EVAL_DATA_PATH:-data/code/test.parquet} \
    data.train_batch_size=16 \
    data.max_prompt_length=1024 \
    data.max_response_length=1024 \
    actor_rollout_ref.model.path=${MODEL_PATH} \
    actor_rollout_ref.model.lora_rank=${LORA_RANK} \
    actor_rollout_ref.model.lora_alpha=32 \
    actor_rollout_ref.model.target_modules=all-linear \
    actor_rollout_ref.rollout.temperature=0.7 \
    actor_rollout_ref.rollout.top_p=0.95 \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.fsdp_config.param_offload=True \
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=${MICRO_BATCH} \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=6 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    trainer.n_gpus_per_node=2 \
    trainer.nnodes=1 \
    trainer.total_epochs=3 $@
