#!/usr/bin/env bash
# Supervised fine-tuning with VERL's SFT trainer (not an RL run): refused by name.
set -x
nproc_per_node=${1:-2}

torchrun --standalone --nnodes=1 --nproc_per_node=$nproc_per_node \
    -m verl.trainer.fsdp_sft_trainer \
    data.train_batch_size=64 \
    data.micro_batch_size_per_gpu=4 \
    model.partial_pretrain=Qwen/Qwen2.5-0.5B-Instruct \
    model.lora_rank=32 \
    trainer.total_epochs=1 "${@:2}"
