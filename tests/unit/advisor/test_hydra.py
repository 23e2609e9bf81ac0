"""Hydra's override grammar as the advisor reads a VERL command line: values and their types, quoting, ``+`` /
``++`` / ``~`` keys, and sweeps — several runs — refused in one line naming the key."""

from __future__ import annotations

import pytest

from rlvrambench_hf.advisor import read_plans
from rlvrambench_hf.advisor.read.verl.config import merged
from rlvrambench_hf.advisor.read.verl.hydra import HydraSweep, hydra_value
from rlvrambench_hf.errors import InputError
from unit.advisor.given import VERL_OVERRIDES

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("null", None), ("true", True), ("False", False), ("8", 8), ("-3", -3), ("1_000", 1000), ("0.55", 0.55),
        (".5", 0.5), ("1e-3", 0.001), ("inf", float("inf")), ("'8'", "8"), ('"x y"', "x y"), ("'4,8'", "4,8"),
        ("[q_proj,v_proj]", ["q_proj", "v_proj"]), ("[]", []), ("{a: 1, b: [2]}", {"a": 1, "b": [2]}),
        ("all-linear", "all-linear"), ("Qwen/Qwen2.5-3B-Instruct", "Qwen/Qwen2.5-3B-Instruct"),
    ],
)  # fmt: skip
def test_an_override_value_has_the_type_hydra_gives_it(text, value):
    found = hydra_value(text)
    assert found == value and type(found) is type(value)


LISTS = ['["console"]', "['console', 'wandb']", "[1,2]", "[a, 1.5, true, null]", '["1", 2]', '[" a b "]', "[1_000]",
         "[-1, +2, .5]", '[""]', "[0x1]", "[inf]", "[NULL, False]"]  # fmt: skip


@pytest.mark.parametrize("text", LISTS)
def test_a_list_of_plain_elements_read_by_hand_is_what_hydras_parser_reads(text):
    """The fast path (no parser import) for the lists launch files carry gives Hydra's own values and types."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from rlvrambench_hf.advisor.read.verl.hydra import _PLAIN_LIST, plain

    assert _PLAIN_LIST.match(text)
    expected = plain(OverridesParser.create().parse_override(f"k={text}").value())
    found = hydra_value(text)
    assert found == expected and [type(v) for v in found] == [type(v) for v in expected]


@pytest.mark.parametrize("text", ["4,8", "0.5,0.6", "range(1,4)", "choice(fsdp,fsdp2)", "glob(*)", "interval(0,1)"])
def test_a_sweep_is_refused_as_several_runs_in_one_line(text):
    with pytest.raises(HydraSweep) as caught:
        hydra_value(text)
    message = str(caught.value)
    assert message.startswith(f"'{text}' is a Hydra sweep (several runs, --multirun); a single run refuses it")
    assert "\n" not in message and isinstance(caught.value, InputError)


def launch(tmp_path, *extra: str) -> str:
    path = tmp_path / "run.sh"
    path.write_text(
        "set -x\npython3 -m verl.trainer.main_ppo \\\n  " + " \\\n  ".join([*VERL_OVERRIDES, *extra]) + "\n"
    )
    return str(path)


def test_a_sweep_in_a_launch_script_names_its_key_and_line(verl_defaults, shared_mini, tmp_path):
    script = launch(tmp_path, "actor_rollout_ref.rollout.gpu_memory_utilization=0.5,0.6")
    with pytest.raises(InputError) as caught:
        read_plans(script, workload="gsm8k", source=shared_mini.root)
    assert str(caught.value) == (
        f"{script} line 2: actor_rollout_ref.rollout.gpu_memory_utilization='0.5,0.6' is a Hydra sweep (several "
        "runs, --multirun); a single run refuses it: quote it ('a,b') or give a list ([a,b])"
    )


def test_quotes_the_shell_keeps_make_a_string_that_omegaconf_converts(verl_defaults, shared_mini, tmp_path):
    """``n='4'`` is 4 after the shell removes its quotes; ``"n='4'"`` gives Hydra the string '4', which OmegaConf
    converts for an integer field (VERL's configs are typed): 4 again, said where it came from; 'four' it refuses."""
    plain = read_plans(launch(tmp_path, "actor_rollout_ref.rollout.n='4'"), workload="gsm8k", source=shared_mini.root)
    assert plain.settings(0)["rollout_n"] == 4
    quoted = read_plans(launch(tmp_path, "\"actor_rollout_ref.rollout.n='4'\""), workload="gsm8k",
                        source=shared_mini.root)  # fmt: skip
    assert quoted.settings(0)["rollout_n"] == 4 and "'4' read as 4" in quoted.source("rollout_n", 0)
    with pytest.raises(InputError, match=r"actor_rollout_ref\.rollout\.n: 'four' is not an integer"):
        read_plans(launch(tmp_path, "\"actor_rollout_ref.rollout.n='four'\""), workload="gsm8k",
                   source=shared_mini.root)  # fmt: skip


def test_plus_adds_double_plus_forces_and_tilde_deletes():
    base = {"a": {"kept": 1, "gone": 2}}
    tree = merged(base, [("+", "a.new", "3"), ("++", "a.kept", "5"), ("~", "a.gone", None), ("+", "b.c.d", "[1]")],
                  "run.sh")  # fmt: skip
    assert tree == {"a": {"kept": 5, "new": 3}, "b": {"c": {"d": [1]}}}
    assert base == {"a": {"kept": 1, "gone": 2}}  # the base config is not changed


def test_prefixed_keys_in_a_launch_reach_the_plan(verl_defaults, shared_mini, tmp_path):
    script = launch(
        tmp_path,
        "++actor_rollout_ref.rollout.gpu_memory_utilization=0.7",
        "+actor_rollout_ref.rollout.layered_summon=True",
        "~actor_rollout_ref.rollout.max_num_seqs",
    )
    plans = read_plans(script, workload="gsm8k", source=shared_mini.root)
    got = plans.settings(0)
    assert (got["vllm_gpu_memory_utilization"], got["layered_summon"]) == (0.7, True)
    assert "max_num_seqs" not in got  # Hydra deletes the key from the composed config, VERL's default with it
    assert plans.source("max_num_seqs", 0) == "not given (same)"


def test_a_list_of_target_modules_is_read_as_a_list_and_flagged(verl_defaults, shared_mini, tmp_path):
    script = launch(tmp_path, "actor_rollout_ref.model.target_modules=[q_proj,v_proj]")
    flags = read_plans(script, workload="gsm8k", source=shared_mini.root).row_flags(0)
    assert "LoRA target modules ['q_proj', 'v_proj'] (the measurements adapt all linear layers)" in flags
