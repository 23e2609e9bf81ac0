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
    arguments: tuple[str, ...] | None = None  # the script's own arguments (advise ... -- ARGS)
    verl_version: str | None = None


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
         r"\(this TRL does not cap prompts: --setting max_prompt_length=N"),
    # round three (issue 36): argument loops, older forks, OmegaConf's values, EasyR1, fork keys, TRL's data flow
    Case("verl/args_while_case_qwen2_5_3b.sh", facts={"model_id": "Qwen/Qwen2.5-3B-Instruct", "gpu_count": 2,
         "rollout_n": 5, "vllm_gpu_memory_utilization": 0.5}),
    Case("verl/args_while_case_qwen2_5_3b.sh", arguments=("--model", "Qwen/Qwen2.5-7B-Instruct", "--gpus", "4", "-n",
         "8", "--util=0.6", "trainer.total_training_steps=10"), facts={"model_id": "Qwen/Qwen2.5-7B-Instruct",
         "gpu_count": 4, "rollout_n": 8, "vllm_gpu_memory_utilization": 0.6, "total_training_steps": 10}),
    Case("verl/args_while_case_qwen2_5_3b.sh", arguments=("--epochs", "3"), refused=r"line 14: the script \(with the "
         r"arguments given\) exits here, before any VERL launch"),
    Case("verl/args_getopts_positional.sh", facts={"gpu_count": 2, "vllm_gpu_memory_utilization": 0.4,
         "model_id": "Qwen/Qwen2.5-3B-Instruct", "rollout_engine": "vllm", "total_training_steps": 50}),
    Case("verl/args_getopts_positional.sh", arguments=("-g", "4", "-u", "0.6", "Qwen/Qwen2.5-7B-Instruct", "sglang"),
         facts={"gpu_count": 4, "vllm_gpu_memory_utilization": 0.6, "model_id": "Qwen/Qwen2.5-7B-Instruct",
                "rollout_engine": "sglang"}),
    Case("verl/fork_older_verl_tinyzero_style.sh", verl_version="0.2.0", facts={"train_batch_size": 64,
         "actor_micro_batch": 4, "rollout_tp_size": 2, "max_model_len": 1280, "rollout_engine": "vllm"}),
    Case("verl/fork_older_verl_tinyzero_style.sh", verl_version="0.4.1", refused=r"VERL refuses this config before "
         r"running: data\.train_batch_size = 64 is below actor_rollout_ref\.actor\.ppo_mini_batch_size = 128"),
    Case("verl/omegaconf_values_and_expr.sh", facts={"use_remove_padding": True, "gradient_checkpointing": True,
         "train_batch_size": 64, "max_response_length": 1024, "actor_micro_batch": 8, "max_model_len": 1536,
         "vllm_gpu_memory_utilization": 0.5, "free_cache_engine": True, "ref_logprob_micro_batch": 16}),
    Case("verl/fork_search_r1_n_agent.sh", facts={"rollout_n": 5, "actor_micro_batch": 4, "parameter_offload": True,
         "rollout_logprob_micro_batch": 8}),
    Case("verl/easyr1_qwen2_5_3b_math_grpo_lora.sh", facts={"model_id": "Qwen/Qwen2.5-3B-Instruct", "gpu_count": 2,
         "lora_rank": 64, "adaptation": "LoRA", "rollout_n": 5, "train_batch_size": 128, "actor_micro_batch": 2,
         "rollout_logprob_micro_batch": 8, "ref_logprob_micro_batch": 8, "rollout_tp_size": 1, "max_model_len": 2048,
         "vllm_gpu_memory_utilization": 0.6, "parameter_offload": True, "free_cache_engine": True}),
    Case("verl/easyr1_unknown_key.sh", refused=r"line 6: EasyR1's config has no key worker\.rollout\.max_num_seqs "
         r"\(EasyR1 refuses it before running\)"),
    Case("trl/train_grpo_dataflow.py", settings={"gpu_count": 2, "max_prompt_length": 256}, facts={
         "model_id": "Qwen/Qwen2.5-3B-Instruct", "lora_rank": 32, "adaptation": "LoRA", "rollout_n": 8,
         "max_response_length": 1024, "vllm_gpu_memory_utilization": 0.45, "actor_micro_batch": 8}),
    Case("trl/train_grpo_dataflow.py", refused=r"missing TRL setting\(s\) num_processes(, max_prompt_length| and 1 "
         r"more): not set \(the GPU count: --setting gpu_count=N, or --accelerate-config FILE"),
    Case("trl/launch_openr1_accelerate.sh", facts={"model_id": "Qwen/Qwen2.5-1.5B-Instruct", "gpu_count": 7,
         "nnodes": 1, "strategy": "deepspeed", "zero_stage": 2, "vllm_mode": "server", "rollout_n": 16,
         "train_batch_size": 16 * 7 * 4 // 16}),
)  # fmt: skip
#: Files the launch files read (a config they name), not launch files themselves.
SUPPORT = ("verl/easyr1/", "trl/recipes/")

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
                      settings=case.settings, arguments=case.arguments, verl_version=case.verl_version)  # fmt: skip


def test_the_corpus_holds_every_shape() -> None:
    files = {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*") if p.is_file()}
    launch = {f for f in files if not f.startswith(("accelerate/", *SUPPORT))}
    assert launch == {c.path for c in CASES} and len(launch) >= 25
    assert {c.accelerate for c in CASES if c.accelerate} | {"zero2.yaml"} == {
        f.split("/")[1] for f in files if f.startswith("accelerate/")}  # fmt: skip


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
    assert "critic.model.enable_gradient_checkpointing" in flag  # the critic's offloads and micro-batch are read
    megatron = next(c for c in CASES if c.path == "verl/grpo_megatron_qwen2_5_7b.sh")
    (flag,) = [f for f in _read(megatron, snapshot).row_flags(0) if "read but not passed on" in f]
    # read: the actor's parallel sizes (Megatron's terms) and its parameter offload; the reference's layout is not
    assert "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size" not in flag
    assert "actor_rollout_ref.ref.megatron.tensor_model_parallel_size" in flag
    assert "megatron.param_offload" not in flag


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


# --- round three (issue 36): refuse only what the answer uses; VERL's own defaults without VERL (issue 34) ---


def test_no_refusal_is_for_a_value_that_no_floor_phase_or_scope_uses(
    snapshot: Path, verl_defaults: Path, monkeypatch, tmp_path: Path
) -> None:
    """Each refusal of the corpus that names a value the script computes names a key the answer uses; and every
    answered VERL script stays answered when each key no floor, phase or scope reads is computed when it runs
    (``$(hostname)``), with a ``read:`` line saying it was not read."""
    from rlvrambench_hf.advisor.plan.mapping import UNUSED_SETTINGS, VERL_MAPPING
    from rlvrambench_hf.advisor.read.verl.compose import used_keys

    monkeypatch.syspath_prepend(str(verl_defaults))
    used = used_keys({})
    for case in CASES:
        found = re.search(r": (\S+) uses ", case.refused or "")
        assert found is None or found.group(1).replace("\\", "") in used, case.path
    unused = [k for m in VERL_MAPPING if m.setting in UNUSED_SETTINGS for k in m.keys]
    assert unused and not set(unused) & used
    answered = [c for c in CASES if c.path.endswith(".sh") and c.path.startswith("verl/") and not c.refused
                and "easyr1" not in c.path]  # fmt: skip
    assert len(answered) >= 20
    for case in answered:
        text = (CORPUS / case.path).read_text()
        computed = " ".join(f"{key}=$(hostname)" for key in unused)
        edited = re.sub(r"(verl\.trainer\.main_ppo)(?=\s)", rf"\1 {computed}", text, count=1)
        assert edited != text, case.path
        copy = tmp_path / case.path
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(edited)
        for extra in (CORPUS / case.path).parent.glob("*.yaml"):  # configs a launch names beside it
            (copy.parent / extra.name).write_text(extra.read_text())
        plans = _read(case, snapshot, tmp_path)
        notes = plans.row_notes(0)
        assert all(any(n.startswith(f"not read: {key} uses $(") for n in notes) for key in unused), notes


def test_without_verl_an_unset_key_reads_as_verl_reads_it(snapshot: Path) -> None:
    """VERL not installed here: its own defaults, shipped with the package, say how an unset key reads. VERL's 7B
    LoRA tuning script for one H100 leaves free_cache_engine unset: on, as VERL has it. Without max_model_len, VERL
    0.7 and later give vLLM the model's own context (32,768 for Qwen2.5-7B), which one H100 at utilization 0.2
    cannot hold beside the weights: vLLM refuses to start, and so does the answer (the KV-cache floor)."""
    from rlvrambench_hf.advisor.plan.hardware import Hardware
    from rlvrambench_hf.advisor.read.verl.config import verl_folders

    assert verl_folders() == []  # this test runs without VERL
    tuning = next(c for c in CASES if c.path == "verl/tuning_7b_grpo_lora_h100.sh")
    plans = _read(tuning, snapshot)
    assert plans.settings(0)["free_cache_engine"] is True
    assert plans.source("free_cache_engine", 0) == (
        "VERL 0.9.1's default (verl/trainer/config/_generated_ppo_trainer.yaml, shipped with this package)"
    )
    assert any(n.startswith("for VERL 0.9.1, the newest release this package knows") for n in plans.row_notes(0))
    script = CORPUS / tuning.path
    text = script.read_text().replace("    actor_rollout_ref.rollout.max_model_len=1536 \\\n", "")
    assert text != script.read_text()
    unset = read_plans(text.replace("$MODEL_PATH", "Qwen/Qwen2.5-7B-Instruct"), kind="verl", workload="gsm8k",
                       source=snapshot)  # fmt: skip
    assert unset.settings(0)["max_model_len"] == 32768
    (answer,) = document(advise(unset, snapshot, hardware=Hardware.of(None, None, gpu="H100")))["configurations"]
    assert (answer["verdict"]["state"], answer["verdict"]["basis"]) == ("memory_failure", "floor")
    (kv,) = [f for f in answer["floors"] if f["check"] == "kv_cache_one_sequence"]
    assert kv["holds"] is False and "32,768 tokens" in kv["arithmetic"]
    older = read_plans(text, kind="verl", workload="gsm8k", source=snapshot, verl_version="0.6.1")
    assert older.settings(0)["max_model_len"] == 512 + 1024  # before 0.7: prompt + response


def test_the_shipped_defaults_are_the_wheels(verl_trainer_configs: Path) -> None:
    """The defaults this package ships for VERL 0.9 are those of the 0.9.1 wheel's composed trainer config."""
    import yaml

    from rlvrambench_hf.advisor.read.verl.versions import DEFAULTS, NEWEST, Version, default_tree

    generated = yaml.safe_load((verl_trainer_configs / "_generated_ppo_trainer.yaml").read_text())
    shipped, source = default_tree(Version(NEWEST, "given", "0.9.1"))
    assert source.startswith("verl/trainer/config/_generated_ppo_trainer.yaml")
    for key in DEFAULTS:
        wheel, ours = generated, shipped
        for part in key.split("."):
            wheel, ours = wheel[part], ours[part]
        assert ours == wheel, key


def test_an_older_forks_script_is_a_flag_when_the_version_is_not_known(snapshot: Path) -> None:
    """VERL not installed and no --verl-version: the check VERL 0.3 added (train_batch_size below the PPO
    mini-batch) is a flag, not a refusal; VERL 0.2 ran such a run."""
    fork = Case("verl/fork_older_verl_tinyzero_style.sh")
    flags = _read(fork, snapshot).row_flags(0)
    assert any(f.startswith("data.train_batch_size = 64 is below actor_rollout_ref.actor.ppo_mini_batch_size = "
                            "128: VERL 0.3.0.post1 and later refuse this") for f in flags)  # fmt: skip


def test_easyr1_is_read_by_its_schema_and_named_by_its_keys(snapshot: Path) -> None:
    easy = _read(next(c for c in CASES if c.path.startswith("verl/easyr1_qwen")), snapshot)
    assert easy.as_written("rollout_n", 0).startswith("worker.rollout.n (")
    assert easy.as_written("actor_micro_batch", 0).startswith("worker.actor.micro_batch_size_per_device_for_update")
    assert easy.source("lora_rank", 0).endswith("line 11 (worker.actor.model.lora.rank)")
    assert easy.source("max_prompt_length", 0).endswith("easyr1/qwen2_5_7b_math.yaml (data.max_prompt_length)")
    notes = easy.row_notes(0)
    assert notes[0].startswith("for EasyR1") and any("worker.actor.optim.lr" in n for n in notes)
