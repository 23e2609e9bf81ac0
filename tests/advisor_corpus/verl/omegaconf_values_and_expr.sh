#!/bin/bash
# Values as OmegaConf reads them (16 and yes are true, '64' is 64), arithmetic by $(( )) and $(expr ...), and a
# scheduler budget computed when the script runs (no floor, phase or scope reads it: not read, and said so).
PROMPT=512
RESPONSE=$(expr 2 \* 512)
PER_GPU=$(( 32 / 4 ))
python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_batch_size='64' \
    data.max_prompt_length=$PROMPT \
    data.max_response_length=$RESPONSE \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct \
    actor_rollout_ref.model.lora_rank=64 \
    actor_rollout_ref.model.use_remove_padding=16 \
    actor_rollout_ref.model.enable_gradient_checkpointing=yes \
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=$PER_GPU \
    actor_rollout_ref.actor.use_kl_loss=on \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=4 \
    actor_rollout_ref.rollout.gpu_memory_utilization='0.5' \
    actor_rollout_ref.rollout.free_cache_engine=1 \
    actor_rollout_ref.rollout.max_model_len=$(( PROMPT + RESPONSE )) \
    actor_rollout_ref.rollout.max_num_batched_tokens=$(nproc --all) \
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16 \
    trainer.n_gpus_per_node=2 \
    trainer.nnodes=1 \
    trainer.experiment_name="run-$(date +%Y%m%d)"
