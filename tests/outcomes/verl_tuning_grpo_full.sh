#!/usr/bin/env bash
# GRPO full fine-tuning at the least resources VERL's device-tuning table lists (docs/perf/device_tuning.rst, the
# "MIN" rows, each "a script that can run after applying all memory optimization techniques"): the shape of
# examples/tuning/7b/qwen2-7b_grpo_2_h800_fsdp_vllm.sh and its 14B / 70B siblings (volcengine/verl@b178a3c). The
# outcome table (outcomes.yaml) sets the model, GPUs, nodes, TP, utilization, micro-batches and lengths per row.
set -x
gsm8k_train_path=$HOME/data/rlhf/gsm8k/train.parquet
gsm8k_test_path=$HOME/data/rlhf/math/test.parquet
model_path=Qwen/Qwen2-7B-Instruct
n_gpus=2
nnodes=1
tp=2
util=0.6
micro=16
prompt=1024
response=1024
dynamic=False
budget=16384

train_files="['$gsm8k_train_path']"
test_files="['$gsm8k_test_path']"

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files="$train_files" \
    data.val_files="$test_files" \
    data.train_batch_size=1024 \
    data.max_prompt_length=$prompt \
    data.max_response_length=$response \
    data.filter_overlong_prompts=True \
    data.truncation='error' \
    actor_rollout_ref.model.path=$model_path \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.actor.ppo_mini_batch_size=256 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=$micro \
    actor_rollout_ref.actor.use_dynamic_bsz=$dynamic \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$budget \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.fsdp_config.param_offload=True \
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=True \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=$micro \
    actor_rollout_ref.rollout.tensor_model_parallel_size=$tp \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.gpu_memory_utilization=$util \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=$micro \
    actor_rollout_ref.ref.fsdp_config.param_offload=True \
    algorithm.use_kl_in_reward=False \
    trainer.critic_warmup=0 \
    trainer.logger='["console"]' \
    trainer.project_name='verl_grpo_example_gsm8k' \
    trainer.experiment_name='full_grpo_min_resources' \
    trainer.n_gpus_per_node=$n_gpus \
    trainer.nnodes=$nnodes \
    trainer.save_freq=-1 \
    trainer.test_freq=5 \
    trainer.total_epochs=15 $@
