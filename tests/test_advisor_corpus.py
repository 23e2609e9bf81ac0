"""The advisor over launch files as users have them (tests/advisor_corpus/): VERL scripts and configs in the shapes
of VERL's examples (GRPO, LoRA, the tuning folder's per-size H100 scripts, PPO with GAE, Megatron, dynamic batch
sizes, Ulysses, SGLang, multi-node Slurm), open-r1-shaped TRL recipes with their accelerate configs (ZeRO-2,
ZeRO-3, DDP, FSDP, four machines) and TRL's documented shapes. Each is answered, with the facts a memory model needs
read from it, or refused with its one-line reason; no answer cuts a name or holds two flags that contradict.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rlvrambench_hf.advisor import advise, read_plans
from rlvrambench_hf.advisor.assess.context import load_context
from rlvrambench_hf.advisor.output.document import document
from rlvrambench_hf.errors import MESSAGE_LIMIT, RLVRAMBenchError

CORPUS = Path(__file__).parent / "advisor_corpus"


@dataclass(frozen=True)
class Case:
    """One launch file: how it is launched, and either the facts its plan must carry or the refusal's pattern."""

    path: str
    accelerate: str | None = None
    facts: dict = field(default_factory=dict)
    refused: str | None = None
    settings: dict | None = None


CASES = (
    Case("verl/grpo_gsm8k_qwen2_5_3b_lora.sh", facts={"gpu_count": 2, "lora_rank": 64, "layered_summon": True,
         "load_format": "safetensors", "use_remove_padding": True, "gradient_checkpointing": True}),
    Case("verl/grpo_full_finetune_qwen2_5_7b.sh", facts={"gpu_count": 8, "lora_rank": 0, "adaptation": "none",
         "parameter_offload": True, "rollout_tp_size": 2}),
    Case("verl/tuning_0.5b_grpo_lora_h100.sh", facts={"model_id": "Qwen/Qwen2.5-0.5B-Instruct",
         "actor_micro_batch": 128, "train_batch_size": 128, "max_num_batched_tokens": 1536}),
    Case("verl/tuning_1.5b_grpo_lora_h100.sh", facts={"model_id": "Qwen/Qwen2.5-1.5B-Instruct", "gpu_count": 1}),
    Case("verl/tuning_3b_grpo_lora_h100.sh", facts={"actor_micro_batch": 62, "rollout_logprob_micro_batch": 62,
         "ref_logprob_micro_batch": 62, "lora_rank": 32}),
    Case("verl/tuning_7b_grpo_lora_h100.sh", facts={"model_id": "Qwen/Qwen2.5-7B-Instruct", "train_batch_size": 16}),
    Case("verl/tuning_14b_grpo_lora_h100.sh", facts={"gpu_count": 2, "actor_micro_batch": 8, "rollout_tp_size": 2}),
    Case("verl/tuning_32b_grpo_lora_h100.sh", facts={"gpu_count": 4, "actor_micro_batch": 4}),
    Case("verl/tuning_72b_grpo_lora_h100.sh", facts={"gpu_count": 8, "actor_micro_batch": 2, "rollout_tp_size": 8}),
    Case("verl/ppo_gae_critic_qwen2_5_3b.sh", facts={"advantage_estimator": "gae", "lora_rank": 0}),
    Case("verl/grpo_megatron_qwen2_5_7b.sh", facts={"strategy": "megatron", "gpu_count": 8,
         "parameter_offload": False}),
    Case("verl/grpo_dynamic_bsz_qwen2_5_3b.sh", facts={"use_dynamic_bsz": True, "max_token_len_per_gpu": 6144,
         "actor_micro_batch": 2, "rollout_logprob_micro_batch": 4}),
    Case("verl/grpo_multinode_slurm.sbatch.sh", facts={"nnodes": 2, "gpu_count": 16}),
    Case("verl/grpo_multinode_slurm_env.sbatch.sh", refused=r"line 5: trainer\.nnodes uses \$SLURM_NNODES, which is "
         r"not set in the script or environment"),
    Case("verl/grpo_sglang_qwen2_5_3b.sh", facts={"rollout_engine": "sglang"}),
    Case("verl/grpo_ulysses_long_context.sh", facts={"ulysses_sp_size": 2, "enforce_eager": True,
         "free_cache_engine": True}),
    Case("verl/grpo_lora_adapter_path.sh", facts={"adaptation": "LoRA", "ref_logprob_micro_batch": 16}),
    Case("verl/grpo_mini_batch_above_train_batch.sh", refused=r"VERL refuses this config before running: "
         r"data\.train_batch_size = 16 is below actor_rollout_ref\.actor\.ppo_mini_batch_size = 64"),
    Case("verl/grpo_both_micro_batch_keys.sh", refused=r"VERL refuses this config before running: both "
         r"actor_rollout_ref\.actor\.ppo_micro_batch_size \(deprecated\) and .*ppo_micro_batch_size_per_gpu are set"),
    Case("verl/grpo_sweep_without_multirun.sh", refused=r"actor_rollout_ref\.rollout\.n='4,8' is a Hydra sweep"),
    Case("verl/grpo_megatron_lora_arrays.sh", facts={"strategy": "megatron", "lora_rank": 128, "adaptation": "LoRA",
         "gpu_count": 4, "actor_micro_batch": 4, "rollout_logprob_micro_batch": 8, "ref_logprob_micro_batch": 8,
         "parameter_offload": True, "max_prompt_length": 1024, "vllm_gpu_memory_utilization": 0.5}),
    Case("verl/grpo_lora_without_kl.sh", facts={"ref_logprob_micro_batch": 8, "rollout_logprob_micro_batch": 8,
         "lora_rank": 64, "gpu_count": 2}),
    Case("verl/sft_qwen2_5_0_5b_peft.sh", refused=r"line 6: runs verl\.trainer\.fsdp_sft_trainer, not VERL's RL "
         r"trainer \(verl\.trainer\.main_ppo\)"),
    Case("verl/grpo_dumped_config.yaml", facts={"model_id": "microsoft/Phi-4-mini-instruct", "max_model_len": 2048}),
    Case("trl/openr1_qwen2_5_1_5b_grpo_zero2.yaml", "zero2.yaml", facts={"gpu_count": 8, "strategy": "deepspeed",
         "zero_stage": 2, "lora_rank": 0, "actor_param_dtype": "bf16", "train_batch_size": 32}),
    Case("trl/openr1_qwen2_5_math_7b_grpo_zero3_server.yaml", "zero3.yaml", facts={"gpu_count": 7,
         "vllm_mode": "server", "zero_stage": 3, "optimizer_offload": True, "parameter_offload": False}),
    Case("trl/grpo_peft_lora_ddp.yaml", "ddp.yaml", facts={"strategy": "ddp", "lora_rank": 64, "adaptation": "LoRA",
         "free_cache_engine": True}),
    Case("trl/grpo_fsdp2_qwen2_5_3b.yaml", "fsdp.yaml", facts={"strategy": "fsdp2", "gpu_count": 4}),
    Case("trl/grpo_without_vllm.yaml", "ddp.yaml", facts={"rollout_engine": "hf"}),
    Case("trl/grpo_qlora_4bit.yaml", facts={"base_quant_bits": 4, "lora_rank": 16, "strategy": "ddp"},
         settings={"gpu_count": 1}),
    Case("trl/grpo_save_ratio.yaml", "ddp.yaml", facts={"save_freq": 20, "total_training_steps": 400}),
    Case("trl/grpo_multinode_zero3.yaml", "zero3_four_nodes.yaml", facts={"gpu_count": 32, "nnodes": 4,
         "rollout_tp_size": 2}),
    Case("trl/train_grpo_quickstart_lora.py", "ddp.yaml", settings={"max_prompt_length": 256}, facts={
         "model_id": "Qwen/Qwen2.5-3B-Instruct", "lora_rank": 64, "adaptation": "LoRA", "actor_micro_batch": 4,
         "rollout_n": 4, "max_response_length": 768, "vllm_gpu_memory_utilization": 0.4, "strategy": "ddp"}),
    Case("trl/openr1_sft_distill_packing.yaml", "zero3.yaml", refused=r"an SFTConfig \(max_length, packing\), not a "
         r"GRPOConfig: the advisor answers GRPO runs"),
    Case("trl/trl_docs_quickstart.yaml", "ddp.yaml", refused=r"missing TRL setting\(s\) max_prompt_length: not set "
         r"\(this TRL does not cap prompts"),
)  # fmt: skip

#: Pairs of flag fragments that cannot both hold for one plan.
CONTRADICTIONS = (
    (r"full fine-tuning", r"LoRA rank [1-9]|LoRA rank not known|LoRA target modules"),
    (r"use_vllm False", r"vllm_mode|vllm_max_model_length"),
)
#: A dotted VERL key in a line, whole (cut names end in a letter run followed by an ellipsis or the line's end).
DOTTED = re.compile(r"\b(actor_rollout_ref|trainer|data|algorithm|critic)\.[A-Za-z_.]*")


@pytest.fixture(scope="module")
def verl_defaults(packaged_verl: Path) -> Path:
    """An importable ``verl`` holding only VERL 0.9.1's packaged trainer configs (never imported itself)."""
    return packaged_verl


def _read(case: Case, snapshot: Path, corpus: Path = CORPUS):
    kind = "trl" if case.path.startswith("trl/") else "verl"
    accelerate = corpus / "accelerate" / case.accelerate if case.accelerate else None
    return read_plans(corpus / case.path, kind=kind, workload="gsm8k", source=snapshot, accelerate_config=accelerate,
                      settings=case.settings)  # fmt: skip


def test_the_corpus_holds_every_shape() -> None:
    files = {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*") if p.is_file()}
    launch = {f for f in files if not f.startswith("accelerate/")}
    assert launch == {c.path for c in CASES} and len(launch) >= 25
    assert {c.accelerate for c in CASES if c.accelerate} == {f.split("/")[1] for f in files if "accelerate/" in f}


def test_every_launch_file_is_answered_or_refused_with_its_reason(
    snapshot: Path, verl_defaults: Path, monkeypatch
) -> None:
    from huggingface_hub import constants

    monkeypatch.syspath_prepend(str(verl_defaults))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # offline: metadata from the release or not at all
    context = load_context(snapshot)
    for case in CASES:
        if case.refused:
            with pytest.raises(RLVRAMBenchError) as caught:
                _read(case, snapshot)
            message = str(caught.value)
            assert re.search(case.refused, message), (case.path, message)
            assert len(message) <= MESSAGE_LIMIT and "\n" not in message, case.path
            _whole_names(message, case.path)
            continue
        plans = _read(case, snapshot)
        got = plans.settings(0)
        assert {k: got.get(k) for k in case.facts} == case.facts, case.path
        for setting in ("model_id", "gpu_count", "actor_micro_batch"):
            assert plans.source(setting, 0), (case.path, setting)  # every value says where it came from
        answer = document(advise(plans, snapshot, context=context))["configurations"][0]
        verdict = answer["verdict"]
        assert verdict["sentence"] and (verdict["basis"] or verdict["state"] is None), case.path  # or why none
        flags = [*plans.row_flags(0), *(f if isinstance(f, str) else f.get("text", "") for f in answer.get(
            "scope_flags", []))]  # fmt: skip
        _consistent(flags, case.path)
        for line in flags:
            _whole_names(line, case.path)


def _consistent(flags: list[str], where: str) -> None:
    for a, b in CONTRADICTIONS:
        assert not (any(re.search(a, f) for f in flags) and any(re.search(b, f) for f in flags)), (where, a, b, flags)


def _whole_names(line: str, where: str) -> None:
    """Every name a line holds is whole: nothing of it was cut (the error classes cut a long line with "…"), but
    the folders of a long path, which give way first ("…/verl/run.sh")."""
    assert "…" not in re.sub(r"…/[^\s/]+/[^\s/]+", "", line), (where, line)
    for match in DOTTED.finditer(line):
        assert not match.group(0).endswith("."), (where, line)


def test_a_refusal_from_a_deep_folder_keeps_its_reason_and_names_whole(
    snapshot: Path, verl_defaults: Path, monkeypatch, tmp_path: Path
) -> None:
    """Where a user keeps launch files changes no refusal: from a folder 200 characters deep, each keeps its reason
    and its names whole and still names the file (its last folder and name)."""
    from huggingface_hub import constants

    monkeypatch.syspath_prepend(str(verl_defaults))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    deep = tmp_path.joinpath(*["a_folder_users_keep_their_launch_files_in"] * 5)
    shutil.copytree(CORPUS, deep)
    refused = [c for c in CASES if c.refused]
    assert len(refused) >= 5
    for case in refused:
        with pytest.raises(RLVRAMBenchError) as caught:
            _read(case, snapshot, deep)
        message = str(caught.value)
        assert re.search(case.refused, message) and len(message) <= MESSAGE_LIMIT, (case.path, message)
        assert f"/{case.path}" in message, (case.path, message)
        _whole_names(message, case.path)


def test_a_cut_name_and_contradicting_flags_are_caught() -> None:
    """The two checks of the corpus test fail where they should."""
    with pytest.raises(AssertionError):
        _whole_names("missing VERL setting(s) actor_rollout_ref.actor.ppo_micro_batch_size_pe … ", "x")
    with pytest.raises(AssertionError):
        _whole_names("…/verl/run.sh line 3: actor_rollout_ref.actor.ppo_micro_batch_size_pe … ", "x")
    with pytest.raises(AssertionError):
        _consistent(["use_peft False: full fine-tuning", "LoRA rank 16 (the measurements use rank-64)"], "x")


def test_what_a_script_says_beyond_the_settings_passed_on_is_named(
    snapshot: Path, verl_defaults: Path, monkeypatch
) -> None:
    monkeypatch.syspath_prepend(str(verl_defaults))
    gae = next(c for c in CASES if c.path == "verl/ppo_gae_critic_qwen2_5_3b.sh")
    (flag,) = [f for f in _read(gae, snapshot).row_flags(0) if "read but not passed on" in f]
    assert "critic.model.enable_gradient_checkpointing" in flag and flag.endswith(" more")
    megatron = next(c for c in CASES if c.path == "verl/grpo_megatron_qwen2_5_7b.sh")
    (flag,) = [f for f in _read(megatron, snapshot).row_flags(0) if "read but not passed on" in f]
    assert "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size" in flag
    assert "megatron.param_offload" not in flag  # read: it is the actor's parameter offload


def test_values_from_bash_arrays_name_their_line_and_a_run_without_kl_says_it_has_no_reference(
    snapshot: Path, verl_defaults: Path, monkeypatch
) -> None:
    from rlvrambench_hf.advisor.plan.mapping import NO_REFERENCE_FLAG

    monkeypatch.syspath_prepend(str(verl_defaults))
    arrays = _read(next(c for c in CASES if c.path == "verl/grpo_megatron_lora_arrays.sh"), snapshot)
    assert arrays.source("lora_rank", 0).endswith("grpo_megatron_lora_arrays.sh line 17")
    assert arrays.source("actor_micro_batch", 0).endswith("grpo_megatron_lora_arrays.sh line 23")
    assert NO_REFERENCE_FLAG not in arrays.row_flags(0)
    without = _read(next(c for c in CASES if c.path == "verl/grpo_lora_without_kl.sh"), snapshot)
    assert NO_REFERENCE_FLAG in without.row_flags(0)


def test_verl_per_size_h100_scripts_fit_on_an_h100_and_not_on_the_release_a100(
    snapshot: Path, verl_defaults: Path, monkeypatch
) -> None:
    """VERL's tuning folder gives one GRPO+LoRA script per model size, each tuned to run on H100s: on an H100 every
    one is answered within the margin, by the model (no record measured it); on the release's 40 GB A100 the same
    scripts are refused, by a floor or by the model: more device memory never gives a worse verdict."""
    from huggingface_hub import constants

    from rlvrambench_hf.advisor.plan.hardware import Hardware

    monkeypatch.syspath_prepend(str(verl_defaults))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # sizes from the release or the package's config facts
    context = load_context(snapshot)
    tuning = [c for c in CASES if c.path.startswith("verl/tuning_")]
    assert len(tuning) == 7
    for case in tuning:
        plans = _read(case, snapshot)
        on_h100 = document(advise(plans, snapshot, context=context, hardware=Hardware.of(None, None, gpu="H100")))
        (h100,) = on_h100["configurations"]
        assert (h100["verdict"]["state"], h100["verdict"]["basis"]) == ("within_margin", "predicted"), case.path
        assert h100["device"]["name"] == "H100 80GB" and not h100["device"]["measured"]
        (a100,) = document(advise(plans, snapshot, context=context))["configurations"]
        assert a100["verdict"]["state"] == "memory_failure", case.path
