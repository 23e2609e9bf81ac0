"""The launch-script reader and VERL config trees, as pure functions: shell quoting, continuations, variables,
Hydra's prefixes and values, OmegaConf interpolations and a config mapping given directly."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from rlvrambench_hf.advisor import read_plans
from rlvrambench_hf.advisor.plan.mapping import NO_REFERENCE_FLAG
from rlvrambench_hf.advisor.read.verl.config import Config, hydra_value, lookup, merged
from rlvrambench_hf.advisor.read.verl.launch import read_launches, unresolved
from rlvrambench_hf.errors import InputError


def overrides(text: str, **environ: str) -> dict[str, str | None]:
    (launch,) = read_launches(text, "run.sh", environ)
    return {f"{prefix}{key}": value for prefix, key, value in launch.overrides}


def test_continuations_quotes_and_comments() -> None:
    text = (
        "# a comment with python3 -m verl.trainer.main_ppo in it\n"
        "python3 -m verl.trainer.main_ppo \\\n"
        "  data.a='x y' \\\n"
        '  data.b="1" trainer.c=run#1 \\\n'
        "  trainer.d=2  # the end\n"
    )
    assert overrides(text) == {"data.a": "x y", "data.b": "1", "trainer.c": "run#1", "trainer.d": "2"}


def test_variables_from_the_script_then_the_environment() -> None:
    text = (
        "MODEL=/m/Qwen\nexport N=4\nDEFAULTED=${UNSET:-7}\n"
        "python3 -m verl.trainer.main_ppo a.model=$MODEL a.n=${N} a.d=$DEFAULTED a.e=$FROM_ENV a.q='$MODEL' "
        'a.dq="$MODEL x"\n'
    )
    got = overrides(text, FROM_ENV="env")
    assert got == {"a.model": "/m/Qwen", "a.n": "4", "a.d": "7", "a.e": "env", "a.q": "$MODEL", "a.dq": "/m/Qwen x"}


def test_unquoted_expansions_split_into_words_as_the_shell_does() -> None:
    text = 'EXTRA="a.x=1 a.y=2"\npython3 -m verl.trainer.main_ppo $EXTRA a.z=3\n'
    assert overrides(text) == {"a.x": "1", "a.y": "2", "a.z": "3"}


def test_parameter_expansions_as_the_shell_has_them_for_a_script_run_without_arguments() -> None:
    """Positional parameters are unset (VERL's examples write ENGINE=${1:-vllm}); defaults nest; ``:+`` swaps."""
    text = (
        "ENGINE=${1:-vllm}\nGPUS=${GPUS:-${NGPU:-2}}\nLORA=${WANT_LORA:+64}\n"
        "python3 -m verl.trainer.main_ppo a.engine=$ENGINE a.gpus=$GPUS a.rank=${LORA:-0} a.home=${HOME:+set} "
        "a.brace=${UNSET:-{x}\n"
    )
    got = overrides(text, HOME="/h")
    assert got == {"a.engine": "vllm", "a.gpus": "2", "a.rank": "0", "a.home": "set", "a.brace": "{x"}
    assert overrides(text, HOME="/h", NGPU="8", WANT_LORA="yes")["a.gpus"] == "8"
    assert overrides(text, HOME="/h", NGPU="8", WANT_LORA="yes")["a.rank"] == "64"


def test_defaults_nested_too_deeply_are_one_line() -> None:
    deep = "GPUS=" + "${GPUS:-" * 5000 + "2" + "}" * 5000 + "\npython3 -m verl.trainer.main_ppo a.n=$GPUS\n"
    with pytest.raises(InputError, match=r"^run.sh line 1: quotes and expansions nested more than 32 deep$"):
        read_launches(deep, "run.sh", {})


def test_what_the_script_computes_is_marked_not_run() -> None:
    got = overrides("python3 -m verl.trainer.main_ppo a.b=$(nproc) a.c=`date` a.d=$1 a.e=${NOPE}\n")
    assert [unresolved(v or "") for v in got.values()] == ["$(nproc)", "`...`", "$1", "$NOPE"]


def test_hydra_prefixes_config_options_and_launchers() -> None:
    text = (
        "ray job submit --address x -- python3 -m verl.trainer.main_ppo --config-path=cfg --config-name my_run "
        "+a.new=1 ++a.force=2 ~a.gone\n"
        "torchrun --nproc_per_node 2 /src/verl/trainer/main_ppo.py b.c=3 && echo done\n"
    )
    first, second = read_launches(text, "run.sh", {})
    assert (first.config_path, first.config_name, first.line) == ("cfg", "my_run", 1)
    assert first.overrides == [("+", "a.new", "1"), ("++", "a.force", "2"), ("~", "a.gone", None)]
    assert second.overrides == [("", "b.c", "3")] and second.line == 2


def test_a_pasted_command_line_without_the_launcher_is_one_launch() -> None:
    assert overrides("data.train_batch_size=32 trainer.nnodes=1 NOT_AN_OVERRIDE=1") == {
        "data.train_batch_size": "32",
        "trainer.nnodes": "1",
    }


def test_bash_arrays_hold_overrides_as_bash_expands_them() -> None:
    """VERL's newer examples keep their overrides in arrays: "${A[@]}" is one word per element (spaces kept inside
    an element), ${A[*]} one word joined, ${A[i]} and ${#A[@]} as bash has them, += appends, comments inside."""
    text = (
        "ACTOR=(\n  actor.a=1   # why\n  # actor.skipped=9\n  'actor.b=x y'\n)\n"
        "ACTOR+=(actor.c=3); declare -a MORE=(m.x=1 m.y=2)\n"
        'python3 -m verl.trainer.main_ppo "${ACTOR[@]}" ${MORE[@]} joined.all="${MORE[*]}" one.second=${MORE[1]} '
        'count.n=${#ACTOR[@]} first.plain=$ACTOR none.empty=${UNSET[@]}x "$@"\n'
    )
    assert overrides(text) == {
        "actor.a": "1", "actor.b": "x y", "actor.c": "3", "m.x": "1", "m.y": "2", "joined.all": "m.x=1 m.y=2",
        "one.second": "m.y=2", "count.n": "3", "first.plain": "actor.a=1", "none.empty": "x",
    }  # fmt: skip
    with pytest.raises(InputError, match=r"^run.sh line 2: an array's parenthesis opened here is never closed$"):
        read_launches('echo\nARGS=(\n a.b=1\npython3 -m verl.trainer.main_ppo "${ARGS[@]}"\n', "run.sh", {})


def test_a_script_of_another_verl_program_is_refused_by_name() -> None:
    """Supervised fine-tuning, generation and evaluation are not the RL runs the advisor answers; a script that also
    launches the RL trainer is read for that launch."""
    sft = "torchrun --nproc_per_node=4 -m verl.trainer.fsdp_sft_trainer data.micro_batch_size_per_gpu=4\n"
    with pytest.raises(InputError, match=r"^run.sh line 1: runs verl.trainer.fsdp_sft_trainer, not VERL's RL trainer"):
        read_launches(sft, "run.sh", {})
    with pytest.raises(InputError, match=r"line 2: runs verl/trainer/main_generation.py, not"):
        read_launches("set -x\npython3 verl/trainer/main_generation.py data.n_samples=4\n", "run.sh", {})
    both = sft + "python3 -m verl.trainer.main_ppo data.train_batch_size=8\n"
    assert [launch.line for launch in read_launches(both, "run.sh", {})] == [2]


def test_an_unclosed_quote_is_one_line() -> None:
    with pytest.raises(InputError, match=r"run.sh line 2: a quote opened here is never closed"):
        read_launches("echo\npython3 -m verl.trainer.main_ppo a.b='x\n", "run.sh", {})


@pytest.mark.parametrize(
    ("text", "value"),
    [("null", None), ("True", True), ("false", False), ("8", 8), ("1_000", 1000), ("1e-3", 0.001), ("0.6", 0.6),
     ("inf", float("inf")), ("'8'", "8"), ("[q_proj,v_proj]", ["q_proj", "v_proj"]), ("all-linear", "all-linear")],
)  # fmt: skip
def test_hydra_values(text: str, value: object) -> None:
    assert hydra_value(text) == value


def test_overrides_merge_and_interpolations_resolve(monkeypatch) -> None:
    base = {"data": {"max_prompt_length": 512, "max_response_length": 256}, "x": {"gone": 1}}
    tree = merged(base, [("", "data.max_prompt_length", "1024"), ("~", "x.gone", None), ("+", "y.z", "${data.max_"
                         "prompt_length}"), ("", "y.env", "${oc.env:MY_N,3}"), ("", "y.sel", "${oc.select:no.such,5}"),
                         ("", "y.rel", "${.z}")], "run.sh")  # fmt: skip
    assert base["data"]["max_prompt_length"] == 512 and tree["x"] == {}
    config = Config(tree, "run.sh", None)
    assert lookup(tree, "y.z", "run.sh") == 1024 and lookup(tree, "y.rel", "run.sh") == 1024
    assert lookup(tree, "y.env", "run.sh") == 3 and lookup(tree, "y.sel", "run.sh") == 5
    monkeypatch.setenv("MY_N", "9")
    assert lookup(config.tree, "y.env", "run.sh") == 9
    tree["y"]["bad"] = "${no.such.key}"
    with pytest.raises(InputError, match=r"run.sh: y.bad: '\$\{no.such.key\}' refers to no.such.key"):
        lookup(tree, "y.bad", "run.sh")


class DictConfigLike(Mapping):
    """An OmegaConf-like read-only mapping (the Python API takes any Mapping)."""

    def __init__(self, data: dict) -> None:
        self._data = data

    def __getitem__(self, key: str) -> object:
        value = self._data[key]
        return DictConfigLike(value) if isinstance(value, dict) else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


VERL_TREE = {
    "algorithm": {"adv_estimator": "grpo"},
    "data": {"max_prompt_length": 512, "max_response_length": 512, "train_batch_size": 64},
    "actor_rollout_ref": {
        "hybrid_engine": True,
        "model": {"path": "microsoft/Phi-4-mini-instruct", "lora_rank": 64, "target_modules": "all-linear"},
        "actor": {"strategy": "fsdp2", "ppo_micro_batch_size_per_gpu": 16, "ppo_mini_batch_size": 32,
                  "fsdp_config": {"param_offload": False, "optimizer_offload": False}},
        "rollout": {"name": "vllm", "tensor_model_parallel_size": 1, "gpu_memory_utilization": 0.7, "n": 2,
                    "max_model_len": None, "max_num_seqs": 128, "free_cache_engine": True,
                    "log_prob_micro_batch_size_per_gpu": 8},
        "ref": {"log_prob_micro_batch_size_per_gpu": 8},
    },
    "trainer": {"n_gpus_per_node": 4, "nnodes": 1, "total_training_steps": 1},
}  # fmt: skip


def test_a_verl_config_mapping_is_read_directly(snapshot: Path) -> None:
    # VERL's version not known here: read as the newest release, which gives vLLM the model's own context length
    plans = read_plans(DictConfigLike(VERL_TREE), workload="math", source=snapshot)
    got = plans.settings(0)
    assert (got["model_id"], got["gpu_count"], got["max_model_len"]) == ("microsoft/Phi-4-mini-instruct", 4, 131072)
    assert "the model's own context length, max_position_embeddings 131,072" in plans.source("max_model_len", 0)
    assert plans.origins == ["VERL config"] and "configuration_level" not in got
    # VERL before 0.7 gives vLLM prompt + response: the measured level c3
    older = read_plans(DictConfigLike(VERL_TREE), workload="math", source=snapshot, verl_version="0.6.1")
    assert (older.settings(0)["max_model_len"], older.settings(0)["configuration_level"]) == (1024, "c3")
    assert older.source("max_model_len", 0) == (
        "not set: VERL 0.6.1 gives vLLM prompt + response = 1024 tokens (its vLLM rollout)"
    )
    assert older.row_flags(0) == [NO_REFERENCE_FLAG] and older.row_notes(0)[0] == "for VERL 0.6.1 (--verl-version)"
    lora = {**VERL_TREE, "actor_rollout_ref": {**VERL_TREE["actor_rollout_ref"], "model": {
        "path": "microsoft/Phi-4-mini-instruct", "lora_rank": 8, "target_modules": ["q_proj", "v_proj"]}}}  # fmt: skip
    flags = read_plans(lora, workload="math", source=snapshot).row_flags(0)
    assert flags[:2] == [
        "LoRA rank 8 (the measurements use rank-64 adapters)",
        "LoRA target modules ['q_proj', 'v_proj'] (the measurements adapt all linear layers)",
    ]


def test_the_kind_is_detected_when_not_given(tmp_path: Path) -> None:
    from rlvrambench_hf.advisor.read.reader import detect_kind

    verl_yaml, trl_yaml, planned_yaml = tmp_path / "verl.yaml", tmp_path / "grpo.yaml", tmp_path / "plan.yaml"
    verl_yaml.write_text("trainer:\n  nnodes: 1\n")
    trl_yaml.write_text("num_generations: 8\n")
    planned_yaml.write_text("gpu_count: 2\n")
    assert [detect_kind(p) for p in (verl_yaml, trl_yaml, planned_yaml, tmp_path / "run.sh")] == [
        "verl", "trl", "planned", "verl"]  # fmt: skip
    assert detect_kind("python3 -m verl.trainer.main_ppo " + "x" * 5000 + "=1") == "verl"  # too long for a path
    assert detect_kind([{"gpu_count": 2}]) == "planned" and detect_kind(DictConfigLike(VERL_TREE)) == "verl"
    assert detect_kind(object()) == "trl"


def test_a_mandatory_value_left_unset_is_not_a_value() -> None:
    """VERL 0.9's packaged rollout.name is OmegaConf's ``???``: not an engine name, a setting VERL requires."""
    from rlvrambench_hf.advisor.plan.mapping import VERL_SCOPE
    from rlvrambench_hf.advisor.read.verl.record import scope_flags

    tree = {"actor_rollout_ref": {"rollout": {"name": "???", "n": "???"}}}
    config = Config(tree, "run.sh line 1", "verl/trainer/config/_generated_ppo_trainer.yaml")
    absent = lookup(tree, "no.such.key", "run.sh")
    assert lookup(tree, "actor_rollout_ref.rollout.n", "run.sh") is absent  # as if it were not written
    assert scope_flags(config, VERL_SCOPE) == [
        "actor_rollout_ref.rollout.name not given, and VERL requires it (measured: vllm)"
    ]


def test_dynamic_batch_sizes_are_flagged_and_their_micro_batches_read_from_the_token_budget(snapshot: Path) -> None:
    actor = {**VERL_TREE["actor_rollout_ref"]["actor"], "use_dynamic_bsz": True}
    tree = {**VERL_TREE, "actor_rollout_ref": {**VERL_TREE["actor_rollout_ref"], "actor": actor}}
    flags = read_plans(tree, workload="math", source=snapshot).row_flags(0)
    assert "use_dynamic_bsz True: micro-batches sized by tokens (the measurements use fixed per-GPU micro-batches)" in (
        flags
    )
    del actor["ppo_micro_batch_size_per_gpu"]  # VERL's default token budget (16384) gives it
    default = read_plans(tree, workload="math", source=snapshot)
    assert default.settings(0)["actor_micro_batch"] == 16384 // (512 + 512)
    assert "VERL 0.9.1's default" in default.source("actor_micro_batch", 0)
    # with its token budget, the micro-batch is the number of full-length sequences the budget holds
    actor["ppo_max_token_len_per_gpu"] = 4 * (512 + 512) + 100
    plans = read_plans(tree, workload="math", source=snapshot)
    assert (
        plans.settings(0)["actor_micro_batch"] == 4
        and plans.settings(0)["max_token_len_per_gpu"] == actor["ppo_max_token_len_per_gpu"]
    )
    assert "use_dynamic_bsz: ppo_max_token_len_per_gpu=" in plans.source("actor_micro_batch", 0)


# --- launch files as they exist (issue 25) ---


def test_arithmetic_over_the_scripts_own_values_is_computed(snapshot: Path) -> None:
    text = (
        "nproc_per_gpu=62\nnnodes=1\nngpu_per_node=2\n"
        "total_procs=$(( nproc_per_gpu * nnodes * ngpu_per_node ))\n"
        "python3 -m verl.trainer.main_ppo data.train_batch_size=${total_procs} data.max_response_length=$((1024 * 2)) "
        "data.x=$(( (7 - 10) / 2 )) data.y=$((7 % -3)) data.z=$((2 ** 3 + $nnodes)) data.w=$(( UNSET + 1 ))\n"
    )
    got = overrides(text)
    assert (got["data.train_batch_size"], got["data.max_response_length"]) == ("124", "2048")
    assert (got["data.x"], got["data.y"], got["data.z"]) == ("-1", "1", "9")  # the shell truncates toward zero
    assert unresolved(got["data.w"] or "") == "$((UNSET + 1))"  # a value the script does not give
    refused = "python3 -m verl.trainer.main_ppo data.train_batch_size=$(( STEPS * 2 ))\n"
    arithmetic = r"data.train_batch_size uses \$\(\(STEPS \* 2\)\), which is arithmetic over a value the script"
    with pytest.raises(InputError, match=arithmetic):
        read_plans(refused, kind="verl", source=snapshot)


def _tree(**changes: object) -> dict:
    """VERL_TREE with dotted ``changes`` (None deletes the key)."""
    import copy

    tree = copy.deepcopy(VERL_TREE)
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        if value is None:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return tree


def test_deprecated_global_micro_batches_are_converted_as_verls_workers_divide_them(snapshot: Path) -> None:
    tree = _tree(
        actor_rollout_ref__actor__ppo_micro_batch_size_per_gpu=None,
        actor_rollout_ref__actor__ppo_micro_batch_size=32,
        actor_rollout_ref__actor__ppo_mini_batch_size=64,
        actor_rollout_ref__rollout__log_prob_micro_batch_size_per_gpu=None,
        actor_rollout_ref__rollout__log_prob_micro_batch_size=16,
    )
    plans = read_plans(tree, workload="math", source=snapshot)
    got = plans.settings(0)
    assert (got["actor_micro_batch"], got["rollout_logprob_micro_batch"]) == (32 // 4, 16 // 4)  # over 4 GPUs
    assert "ppo_micro_batch_size=32, deprecated: 32 / 4 data-parallel ranks" in plans.source("actor_micro_batch", 0)
    both = _tree(actor_rollout_ref__actor__ppo_micro_batch_size=32, actor_rollout_ref__actor__ppo_mini_batch_size=64)
    with pytest.raises(InputError, match=r"VERL refuses this config before running: both .*ppo_micro_batch_size "
                       r"\(deprecated\) and .*ppo_micro_batch_size_per_gpu are set"):  # fmt: skip
        read_plans(both, workload="math", source=snapshot)


def test_config_problems_are_the_errors_verl_raises_before_running(snapshot: Path) -> None:
    small = _tree(data__train_batch_size=16, actor_rollout_ref__actor__ppo_mini_batch_size=32)
    with pytest.raises(InputError, match=r"VERL refuses this config before running: data.train_batch_size = 16 is "
                       r"below actor_rollout_ref.actor.ppo_mini_batch_size = 32"):  # fmt: skip
        read_plans(small, workload="math", source=snapshot, verl_version="0.9.1")
    # VERL 0.2 ran it (the check came in 0.3): no refusal; VERL's version not known: a flag, not a refusal
    ran = read_plans(small, workload="math", source=snapshot, verl_version="0.2.0")
    assert ran.settings(0)["train_batch_size"] == 16
    flags = read_plans(small, workload="math", source=snapshot).row_flags(0)
    assert any(f.startswith("data.train_batch_size = 16 is below") and "VERL 0.3.0.post1 and later refuse" in f
               for f in flags)  # fmt: skip
    uneven = _tree(data__train_batch_size=3, actor_rollout_ref__rollout__n=1)
    with pytest.raises(InputError, match=r"train_batch_size × rollout.n = 3 is not divisible by the 4 GPUs"):
        read_plans(uneven, workload="math", source=snapshot)


def test_an_adapter_path_is_lora_and_multi_node_runs_say_their_nodes(snapshot: Path) -> None:
    tree = _tree(actor_rollout_ref__model__lora_rank=None, actor_rollout_ref__model__lora_adapter_path="/ckpt/lora")
    plans = read_plans(tree, workload="math", source=snapshot)
    got = plans.settings(0)
    assert got["adaptation"] == "LoRA" and "lora_rank" not in got  # the rank is the adapter's own, not here
    assert any(f.startswith("LoRA rank not known: the adapter at lora_adapter_path '/ckpt/lora'") for f in (
        plans.row_flags(0)))  # fmt: skip
    two = read_plans(_tree(trainer__nnodes=2), workload="math", source=snapshot).settings(0)
    assert (two["nnodes"], two["gpu_count"]) == (2, 8)  # gpu_count is the total over the nodes


def test_without_a_kl_term_verl_has_no_reference_and_megatron_writes_lora_under_model_lora(snapshot: Path) -> None:
    """VERL loads a reference policy only for a KL term (need_reference_policy): without one the reference's
    micro-batch is neither required nor used (the log-prob pass is the rollout's), and the answer says so. Megatron
    runs write LoRA as model.lora.rank, which VERL reads as LoRA as it does model.lora_rank."""
    from rlvrambench_hf.advisor.plan.mapping import NO_REFERENCE_FLAG

    no_kl = _tree(actor_rollout_ref__ref__log_prob_micro_batch_size_per_gpu=None,
                  actor_rollout_ref__model__lora_rank=0, actor_rollout_ref__actor__use_kl_loss=False,
                  algorithm__use_kl_in_reward=False)  # fmt: skip
    plans = read_plans(no_kl, workload="math", source=snapshot)
    assert plans.settings(0)["ref_logprob_micro_batch"] == 8 and NO_REFERENCE_FLAG in plans.row_flags(0)
    ignored = _tree(actor_rollout_ref__ref__log_prob_micro_batch_size_per_gpu=64,
                    actor_rollout_ref__actor__use_kl_loss=False)  # fmt: skip
    assert read_plans(ignored, workload="math", source=snapshot).settings(0)["ref_logprob_micro_batch"] == 8
    with_kl = _tree(actor_rollout_ref__ref__log_prob_micro_batch_size_per_gpu=None,
                    actor_rollout_ref__model__lora_rank=0, actor_rollout_ref__actor__use_kl_loss=True)  # fmt: skip
    with pytest.raises(InputError, match=r"missing VERL setting\(s\) actor_rollout_ref\.ref\.log_prob_micro_batch"):
        read_plans(with_kl, workload="math", source=snapshot)
    kl = read_plans(_tree(actor_rollout_ref__actor__use_kl_loss=True), workload="math", source=snapshot)
    assert NO_REFERENCE_FLAG not in kl.row_flags(0)
    megatron = _tree(actor_rollout_ref__model__lora_rank=None, actor_rollout_ref__model__lora={"rank": 32})
    got = read_plans(megatron, workload="math", source=snapshot)
    assert (got.settings(0)["adaptation"], got.settings(0)["lora_rank"]) == ("LoRA", 32)
    assert "LoRA rank 32 (the measurements use rank-64 adapters)" in got.row_flags(0)
    assert not any("full fine-tuning" in flag for flag in got.row_flags(0))


def test_a_local_model_path_not_on_this_machine_is_read_as_its_hub_id(snapshot: Path) -> None:
    from rlvrambench_hf.advisor.read.models import model_of_path

    measured = ("Qwen/Qwen2.5-1.5B-Instruct", "Qwen/Qwen2.5-3B-Instruct")
    assert model_of_path("/root/models/Qwen/Qwen2.5-0.5B", measured) == (
        "Qwen/Qwen2.5-0.5B",
        "the folder /root/models/Qwen/Qwen2.5-0.5B is not on this machine; read as the Hub model Qwen/Qwen2.5-0.5B",
    )
    assert model_of_path("~/models/qwen2.5-1.5b-instruct", measured)[0] == "Qwen/Qwen2.5-1.5B-Instruct"
    assert model_of_path("Qwen/Qwen2.5-3B-Instruct", measured) == ("Qwen/Qwen2.5-3B-Instruct", None)
    plans = read_plans(_tree(actor_rollout_ref__model__path="/root/models/Qwen/Qwen2.5-0.5B"), workload="math",
                       source=snapshot)  # fmt: skip
    assert plans.settings(0)["model_id"] == "Qwen/Qwen2.5-0.5B"
    assert plans.source("model_id", 0).endswith("read as the Hub model Qwen/Qwen2.5-0.5B)")


def test_a_long_list_of_missing_keys_is_bounded_by_whole_names(snapshot: Path) -> None:
    from rlvrambench_hf.errors import MESSAGE_LIMIT

    nulls = {"data": dict.fromkeys(("train_batch_size", "max_prompt_length", "max_response_length")),
             "trainer": {"n_gpus_per_node": None}, "actor_rollout_ref": {
                 "model": {"path": "Qwen/Qwen2.5-3B-Instruct"},
                 "rollout": dict.fromkeys(("n", "gpu_memory_utilization", "tensor_model_parallel_size"))}}  # fmt: skip
    with pytest.raises(InputError) as caught:
        read_plans(nulls, source=snapshot)
    message = str(caught.value)
    assert len(message) <= MESSAGE_LIMIT and "…" not in message
    named = message.split("missing VERL setting(s) ", 1)[1].split(": not set")[0]
    *keys, more = named.split(", ")
    assert re.fullmatch(r"\S+ and \d+ more", more) and all(re.fullmatch(r"[a-z_]+(\.[a-z_]+)+", k) for k in keys)


# --- scripts as bash runs them: arguments, loops, functions, bounds (issues 36 and 38) ---


LOOP = (
    "MODEL=Qwen/Qwen2.5-3B-Instruct\nGPUS=2\n"
    "while [[ $# -gt 0 ]]; do\n  case $1 in\n    --model) MODEL=$2; shift 2;;\n"
    '    --gpus=*) GPUS="${1#*=}"; shift;;\n'
    "    --) shift; break;;\n    *) echo bad; exit 1;;\n  esac\ndone\n"
    'python3 -m verl.trainer.main_ppo a.model=$MODEL a.gpus=$GPUS "$@"\n'
)


def test_argument_loops_read_the_arguments_given_and_the_defaults_without() -> None:
    assert overrides(LOOP) == {"a.model": "Qwen/Qwen2.5-3B-Instruct", "a.gpus": "2"}
    (launch,) = read_launches(LOOP, "run.sh", {}, ["--model", "m/x", "--gpus=8", "--", "a.extra=1"])
    assert {k: v for _, k, v in launch.overrides} == {"a.model": "m/x", "a.gpus": "8", "a.extra": "1"}
    with pytest.raises(InputError, match=r"^run.sh line 8: the script \(with the arguments given\) exits here"):
        read_launches(LOOP, "run.sh", {}, ["--nope"])
    getopts = (
        "N=1\nwhile getopts 'n:vx' opt; do case $opt in n) N=$OPTARG;; v) V=yes;; esac; done\nshift $((OPTIND-1))\n"
        "python3 -m verl.trainer.main_ppo a.n=$N a.v=${V:-no} a.first=${1:-none} a.count=$#\n"
    )
    (launch,) = read_launches(getopts, "run.sh", {}, ["-vn", "4", "rest", "more"])
    assert {k: v for _, k, v in launch.overrides} == {"a.n": "4", "a.v": "yes", "a.first": "rest", "a.count": "2"}
    assert overrides(getopts) == {"a.n": "1", "a.v": "no", "a.first": "none", "a.count": "0"}
    positional = "set -- x y\nf() { echo; G=$1; }\nf \"$2\"\nfor w in a b; do L=$w; done\n" \
                 "python3 -m verl.trainer.main_ppo a.g=$G a.l=$L a.all=\"$*\"\n"  # fmt: skip
    assert overrides(positional) == {"a.g": "y", "a.l": "b", "a.all": "x y"}


def test_a_test_the_running_script_decides_marks_what_it_changes() -> None:
    text = (
        'A=1\nB=2\nE=\nif [ -f /etc/some-file ]; then A=3; fi\n[ -z "$E" ] && B=5\n'
        "command -v nvidia-smi && C=$(nvidia-smi -L | wc -l)\n"
        "python3 -m verl.trainer.main_ppo a.a=$A a.b=$B a.c=$C\n"
    )
    got = overrides(text)
    assert got["a.b"] == "5" and unresolved(got["a.a"] or "") == "$A" and unresolved(got["a.c"] or "") == "$C"
    from rlvrambench_hf.advisor.read.shell.state import unresolved as why

    assert why(got["a.a"] or "")[1] == "set by a test at line 4 that depends on what the script does when it runs"


def test_expansions_and_substitutions_computed_without_running_anything() -> None:
    text = (
        "P=/models/Qwen2.5-3B.tar\nN=$(expr 4 \\* 8)\nE=$(echo 16)\nU=${P##*/}\nL=${#P}\nUP=${U^^}\n"
        "python3 -m verl.trainer.main_ppo a.n=$N a.e=$E a.u=${U%.tar} a.l=$L a.up=$UP a.sub=${P:1:6} "
        "a.rep=${P/Qwen/qwen} a.d=${D:=7} a.d2=$D\n"
    )
    assert overrides(text) == {"a.n": "32", "a.e": "16", "a.u": "Qwen2.5-3B", "a.l": "22", "a.up": "QWEN2.5-3B.TAR",
                               "a.sub": "models", "a.rep": "/models/qwen2.5-3B.tar", "a.d": "7",
                               "a.d2": "7"}  # fmt: skip


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "A0=1\n"
            + "\n".join(f'A{i}="A{i - 1}+A{i - 1}"' for i in range(1, 70))
            + "\npython3 -m verl.trainer.main_ppo "
            "data.train_batch_size=$((A69))\n",
            r"data.train_batch_size uses \$\(\(A69\)\), which is arithmetic",
        ),
        ("A0=x\n" + "\n".join(f"A{i}=$A{i - 1}$A{i - 1}" for i in range(1, 31)), r"expands to more than 65,536"),
        ("python3 -m verl.trainer.main_ppo a.b=" + "${" * 50_000, r"line 1: quotes and expansions nested more than"),
        (
            "for i in 0 1 2 3 4 5 6 7 8 9; do for j in 1 2 3 4 5 6 7 8 9; do for k in 1 2 3 4 5 6 7 8 9; do "
            "for l in 1 2 3 4 5 6 7 8 9; do for m in 1 2 3 4 5 6 7 8 9; do :; done; done; done; done; done",
            r"takes more than 50,000 steps",
        ),
        ("x " * 200_000, r"more than 100,000 words"),
        ("f() { f; }\nf\n", r"functions call one another more than 64 deep"),
        ("bash <<'EOF'\npython3 -m verl.trainer.main_ppo a.b=1\nEOF\n", r"line 1: a VERL launch in a here-document"),
        ("while true; do\n", r"line 1: 'while' here has no 'done'"),
    ],  # fmt: skip
)
def test_a_script_bounded_by_construction_is_one_line_and_quick(text: str, error: str, snapshot: Path) -> None:
    import time

    started = time.monotonic()
    with pytest.raises(InputError, match=error) as caught:
        read_plans(text + ("" if "main_ppo" in text else "\npython3 -m verl.trainer.main_ppo a.b=1\n"), kind="verl",
                   source=snapshot)  # fmt: skip
    assert time.monotonic() - started < 10 and "\n" not in str(caught.value)


def test_values_of_the_environment_are_named_never_printed(snapshot: Path, monkeypatch) -> None:
    monkeypatch.setenv("RUN_NODE_COUNT", "four-of-them")
    monkeypatch.setenv("SOME_API_KEY", "sk-do-not-print-me")
    base = "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct "
    for value, named in (("$RUN_NODE_COUNT", r"the value of \$RUN_NODE_COUNT \(from the environment\) is not an"),
                         ("$SOME_API_KEY", r"uses \$SOME_API_KEY, which is an environment variable named as a secret"),
                         ("'${oc.env:RUN_NODE_COUNT}'", r"\$RUN_NODE_COUNT \(from the environment\)"),
                         ("'${oc.env:SOME_API_KEY}'", r"an environment variable named as a secret")):  # fmt: skip
        with pytest.raises(InputError, match=named) as caught:
            read_plans(base + f"trainer.nnodes={value}", kind="verl", source=snapshot)
        assert "four-of-them" not in str(caught.value) and "sk-do-not" not in str(caught.value)
    monkeypatch.setenv("RUN_NODE_COUNT", "2")
    plans = read_plans(base + "trainer.nnodes=$RUN_NODE_COUNT actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 "
                       "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4", kind="verl", source=snapshot,
                       workload="gsm8k")  # fmt: skip
    assert plans.settings(0)["nnodes"] == 2
    assert plans.source("nnodes", 0) == "command line line 1 (from the environment: $RUN_NODE_COUNT)"


def test_a_null_context_of_a_model_not_at_hand_is_left_to_its_config_json(snapshot: Path) -> None:
    """VERL 0.7 and later give vLLM the model's own context; for a model whose config.json is not at hand offline the
    setting stays null (the answer reads the config.json), and no setting is missing for it."""
    tree = _tree(actor_rollout_ref__model__path="some-org/some-new-model")
    plans = read_plans(tree, workload="math", source=snapshot)
    assert "max_model_len" not in plans.settings(0)
    assert plans.source("max_model_len", 0) == (
        "not set: VERL 0.7.1 and later give vLLM the model's own context length (read from its config.json)"
    )


def test_plain_values_are_read_as_hydras_parser_reads_them_without_importing_it(tmp_path: Path, snapshot: Path) -> None:
    """A plain ``key=value`` (no quotes, mappings, sweeps, interpolations; a list of plain elements) is read by
    Hydra's lexer rules by hand, with Hydra's own result; reading a launch script of plain values never imports
    Hydra (a tenth of a second); a mapping does."""
    import random
    import subprocess
    import sys

    from rlvrambench_hf.advisor.read.verl.hydra import _ABSENT, _PLAIN, _by_hand, _hydra_parsed

    chars, rng = "01_.eE+-ainfstrulx/@Q", random.Random(7)
    texts = ["1", "007", "1_000", "1__0", "1e3", ".5", "5.", "-inf", "NaN", "True", "null", "Qwen/Qwen2.5-3B", "1.2.3"]
    texts += ["".join(rng.choice(chars) for _ in range(rng.randint(1, 6))) for _ in range(3000)]
    for text in (t for t in texts if _PLAIN.match(t)):
        parsed = _hydra_parsed(text)
        if parsed is not _ABSENT:
            by_hand = _by_hand(text)
            assert (by_hand == parsed and type(by_hand) is type(parsed)) or by_hand != by_hand, text  # NaN
    plain = " ".join(f"{k}={v}" for k, v in (
        ("data.train_batch_size", 32), ("actor_rollout_ref.rollout.n", 4), ("trainer.n_gpus_per_node", 2),
        ("actor_rollout_ref.model.path", "Qwen/Qwen2.5-3B-Instruct"), ("actor_rollout_ref.model.lora_rank", 64),
        ("actor_rollout_ref.actor.ppo_mini_batch_size", 16),
        ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", 4),
        ("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", 4)))  # fmt: skip
    lists, mapping = 'trainer.logger=\'["console","wandb"]\'', "+actor_rollout_ref.model.override_config='{a: 1}'"
    for extra, imported in (("", False), (lists, False), (mapping, True)):
        script = tmp_path / "run.sh"
        script.write_text(f"python3 -m verl.trainer.main_ppo {plain} {extra}\n")
        code = (
            "import sys\nfrom rlvrambench_hf.advisor import read_plans\n"
            f"read_plans({str(script)!r}, kind='verl', workload='gsm8k', source={str(snapshot)!r})\n"
            # Hydra's parser, and huggingface_hub's name check (the store's folder is huggingface_hub's assets one)
            "checks = {'hydra', 'huggingface_hub.utils._validators'}\n"
            "print(sorted({m.split('.')[0] for m in sys.modules if m in checks or m.startswith('hydra.')}))\n"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.stdout.strip() == ("['hydra']" if imported else "[]"), done.stderr[-500:]
