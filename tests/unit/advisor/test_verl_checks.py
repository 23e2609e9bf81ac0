"""What VERL itself does to a config before it runs, done by the reader: its pre-run checks reported as the one
line VERL's refusal would be (naming the key at fault), the deprecated global micro-batch keys converted as VERL's
workers divide them, token budgets of dynamic batch sizes, a Megatron actor's offloads and an adapter's own rank."""

from __future__ import annotations

import json
import os

import pytest

from rlvrambench_hf.advisor import read_plans
from rlvrambench_hf.advisor.read.verl.checks import VerlRefuses
from rlvrambench_hf.errors import InputError
from unit.advisor.given import verl_tree

pytestmark = pytest.mark.unit

ARR = "actor_rollout_ref"
REFUSES = "VERL config: VERL refuses this config before running: "


def read(tree: dict, source):
    return read_plans(tree, workload="gsm8k", source=source)


@pytest.mark.parametrize(
    ("changes", "key", "what"),
    [
        ({"data__train_batch_size": 18, "actor_rollout_ref__rollout__n": 1, "trainer__n_gpus_per_node": 4},
         "data.train_batch_size", "data.train_batch_size × rollout.n = 18 is not divisible by the 4 GPUs"),
        ({"data__train_batch_size": 8}, f"{ARR}.actor.ppo_mini_batch_size",
         f"data.train_batch_size = 8 is below {ARR}.actor.ppo_mini_batch_size = 16"),
        ({"actor_rollout_ref__actor__ppo_micro_batch_size_per_gpu": None,
          "actor_rollout_ref__actor__ppo_micro_batch_size": 6}, f"{ARR}.actor.ppo_micro_batch_size",
         "ppo_mini_batch_size = 16 is not divisible by ppo_micro_batch_size = 6"),
        ({"actor_rollout_ref__actor__ppo_micro_batch_size": 8}, f"{ARR}.actor.ppo_micro_batch_size",
         f"both {ARR}.actor.ppo_micro_batch_size (deprecated) and {ARR}.actor.ppo_micro_batch_size_per_gpu are set; "
         f"remove {ARR}.actor.ppo_micro_batch_size"),
        ({"actor_rollout_ref__actor__ppo_micro_batch_size_per_gpu": None,
          "actor_rollout_ref__actor__ppo_micro_batch_size": 1}, f"{ARR}.actor.ppo_micro_batch_size",
         f"{ARR}.actor.ppo_micro_batch_size = 1 × ulysses_sequence_parallel_size 1 is below the 2 GPUs"),
    ],
)  # fmt: skip
def test_what_verl_refuses_before_running_is_one_line_naming_the_key(verl_defaults, shared_mini, changes, key, what):
    with pytest.raises(VerlRefuses) as caught:
        read(verl_tree(**changes), shared_mini.root)
    assert str(caught.value) == REFUSES + what and caught.value.key == key


def test_verls_own_default_mini_batch_is_refused_for_a_small_batch(verl_defaults, shared_mini):
    """VERL packages ppo_mini_batch_size 256: a config that leaves it out with a batch of 16 does not run."""
    with pytest.raises(
        VerlRefuses, match=f"data.train_batch_size = 16 is below {ARR}.actor.ppo_mini_batch_size = 256$"
    ):
        read(verl_tree(actor_rollout_ref__actor__ppo_mini_batch_size=None), shared_mini.root)


@pytest.mark.parametrize(
    ("gpus", "sp", "actor", "logprob", "ranks"),
    [(2, 1, 8, 16, 2), (4, 1, 16, 32, 4), (4, 2, 8, 16, 2)],
)
def test_deprecated_global_micro_batches_are_divided_over_the_data_parallel_ranks(
    verl_defaults, shared_mini, gpus, sp, actor, logprob, ranks
):
    tree = verl_tree(
        trainer__n_gpus_per_node=gpus,
        actor_rollout_ref__actor__ulysses_sequence_parallel_size=sp,
        actor_rollout_ref__actor__ppo_micro_batch_size_per_gpu=None,
        actor_rollout_ref__actor__ppo_micro_batch_size=actor,
        actor_rollout_ref__rollout__log_prob_micro_batch_size_per_gpu=None,
        actor_rollout_ref__rollout__log_prob_micro_batch_size=logprob,
    )
    plans = read(tree, shared_mini.root)
    got = plans.settings(0)
    assert (got["actor_micro_batch"], got["rollout_logprob_micro_batch"]) == (actor // ranks, logprob // ranks)
    assert plans.source("actor_micro_batch", 0) == (
        f"VERL config ({ARR}.actor.ppo_micro_batch_size={actor}, deprecated: {actor} / {ranks} data-parallel ranks)"
    )


def test_the_references_deprecated_micro_batch_counts_when_a_kl_term_needs_the_reference(verl_defaults, shared_mini):
    tree = verl_tree(
        actor_rollout_ref__actor__use_kl_loss=True,
        actor_rollout_ref__ref__log_prob_micro_batch_size_per_gpu=None,
        actor_rollout_ref__ref__log_prob_micro_batch_size=8,
    )
    plans = read(tree, shared_mini.root)
    assert plans.settings(0)["ref_logprob_micro_batch"] == 4
    assert "ref.log_prob_micro_batch_size=8, deprecated: 8 / 2 data-parallel ranks" in plans.source(
        "ref_logprob_micro_batch", 0
    )


@pytest.mark.parametrize(("budget", "sequences"), [(5000, 3), (1280, 1), (1000, 1), (12800, 10)])
def test_a_token_budget_of_dynamic_batch_sizes_is_the_full_length_sequences_it_holds(
    verl_defaults, shared_mini, budget, sequences
):
    tree = verl_tree(
        actor_rollout_ref__actor__use_dynamic_bsz=True,
        actor_rollout_ref__actor__ppo_micro_batch_size_per_gpu=None,
        actor_rollout_ref__actor__ppo_max_token_len_per_gpu=budget,
    )
    plans = read(tree, shared_mini.root)
    assert plans.settings(0)["actor_micro_batch"] == sequences
    assert plans.source("actor_micro_batch", 0) == (
        f"VERL config (use_dynamic_bsz: ppo_max_token_len_per_gpu={budget} holds {sequences} sequence(s) of 512 + "
        "768 tokens)"
    )


def test_a_megatron_actors_offloads_are_read_from_its_own_section(shared_mini):
    """With VERL's Megatron trainer config there is no fsdp_config: the offloads are the megatron section's."""
    tree = verl_tree(
        actor_rollout_ref__actor__strategy="megatron",
        actor_rollout_ref__actor__megatron={"param_offload": True, "optimizer_offload": False},
    )
    plans = read(tree, shared_mini.root)
    got = plans.settings(0)
    assert (got["strategy"], got["parameter_offload"], got["optimizer_offload"]) == ("megatron", True, False)
    assert plans.source("parameter_offload", 0) == f"VERL config ({ARR}.actor.megatron.param_offload)"


def test_an_adapter_path_without_a_rank_trains_that_adapter_with_its_own_rank(verl_defaults, shared_mini, tmp_path):
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"r": 32, "lora_alpha": 64, "peft_type": "LORA"}))
    tree = verl_tree(actor_rollout_ref__model__lora_rank=None, actor_rollout_ref__model__lora_adapter_path=str(adapter))
    plans = read(tree, shared_mini.root)
    assert (plans.settings(0)["lora_rank"], plans.settings(0)["adaptation"]) == (32, "LoRA")
    assert "LoRA rank 32 (the measurements use rank-64 adapters)" in plans.row_flags(0)
    absent = verl_tree(actor_rollout_ref__model__lora_rank=None,
                       actor_rollout_ref__model__lora_adapter_path=str(tmp_path / "elsewhere"))  # fmt: skip
    flags = read(absent, shared_mini.root).row_flags(0)
    assert any(f.startswith("LoRA rank not known: the adapter at lora_adapter_path") for f in flags)


def _fifo(path):
    os.mkfifo(path)


def _sparse(path):
    with open(path, "wb") as handle:
        handle.truncate(3 << 30)


ADAPTER_FILES = {  # what the file is -> (how it is made, what the one line says)
    "a FIFO (no writer: the open must not wait)": (_fifo, "is a FIFO, not a regular file"),
    "a 3 GB sparse file": (_sparse, "bytes is more than the"),
    "a folder": (lambda p: p.mkdir(), "not a regular file"),
    "JSON nested 5,000 deep": (lambda p: p.write_text("[" * 5000 + "]" * 5000), "nested more than"),
    "an integer of 5,000 digits": (lambda p: p.write_text('{"r": ' + "9" * 5000 + "}"), "digits"),
    "not UTF-8": (lambda p: p.write_bytes(b'{"r": "\xff\xfe"}'), "not UTF-8"),
}


@pytest.mark.parametrize("kind", list(ADAPTER_FILES))
def test_an_adapter_config_that_cannot_be_read_is_one_line_naming_it(verl_defaults, shared_mini, tmp_path, kind):
    make, said = ADAPTER_FILES[kind]
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    make(adapter / "adapter_config.json")
    tree = verl_tree(actor_rollout_ref__model__lora_rank=None, actor_rollout_ref__model__lora_adapter_path=str(adapter))
    with pytest.raises(InputError) as raised:
        read(tree, shared_mini.root)
    line = str(raised.value)
    assert "\n" not in line and said in line and line.startswith("the LoRA adapter config '"), line
    assert "(actor_rollout_ref.model.lora_adapter_path)" in line, line
