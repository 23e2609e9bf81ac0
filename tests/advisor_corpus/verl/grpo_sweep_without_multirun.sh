#!/usr/bin/env bash
# two values for one key: a Hydra sweep, which a single run (no --multirun) refuses
python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_batch_size=64 \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct \
    actor_rollout_ref.rollout.n=4,8 \
    trainer.n_gpus_per_node=2
