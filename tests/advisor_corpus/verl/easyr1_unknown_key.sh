#!/bin/bash
# EasyR1 with a VERL key its schema does not have: EasyR1 refuses it before running.
python3 -m verl.trainer.main \
    config=easyr1/qwen2_5_7b_math.yaml \
    worker.actor.model.model_path=Qwen/Qwen2.5-7B-Instruct \
    worker.rollout.max_num_seqs=64
