# A TRL training script in the shape of TRL's quickstart: the GRPOConfig written in Python, the model loaded by id,
# a LoraConfig passed as peft_config. The advisor reads it as source and never runs it.
from datasets import load_dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM
from trl import GRPOConfig, GRPOTrainer

MODEL_ID = "Qwen/Qwen2.5-3B-Instruct"
model = AutoModelForCausalLM.from_pretrained(MODEL_ID, torch_dtype="bfloat16")
dataset = load_dataset("trl-lib/DeepMath-103K", split="train")


def reward_num_unique_letters(completions, **kwargs):
    return [float(len(set(completion[0]["content"]))) for completion in completions]


training_args = GRPOConfig(
    output_dir=f"{MODEL_ID.split('/')[-1]}-GRPO",
    per_device_train_batch_size=4,
    num_generations=4,
    max_completion_length=768,
    gradient_accumulation_steps=2,
    gradient_checkpointing=True,
    use_vllm=True,
    vllm_mode="colocate",
    vllm_gpu_memory_utilization=0.4,
    bf16=True,
)
peft_config = LoraConfig(r=64, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")
trainer = GRPOTrainer(
    model=model,
    reward_funcs=reward_num_unique_letters,
    args=training_args,
    train_dataset=dataset,
    peft_config=peft_config,
)
trainer.train()
