"""A VERL config read as a plan (``read_plans`` of a YAML file or a config mapping): over VERL's packaged defaults
when VERL is importable (a stand-in written by the tests, never imported), each value's source, OmegaConf
interpolations, the keys that are missing or of the wrong type as one line, and the knobs the memory model reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvrambench_hf.advisor import read_plans
from rlvrambench_hf.errors import InputError
from unit.advisor.given import PLAN, answers, plan, verl_tree, verl_yaml

pytestmark = pytest.mark.unit

DEFAULT = "VERL 0.9.1's default (verl/trainer/config/_generated_ppo_trainer.yaml)"


def write(tmp_path: Path, tree: dict, name: str = "run.yaml") -> Path:
    path = tmp_path / name
    path.write_text(verl_yaml(tree), encoding="utf-8")
    return path


def refused(planned: object, source: Path, **options: object) -> str:
    with pytest.raises(InputError) as caught:
        read_plans(planned, source=source, workload="gsm8k", **options)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_verl_yaml_over_verls_defaults_is_the_same_plan_as_in_the_datasets_vocabulary(
    verl_defaults, shared_mini, tmp_path, mini_context
):
    path = write(tmp_path, verl_tree())
    plans = read_plans(path, workload="gsm8k", source=shared_mini.root)
    assert plans.origins == [str(path)]
    settings = plans.settings(0)
    assert {k: settings[k] for k in PLAN} == PLAN | {"max_model_len": 1280}  # null max_model_len: prompt + response
    # the knobs the memory model reads come from VERL's defaults
    assert (settings["gradient_checkpointing"], settings["layered_summon"], settings["actor_param_dtype"]) == (
        True, False, "fp32")  # fmt: skip
    from_verl, from_plan = answers(plans, mini_context)[0], answers([plan()], mini_context)[0]
    assert from_verl["verdict"]["state"] == from_plan["verdict"]["state"]
    assert from_verl["predicted_peak_mib"] == pytest.approx(from_plan["predicted_peak_mib"])


def test_each_value_says_whether_the_users_file_or_verls_default_gave_it(verl_defaults, shared_mini, tmp_path):
    path = write(tmp_path, verl_tree())
    plans = read_plans(path, workload="gsm8k", source=shared_mini.root)
    assert plans.source("vllm_gpu_memory_utilization", 0) == str(path)
    assert plans.source("free_cache_engine", 0) == DEFAULT
    assert plans.source("parameter_offload", 0) == DEFAULT
    null = read_plans(write(tmp_path, verl_tree(actor_rollout_ref__rollout__max_model_len=None)), workload="gsm8k",
                      source=shared_mini.root)  # fmt: skip
    assert null.source("max_model_len", 0).startswith(
        "not set: VERL 0.7.1 and later give vLLM the model's own context length"
    )


def test_without_verl_what_the_config_leaves_out_takes_the_defaults_this_package_ships(shared_mini, tmp_path):
    """VERL not installed: the memory-relevant defaults of its releases ship with the package (the newest when its
    version is not known); a key null in them is still named."""
    plans = read_plans(write(tmp_path, verl_tree(trainer__nnodes=None)), workload="gsm8k", source=shared_mini.root)
    assert plans.settings(0)["nnodes"] == 1 and plans.settings(0)["parameter_offload"] is False
    shipped = "VERL 0.9.1's default (verl/trainer/config/_generated_ppo_trainer.yaml, shipped with this package)"
    assert plans.source("nnodes", 0) == plans.source("parameter_offload", 0) == shipped
    path = write(tmp_path, verl_tree(actor_rollout_ref__actor__ppo_micro_batch_size_per_gpu=None))
    assert refused(path, shared_mini.root) == (
        f"{path}: missing VERL setting(s) actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: not set, and null in "
        "VERL 0.9.1's defaults (verl/trainer/config/_generated_ppo_trainer.yaml, shipped with this package)"
    )


def test_a_key_null_in_verls_defaults_must_be_given(verl_defaults, shared_mini, tmp_path):
    path = write(tmp_path, verl_tree(actor_rollout_ref__actor__ppo_micro_batch_size_per_gpu=None))
    assert refused(path, shared_mini.root) == (
        f"{path}: missing VERL setting(s) actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: not set, and null in "
        "VERL 0.9.1's defaults (verl/trainer/config/_generated_ppo_trainer.yaml)"
    )


def test_what_verls_defaults_leave_unmeasured_is_flagged(verl_defaults, shared_mini, tmp_path):
    """VERL packages rollout.name as OmegaConf's mandatory ``???``, LoRA rank 0 and the GAE estimator."""
    tree = verl_tree(actor_rollout_ref__rollout__name=None, actor_rollout_ref__model__lora_rank=None)
    flags = read_plans(write(tmp_path, tree), workload="gsm8k", source=shared_mini.root).row_flags(0)
    assert "actor_rollout_ref.rollout.name not given, and VERL requires it (measured: vllm)" in flags
    assert "full fine-tuning: lora_rank 0 (the measurements train rank-64 LoRA adapters)" in flags
    gae = read_plans(write(tmp_path, verl_tree(algorithm__adv_estimator=None)), workload="gsm8k",
                     source=shared_mini.root)  # fmt: skip
    assert gae.settings(0)["advantage_estimator"] == "gae"


def test_interpolations_resolve_over_the_merged_tree(verl_defaults, shared_mini, tmp_path, monkeypatch):
    tree = verl_tree(
        actor_rollout_ref__ref__log_prob_micro_batch_size_per_gpu="${actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu}",
        trainer__n_gpus_per_node="${oc.env:N_GPUS,2}",
        actor_rollout_ref__rollout__max_model_len="${oc.select:data.max_model_len,2048}",
    )
    path = write(tmp_path, tree)
    monkeypatch.delenv("N_GPUS", raising=False)
    first = read_plans(path, workload="gsm8k", source=shared_mini.root).settings(0)
    assert (first["ref_logprob_micro_batch"], first["gpu_count"], first["max_model_len"]) == (8, 2, 2048)
    monkeypatch.setenv("N_GPUS", "4")
    assert read_plans(path, workload="gsm8k", source=shared_mini.root).settings(0)["gpu_count"] == 4
    broken = write(tmp_path, verl_tree(data__max_response_length="${data.no_such_key}"), "broken.yaml")
    assert refused(broken, shared_mini.root) == (
        f"{broken}: data.max_response_length: '${{data.no_such_key}}' refers to data.no_such_key, which the config "
        "does not have"
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"trainer__n_gpus_per_node": "two"}, "trainer.n_gpus_per_node: 'two' is not an integer"),
        ({"actor_rollout_ref__rollout__gpu_memory_utilization": "high"},
         "actor_rollout_ref.rollout.gpu_memory_utilization: 'high' is not a number"),
        ({"actor_rollout_ref__rollout__free_cache_engine": "yes please"},
         "actor_rollout_ref.rollout.free_cache_engine: 'yes please' is not a boolean"),
        ({"actor_rollout_ref__rollout__gpu_memory_utilization": 1.5},
         "actor_rollout_ref.rollout.gpu_memory_utilization: 1.5 is not a fraction strictly between 0 and 1"),
    ],
)  # fmt: skip
def test_a_value_of_the_wrong_type_or_range_is_one_line_naming_the_verl_key(
    verl_defaults, shared_mini, tmp_path, changes, message
):
    path = write(tmp_path, verl_tree(**changes))
    found = refused(path, shared_mini.root)
    assert found.startswith(f"{path}: ") and message in found, found


def test_a_config_mapping_given_directly_reads_as_its_yaml(verl_defaults, shared_mini, tmp_path):
    from_mapping = read_plans(verl_tree(), workload="gsm8k", source=shared_mini.root)
    from_yaml = read_plans(write(tmp_path, verl_tree()), workload="gsm8k", source=shared_mini.root)
    assert from_mapping.settings(0) == from_yaml.settings(0) and from_mapping.origins == ["VERL config"]


def test_the_memory_knobs_verl_writes_reach_the_memory_models_terms(verl_defaults, shared_mini, tmp_path, mini_context):
    tree = verl_tree(
        actor_rollout_ref__model__enable_gradient_checkpointing=False,
        actor_rollout_ref__rollout__layered_summon=True,
        actor_rollout_ref__actor__fsdp_config={"param_offload": True, "optimizer_offload": True, "model_dtype": "bf16"},
    )
    plans = read_plans(write(tmp_path, tree), workload="gsm8k", source=shared_mini.root)
    got = plans.settings(0)
    assert (got["gradient_checkpointing"], got["layered_summon"], got["parameter_offload"]) == (False, True, True)
    assert (got["optimizer_offload"], got["actor_param_dtype"]) == (True, "bf16")
    phases = {
        p["phase"]: {t["term"]: t["arithmetic"] for t in p["terms"]} for p in answers(plans, mini_context)[0]["phases"]
    }
    assert phases["actor_update"]["activations"].startswith("gradient checkpointing off:")
    # the gather is in the actor's dtype (bf16 here: 2 bytes per element; issue 34, item 4)
    assert phases["weight_sync"]["gathered_parameters"].startswith("layered summon: 2 B x 311,000,000")
    assert phases["rollout"]["resident_actor"].startswith("0 MiB: parameters offloaded")


def test_nodes_multiply_the_gpus_of_a_node(verl_defaults, shared_mini, tmp_path):
    plans = read_plans(write(tmp_path, verl_tree(trainer__nnodes=2, trainer__n_gpus_per_node=8)), workload="gsm8k",
                       source=shared_mini.root)  # fmt: skip
    assert (plans.settings(0)["gpu_count"], plans.settings(0)["nnodes"]) == (16, 2)


def test_keys_of_parts_that_take_memory_and_that_nothing_reads_are_named_in_one_flag(
    verl_defaults, shared_mini, tmp_path
):
    tree = verl_tree(critic={"model": {"path": "x"}, "ppo_micro_batch_size_per_gpu": 4},
                     actor_rollout_ref__rollout__enable_chunked_prefill=True)  # fmt: skip
    flags = read_plans(write(tmp_path, tree), workload="gsm8k", source=shared_mini.root).row_flags(0)
    (flag,) = [f for f in flags if f.startswith("VERL settings of parts that take memory")]
    # the critic's micro-batch (its update phase) and its model path (another model than the actor's) are read
    assert flag.endswith("read but not passed on: actor_rollout_ref.rollout.enable_chunked_prefill")


def test_a_yaml_that_is_no_mapping_is_refused(verl_defaults, shared_mini, tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("- actor_rollout_ref: {}\n")
    assert refused(path, shared_mini.root, kind="verl") == (
        f"{path}: a VERL config is a mapping (actor_rollout_ref:, data:, trainer:, ...)"
    )
