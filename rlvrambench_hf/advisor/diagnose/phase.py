"""Where in the loop a logged failure happened (pure over text): the phase of VERL's colocated loop (a stage of the
release's ``stage_measurements``) and the operation inside it, read from the frames of the traceback around the
message, Ray's task names and the killed process of Ray's memory table, when the message itself names none.

A phase is read in three passes. A frame that sets the context wins wherever it is in the stack (validation,
checkpoint, start-up, the weight sync: what runs inside them is part of them). Otherwise the innermost frame that
names a phase decides (TRL's ``training_step`` wraps its generation, VERL's ``generate_sequences`` its vLLM engine),
and frames that name a phase only weakly (a log-probability helper both the update and the scoring call, a bare
``generate``, ``training_step``, ``__init__``) decide only when no other frame does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .logs import Lines, Signal, unwrapped


def _markers(pairs: Sequence[tuple[str, str]]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((name, re.compile(pattern)) for name, pattern in pairs)


#: Frames that set the phase wherever they are, in this order. VERL 0.3-0.5 name the fused worker's methods
#: (``actor_rollout_update_actor``), 0.6 and later the engine workers' (``train_batch``, ``infer_batch``,
#: ``update_weights``, the vLLM server's ``wake_up`` / ``resume``); TRL its trainer's and ``VLLMGeneration``'s.
CONTEXT = _markers(
    (
        ("validation", r"\b_validate$|evaluation_loop$|prediction_step$|:evaluate$"),
        ("checkpoint", r"save_checkpoint$|_save_checkpoint$|save_pretrained$|:_save$|save_model$"),
        (
            "initializing",
            r"determine_num_available_blocks$|profile_run$|_initialize_kv_caches$|initialize_cache$|init_device$"
            r"|_init_executor$|from_engine_args$|determine_available_memory$|_build_rollout$|EngineCore\w*\.__init__$"
            r"|LLMEngine\.__init__$|request_memory$|_dummy_sampler_run$|_dummy_run$|capture_model$"
            r"|compile_or_warm_up_model$|init_model$|WorkerDict\.__init__$|initialize_from_config$|:load_model$"
            r"|_prepare_deepspeed$|from_pretrained$|vllm/\S*(?:engine|entrypoints/llm|worker|executor)\S*\.py:__init__$",
        ),
        (
            "weight_sync",
            r"sharding_manager|ShardingManager|sync_weights$|sync_rollout_weights$|update_weights\w*$|load_weights$"
            r"|layered_summon|collect_lora_params$|summon_full_params$|merge_and_unload$|rollout_mode$"
            r"|_sync_fsdp\w*_to_vllm$|_move_model_to_vllm\w*$|get_peft_model_state_dict$|wake_up$|[:.]resume$"
            r"|resume_kv_cache$|create_and_map$",
        ),
    )
)
#: Frames that name a phase: the innermost one decides.
STRONG = _markers(
    (
        (
            "actor_update",
            r"update_policy$|update_actor|[:.]compute_loss$|_compute_loss$|\bbackward$|_engine_run_backward$"
            r"|run_backward$|optimizer_step$|clip_grad_norm\w*$|train_mini_batch$|train_batch$|ppo_update$"
            r"|train_actor$|update_critic$",
        ),
        ("reference_logprob", r"compute_ref_log_prob|compute_log_prob$|infer_batch$|compute_ref_logprob"),
        ("rollout", r"generate_sequences$|make_experience$|generate_rollouts?$|_run_agent_loop$"),
    )
)
#: Frames that name a phase only when no other frame does.
WEAK = _markers(
    (
        ("reference_logprob", r"_get_per_token_logps\w*$|logprobs?_from_logits\w*$|selective_log_softmax$"),
        (
            "rollout",
            r"_generate_and_score_completions$|\bgenerate$|:_generate$|_generate_single_turn$|_run_engine$"
            r"|execute_model$|sample_tokens$",
        ),
        ("actor_update", r"training_step$"),
        ("initializing", r"__init__$"),
    )
)
#: The operation inside a phase that the frames show, first found first (its fixes differ from the phase's).
OPERATIONS = _markers(
    (
        (
            "ZeRO-3 parameter gather",
            r"deepspeed/runtime/zero/partition(?:ed_param_coordinator|_parameters)\.py|fetch_sub_module$"
            r"|all_gather_coalesced$|_all_gather_params$|_allgather_params\w*$|pre_sub_module_forward_function$",
        ),
        ("vLLM wake-up", r"wake_up$|resume_kv_cache$|create_and_map$|[:.]resume$"),
        ("vLLM sampler warm-up", r"_dummy_sampler_run$|_dummy_pooler_run$"),
        (
            "vLLM start-up",
            r"profile_run$|determine_available_memory$|determine_num_available_blocks$|_dummy_run$"
            r"|_dummy_sampler_run$|capture_model$|_initialize_kv_caches$",
        ),
        ("LoRA merge", r"merge_and_unload$|collect_lora_params$|layered_summon|get_peft_model_state_dict$"),
        ("full-parameter gather", r"summon_full_params$|full_tensor$|_unshard\w*$"),
        ("backward pass", r"\bbackward$|_engine_run_backward$|run_backward$"),
        ("optimizer step", r"torch/optim/\w+\.py:|deepspeed/ops/adam|optimizer_step$"),
        (
            "log-probabilities over the vocabulary",
            r"logprobs?_from_logits|log_softmax$|entropy_from_logits|_get_per_token_logps|cross_entropy$",
        ),
        ("vLLM generation", r"execute_model$|_run_engine$|sample_tokens$|vllm/\S*:generate$"),
    )
)
#: What a message names by itself: its phase and operation.
MESSAGE_PLACES = {
    "vllm_free_memory": ("initializing", "vLLM start-up"),
    "vllm_kv_cache": ("initializing", "vLLM start-up"),
    "vllm_no_cache_blocks": ("initializing", "vLLM start-up"),
    "vllm_sampler_warmup": ("initializing", "vLLM sampler warm-up"),
    "vllm_cumem_oom": ("weight_sync", "vLLM wake-up"),
}
_FRAME = re.compile(r'File "([^"\n]{1,300})", line \d+, in ([\w<>.]+)|ray::([\w.]+)|\bname=([\w:.]+)')
#: Lines read before a message when no traceback header is found; lines after it read when none before name a
#: phase (NCCL and the CUDA runtime print their message before Python's traceback).
BEFORE, AFTER = 40, 15


def frames_near(lines: Lines, signal: Signal, after: int = 0) -> list[str]:
    """The frames of the traceback that ends at ``signal`` (``path:function``), Ray's task names (``ray::X``) and
    killed tasks (``name=X``), outermost first; ``after``: lines after the message read too (Ray's table)."""
    first = signal.line - BEFORE
    for back in range(signal.line - 1, max(signal.line - 400, 0), -1):
        if "Traceback (most recent call last)" in lines.line(back):
            first = back - 3
            break
    return _frames(lines.span(first, signal.line + after))


def frames_after(lines: Lines, signal: Signal) -> list[str]:
    """The frames in the :data:`AFTER` lines after ``signal`` (the traceback a message printed before it leads)."""
    return _frames(lines.span(signal.line + 1, signal.line + AFTER))


def _frames(text: str) -> list[str]:
    items = []
    for match in _FRAME.finditer(unwrapped(text)):
        path, function, task, name = match.groups()
        items.append(f"{path}:{function}" if function else f"ray::{task}" if task else f"name={name}")
    return items


def place(frames: Sequence[str]) -> tuple[str | None, str | None]:
    """The phase and the operation that ``frames`` (outermost first) show, each None when they show none."""
    return _phase(frames), next((op for op, p in OPERATIONS if any(p.search(f) for f in frames)), None)


def _phase(frames: Sequence[str]) -> str | None:
    for phase, pattern in CONTEXT:
        if any(pattern.search(f) for f in frames):
            return phase
    for markers in (STRONG, WEAK):
        for frame in reversed(frames):
            found = next((phase for phase, pattern in markers if pattern.search(frame)), None)
            if found:
                return found
    return None


def placed(lines: Lines, signal: Signal, after: int = 0) -> tuple[str | None, str | None]:
    """The phase and operation the frames around ``signal`` show: its traceback and Ray's task name, else the
    traceback right after it."""
    phase, operation = place(frames_near(lines, signal, after))
    if phase is None:
        later = place(frames_after(lines, signal))
        return later[0], operation or later[1]
    return phase, operation
