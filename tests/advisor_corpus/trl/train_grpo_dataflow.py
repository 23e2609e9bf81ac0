# A TRL script whose model and adapter flow through variables: the id into from_pretrained, the LoRA config into
# get_peft_model, and a field of the config set after it is built. Read as source, never run.
from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM
from trl import GRPOConfig, GRPOTrainer

model_name = "Qwen/Qwen2.5-3B-Instruct"
model = AutoModelForCausalLM.from_pretrained(model_name, torch_dtype="bfloat16")
lora = LoraConfig(r=32, lora_alpha=64, target_modules="all-linear", task_type="CAUSAL_LM")
model = get_peft_model(model, lora)

settings = {"num_generations": 8, "max_completion_length": 1024}
args = GRPOConfig(
    output_dir="grpo-dataflow",
    per_device_train_batch_size=8,
    gradient_accumulation_steps=2,
    use_vllm=True,
    vllm_mode="colocate",
    vllm_gpu_memory_utilization=0.3,
    **settings,
)
args.vllm_gpu_memory_utilization = 0.45
args.logging_steps = 5

trainer = GRPOTrainer(
    model=model,
    reward_funcs=lambda completions, **kw: [0.0] * len(completions),
    args=args,
    train_dataset=load_dataset("openai/gsm8k", "main", split="train"),
)
trainer.train()
