"""The one mapping table: VERL's and TRL's config keys to the dataset's settings, and the keys that become scope flags.

Each :class:`Mapped` row reads one or more keys of the user's config and gives one setting of
``benchmark/configurations.csv`` (its type and range are the registry's and :mod:`..read.checks`'); ``conversion`` says
how, in words, and ``read`` / ``write`` do it both ways (``write`` gives the keys' values for a setting's value,
so that a measured configuration can be written back as a VERL command line). Each :class:`Scope` row compares a
key with what the measurements used and raises a flag when it differs. docs/advisor.md prints these tables.
"""

from __future__ import annotations

from .conversions import (
    _adaptation,
    _any_on,
    _as_is,
    _colocated,
    _dtype,
    _first_on,
    _hybrid,
    _lora_rank,
    _lower,
    _no_keys,
    _on_one_node,
    _or_prompt_plus_response,
    _other_model,
    _product,
    _rank_back,
    _rank_of,
    _ref_back,
    _ref_or_rollout,
    _same,
    _upper,
)
from .mapped import Mapped, Scope, _knob, mapped_keys
from .reward import REWARD_MAPPING
from .trl_mapping import TRL_MAPPING, TRL_SCOPE, TRL_STACK_FLAG

__all__ = [
    "NULL_CONTEXT_FLAG",
    "UNUSED_SETTINGS",
    "TRL_MAPPING",
    "TRL_SCOPE",
    "TRL_STACK_FLAG",
    "VERL_MAPPING",
    "VERL_SCOPE",
    "Mapped",
    "Scope",
    "mapped_keys",
]


#: Where VERL reads LoRA: rank and adapter path as FSDP's workers have them, then as Megatron's (``model.lora``).
LORA_KEYS = (
    "actor_rollout_ref.model.lora_rank",
    "actor_rollout_ref.model.lora_adapter_path",
    "actor_rollout_ref.model.lora.rank",
    "actor_rollout_ref.model.lora.adapter_path",
)
#: The KL terms; VERL loads a reference policy only when one of them is on (``need_reference_policy``).
KL_KEYS = ("actor_rollout_ref.actor.use_kl_loss", "algorithm.use_kl_in_reward")

#: Ordered so that a conversion reads only settings made before it (max_model_len after the lengths).
VERL_MAPPING: tuple[Mapped, ...] = (
    Mapped(
        ("actor_rollout_ref.model.path",),
        "model_id",
        "the Hub id; a local folder named as a measured model is that model",
        _same,
        _as_is,
    ),  # fmt: skip
    Mapped(("trainer.n_gpus_per_node", "trainer.nnodes"), "gpu_count", "product", _product, _on_one_node),
    Mapped(("actor_rollout_ref.rollout.tensor_model_parallel_size",), "rollout_tp_size", "same", _same, _as_is),
    Mapped(
        ("actor_rollout_ref.rollout.gpu_memory_utilization",), "vllm_gpu_memory_utilization", "same", _same, _as_is
    ),  # fmt: skip
    Mapped(("actor_rollout_ref.rollout.free_cache_engine",), "free_cache_engine", "same", _same, _as_is, False),
    Mapped(("data.max_prompt_length",), "max_prompt_length", "same", _same, _as_is),
    Mapped(("data.max_response_length",), "max_response_length", "same", _same, _as_is),
    Mapped(
        ("actor_rollout_ref.rollout.max_model_len",),
        "max_model_len",
        "same; null: prompt + response",
        _or_prompt_plus_response,
        _as_is,
        optional=("actor_rollout_ref.rollout.max_model_len",),
    ),  # fmt: skip
    Mapped(("actor_rollout_ref.rollout.max_num_seqs",), "max_num_seqs", "same", _same, _as_is, False),
    Mapped(("actor_rollout_ref.rollout.n",), "rollout_n", "same", _same, _as_is),
    Mapped(
        ("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",),
        "rollout_logprob_micro_batch",
        "same",
        _same,
        _as_is,
    ),  # fmt: skip
    Mapped(("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",), "actor_micro_batch", "same", _same, _as_is),
    Mapped(("actor_rollout_ref.actor.fsdp_config.param_offload",), "parameter_offload", "same", _same, _as_is),
    Mapped(("actor_rollout_ref.actor.fsdp_config.optimizer_offload",), "optimizer_offload", "same", _same, _as_is),
    Mapped(
        ("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu", *LORA_KEYS, *KL_KEYS),
        "ref_logprob_micro_batch",
        "same; the rollout's without a KL term (VERL then has no reference) or, when absent, with LoRA (the actor "
        "then computes the reference log-probabilities)",
        _ref_or_rollout,
        _ref_back,
        kinds=("int64", "int64", "string", "int64", "string", "bool", "bool"),
        optional=(*LORA_KEYS, *KL_KEYS),
        derived_from="rollout_logprob_micro_batch",
    ),  # fmt: skip
    Mapped(("data.train_batch_size",), "train_batch_size", "same (prompts per step)", _same, _as_is),
    Mapped(("trainer.total_training_steps",), "total_training_steps", "same", _same, _as_is, False),
    Mapped(("trainer.save_freq",), "save_freq", "same (-1: no checkpoints)", _same, _as_is, False),
    Mapped(("trainer.test_freq",), "test_freq", "same (-1: no validation)", _same, _as_is, False),
    Mapped(("algorithm.adv_estimator",), "algorithm", "upper case (grpo: GRPO)", _upper, _lower, False),
    Mapped(
        LORA_KEYS,
        "adaptation",
        "LoRA when a rank is above 0 or an adapter path is given, else none",
        _adaptation,
        _rank_of,
        False,
        ("int64", "string", "int64", "string"),
        optional=LORA_KEYS[1:],
    ),  # fmt: skip
    # the knobs (.knobs): what else the memory model reads
    _knob("trainer.nnodes", "nnodes"),
    Mapped(
        LORA_KEYS,
        "lora_rank",
        "same (model.lora_rank, or Megatron's model.lora.rank); null when only an adapter path is given",
        _lora_rank,
        _rank_back,
        False,
        ("int64", "string", "int64", "string"),
    ),  # fmt: skip
    _knob("actor_rollout_ref.actor.strategy", "strategy"),
    _knob("actor_rollout_ref.rollout.name", "rollout_engine"),
    Mapped(
        ("actor_rollout_ref.hybrid_engine",),
        "vllm_mode",
        "true: colocate, false: server",
        _colocated,
        _hybrid,
        False,
        ("bool",),
    ),  # fmt: skip
    _knob("algorithm.adv_estimator", "advantage_estimator"),
    _knob("actor_rollout_ref.model.enable_gradient_checkpointing", "gradient_checkpointing"),
    _knob("actor_rollout_ref.model.use_remove_padding", "use_remove_padding"),
    _knob("actor_rollout_ref.rollout.layered_summon", "layered_summon"),
    Mapped(
        ("actor_rollout_ref.actor.fsdp_config.model_dtype",),
        "actor_param_dtype",
        "fp32 / float32: fp32, bf16 / bfloat16: bf16",
        _dtype,
        _as_is,
        False,
        ("string",),
    ),  # fmt: skip
    _knob("actor_rollout_ref.rollout.enforce_eager", "enforce_eager"),
    _knob("actor_rollout_ref.rollout.load_format", "load_format"),
    _knob("actor_rollout_ref.rollout.max_num_batched_tokens", "max_num_batched_tokens"),
    _knob("actor_rollout_ref.actor.use_dynamic_bsz", "use_dynamic_bsz"),
    _knob("actor_rollout_ref.actor.ppo_max_token_len_per_gpu", "max_token_len_per_gpu"),
    _knob("actor_rollout_ref.actor.ulysses_sequence_parallel_size", "ulysses_sp_size"),
    Mapped(
        KL_KEYS,
        "reference_model",
        "on when use_kl_loss or use_kl_in_reward is (VERL then loads a reference policy; with LoRA the base model)",
        _any_on,
        _first_on,
        False,
        ("bool", "bool"),
    ),  # fmt: skip
    Mapped(
        ("actor_rollout_ref.ref.fsdp_config.param_offload", "actor_rollout_ref.ref.megatron.param_offload"),
        "ref_param_offload",
        "on when either is (FSDP's, or a Megatron reference's)",
        _any_on,
        _first_on,
        False,
        ("bool", "bool"),
    ),  # fmt: skip
    *(
        Mapped(
            (f"critic.fsdp.{name}", f"critic.model.fsdp_config.{name}"),
            f"critic_{name}",
            "on when either is (critic.fsdp, as VERL 0.9 has it; critic.model.fsdp_config, as older releases and "
            "VERL's example scripts write it)",
            _any_on,
            _first_on,
            False,
            ("bool", "bool"),
        )
        for name in ("param_offload", "optimizer_offload")
    ),
    _knob("critic.ppo_micro_batch_size_per_gpu", "critic_micro_batch"),
    Mapped(
        ("critic.model.path", "actor_rollout_ref.model.path"),
        "critic_other_model",
        "on when the critic's model (its folder's or Hub id's last part) is not the actor's",
        _other_model,
        _no_keys,
        False,
        ("string", "string"),
    ),  # fmt: skip
    *REWARD_MAPPING,
    _knob("actor_rollout_ref.actor.megatron.tensor_model_parallel_size", "megatron_tp"),
    _knob("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size", "megatron_pp"),
    _knob("actor_rollout_ref.actor.megatron.context_parallel_size", "megatron_cp"),
)

#: Settings no floor, phase or scope decision reads (the memory model, the floors, the measured records and the
#: scope flags read every other one): a value of theirs that a script computes when it runs is not read, and a
#: ``read:`` line says so, instead of a refusal.
UNUSED_SETTINGS = frozenset(
    {"total_training_steps", "save_freq", "test_freq", "enforce_eager", "load_format", "max_num_batched_tokens"}
)

#: What the measurements used, where VERL lets a run differ (the adapters are rank-64 LoRA on all linear layers).
VERL_SCOPE: tuple[Scope, ...] = (
    Scope(
        "actor_rollout_ref.model.lora_rank",
        (64,),
        "LoRA rank {value} (the measurements use rank-64 adapters)",
    ),  # fmt: skip
    Scope(
        "actor_rollout_ref.model.target_modules",
        ("all-linear",),
        "LoRA target modules {value} (the measurements adapt all linear layers)",
    ),  # fmt: skip
    Scope(
        "algorithm.adv_estimator",
        ("grpo",),
        "advantage estimator {value} (the measurements run GRPO; gae adds a critic)",
    ),  # fmt: skip
    Scope("actor_rollout_ref.rollout.name", ("vllm",), "rollout engine {value} (the measurements generate with vLLM)"),
    Scope(
        "actor_rollout_ref.actor.strategy",
        ("fsdp", "fsdp2"),
        "actor strategy {value} (the measurements train with FSDP)",
    ),  # fmt: skip
    Scope(
        "actor_rollout_ref.hybrid_engine",
        (True,),
        "hybrid_engine {value} (the measurements colocate generation and training)",
    ),  # fmt: skip
    Scope(
        "actor_rollout_ref.actor.use_dynamic_bsz",
        (False,),
        "use_dynamic_bsz {value}: micro-batches sized by tokens (the measurements use fixed per-GPU micro-batches)",
        absent_is_measured=True,
    ),  # fmt: skip
)


#: Flagged where no KL term is on: VERL then loads no reference policy (the release's runs had one).
NO_REFERENCE_FLAG = (
    "no reference policy: use_kl_loss and use_kl_in_reward are off, so VERL computes no reference log-probabilities "
    "(the measured runs computed a fixed reference's too)"
)
#: Flagged where a config leaves vLLM's context length null (VERL from 0.7 and TRL then use the model's own).
NULL_CONTEXT_FLAG = (
    "{key} not set: read as prompt + response = {value} tokens, as every measured run set it; VERL 0.7 and later "
    "and TRL give vLLM the model's own context length instead (set it to compare like with like)"
)
