"""The phase of VERL's colocated loop in which a logged failure happened (pure over text): read from the frames of
the traceback around it and from Ray's task names (VERL's worker methods, vLLM's start-up, TRL's trainer)."""

from __future__ import annotations

import re

from .logs import Lines, Signal

#: Frames and Ray task names that place a failure in a phase of the colocated loop, most specific first: the
#: weight sync runs inside generate_sequences in older VERL, vLLM's start-up inside init_model. VERL 0.3-0.5 name
#: the fused worker's methods (``actor_rollout_update_actor``), 0.6 and later the engine workers' (``train_batch``,
#: ``infer_batch``, ``update_weights``, ``resume`` of the vLLM server); TRL names the trainer's.
PHASE_MARKERS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (phase, re.compile(pattern))
    for phase, pattern in (
        (
            "weight_sync",
            r"sharding_manager|ShardingManager|sync_weights|update_weights|load_weights|layered_summon|"
            r"collect_lora_params|summon_full_params|merge_and_unload|rollout_mode|_sync_fsdp_params_to_vllm|"
            r"_move_model_to_vllm|get_peft_model_state_dict|\bwake_up\b|\bresume\b|resume_kv_cache",
        ),
        (
            "initializing",
            r"determine_num_available_blocks|profile_run|_initialize_kv_caches|initialize_cache|init_device|"
            r"_init_executor|from_engine_args|determine_available_memory|_build_rollout|EngineCore.__init__|"
            r"LLMEngine.__init__|request_memory",
        ),
        ("checkpoint", r"save_checkpoint|_save_checkpoint|save_pretrained|_save\b"),
        ("validation", r"\b_validate\b|evaluation_loop|\bevaluate\b"),
        (
            "actor_update",
            r"update_policy|update_actor|\bbackward\b|optimizer\.step|_optimizer_step|compute_loss|"
            r"training_step|clip_grad_norm|train_mini_batch|\btrain_batch\b",
        ),
        (
            "reference_logprob",
            r"compute_ref_log_prob|compute_log_prob|_get_per_token_logps|logprobs_from_logits|\binfer_batch\b",
        ),
        ("rollout", r"generate_sequences|_generate_and_score_completions|\bgenerate\b|_run_engine|execute_model"),
        ("initializing", r"init_model|WorkerDict.__init__|__init__"),
    )
)
_FRAME = re.compile(r'File "([^"\n]{1,300})", line \d+, in ([\w<>.]+)|ray::([\w.]+)|name=([\w:.]+)')


def phase_near(lines: Lines, signal: Signal) -> str | None:
    """The phase of the colocated loop the frames around ``signal`` name (its traceback, Ray's task name), or None."""
    first = signal.line
    for back in range(signal.line - 1, max(signal.line - 400, 0), -1):
        if "Traceback (most recent call last)" in lines.line(back):
            first = back - 3
            break
    else:
        first = signal.line - 40
    names = " ".join(" ".join(g for g in m.groups() if g) for m in _FRAME.finditer(lines.span(first, signal.line + 15)))
    for phase, pattern in PHASE_MARKERS:
        if pattern.search(names):
            return phase
    return None
