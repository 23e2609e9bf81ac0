"""The launch-script reader and VERL config trees, as pure functions: shell quoting, continuations, variables,
Hydra's prefixes and values, OmegaConf interpolations and a config mapping given directly."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from rlvrambench_hf.advisor import read_plans
from rlvrambench_hf.advisor.launch import read_launches, unresolved
from rlvrambench_hf.advisor.mapping import NULL_CONTEXT_FLAG
from rlvrambench_hf.advisor.verl import Config, hydra_value, lookup, merged
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
    with pytest.raises(InputError, match=r"^run.sh line 1: variables nested more than 32 deep$"):
        read_launches(deep, "run.sh", {})


def test_what_the_script_computes_is_marked_not_run() -> None:
    got = overrides("python3 -m verl.trainer.main_ppo a.b=$(nproc) a.c=`date` a.d=$1 a.e=${NOPE}\n")
    assert [unresolved(v or "") for v in got.values()] == [
        "$(...) (a command substitution)",
        "`...` (a command substitution)",
        "$1",
        "${NOPE}",
    ]


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
        "actor": {"strategy": "fsdp2", "ppo_micro_batch_size_per_gpu": 16,
                  "fsdp_config": {"param_offload": False, "optimizer_offload": False}},
        "rollout": {"name": "vllm", "tensor_model_parallel_size": 1, "gpu_memory_utilization": 0.7, "n": 2,
                    "max_model_len": None, "max_num_seqs": 128, "free_cache_engine": True,
                    "log_prob_micro_batch_size_per_gpu": 8},
        "ref": {"log_prob_micro_batch_size_per_gpu": 8},
    },
    "trainer": {"n_gpus_per_node": 4, "nnodes": 1, "total_training_steps": 1},
}  # fmt: skip


def test_a_verl_config_mapping_is_read_directly(snapshot: Path) -> None:
    plans = read_plans(DictConfigLike(VERL_TREE), workload="math", source=snapshot)
    got = plans.settings(0)
    assert (got["model_id"], got["gpu_count"], got["configuration_level"], got["max_model_len"]) == (
        "microsoft/Phi-4-mini-instruct", 4, "c3", 1024)  # fmt: skip
    null_context = NULL_CONTEXT_FLAG.format(key="actor_rollout_ref.rollout.max_model_len", value=1024)
    assert plans.row_flags(0) == [null_context] and plans.origins == ["VERL config"]
    lora = {**VERL_TREE, "actor_rollout_ref": {**VERL_TREE["actor_rollout_ref"], "model": {
        "path": "microsoft/Phi-4-mini-instruct", "lora_rank": 8, "target_modules": ["q_proj", "v_proj"]}}}  # fmt: skip
    flags = read_plans(lora, workload="math", source=snapshot).row_flags(0)
    assert flags[:2] == [
        "LoRA rank 8 (the measurements use rank-64 adapters)",
        "LoRA target modules ['q_proj', 'v_proj'] (the measurements adapt all linear layers)",
    ]


def test_the_kind_is_detected_when_not_given(tmp_path: Path) -> None:
    from rlvrambench_hf.advisor.read import detect_kind

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
    from rlvrambench_hf.advisor.mapping import VERL_SCOPE
    from rlvrambench_hf.advisor.verl import scope_flags

    tree = {"actor_rollout_ref": {"rollout": {"name": "???", "n": "???"}}}
    config = Config(tree, "run.sh line 1", "verl/trainer/config/_generated_ppo_trainer.yaml")
    absent = lookup(tree, "no.such.key", "run.sh")
    assert lookup(tree, "actor_rollout_ref.rollout.n", "run.sh") is absent  # as if it were not written
    assert scope_flags(config, VERL_SCOPE) == [
        "actor_rollout_ref.rollout.name not given, and VERL requires it (measured: vllm)"
    ]


def test_dynamic_batch_sizes_are_flagged_and_their_micro_batches_still_asked_for(snapshot: Path) -> None:
    actor = {**VERL_TREE["actor_rollout_ref"]["actor"], "use_dynamic_bsz": True}
    tree = {**VERL_TREE, "actor_rollout_ref": {**VERL_TREE["actor_rollout_ref"], "actor": actor}}
    flags = read_plans(tree, workload="math", source=snapshot).row_flags(0)
    assert "use_dynamic_bsz True: micro-batches sized by tokens (the measurements use fixed per-GPU micro-batches)" in (
        flags
    )
    del actor["ppo_micro_batch_size_per_gpu"]
    with pytest.raises(InputError, match=r"ppo_micro_batch_size_per_gpu: not set, .*; with use_dynamic_bsz give the"):
        read_plans(tree, workload="math", source=snapshot)
