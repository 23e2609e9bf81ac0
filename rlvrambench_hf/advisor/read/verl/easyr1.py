"""EasyR1 (``python3 -m verl.trainer.main config=FILE key=value ...``) read by EasyR1's own schema.

EasyR1 merges its command line into its structured config (``OmegaConf.structured(PPOConfig())``, then the
``config=`` file, then the command line): a key its schema does not have, or a value OmegaConf cannot convert to
the field's type, is refused before anything runs, and so it is here. The schema and its defaults are facts of
hiyouga/EasyR1 (commit b44b311: ``verl/trainer/config.py``, ``verl/workers/config.py``,
``verl/workers/actor/config.py``, ``verl/workers/rollout/config.py``, ``verl/workers/critic/config.py``,
``verl/workers/reward/config.py``). The fields that set memory are then read as the VERL keys they stand for
(:data:`AS_VERL`), each named by its EasyR1 key; EasyR1's own pre-run checks (``verl/trainer/ray_trainer.py``,
``verl/workers/fsdp_workers.py``) are the errors EasyR1 raises.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ....errors import InputError, quote
from .config import _ABSENT, Config, _raw, deep_update, merged, yaml_tree
from .launch import Launch
from .values import as_omegaconf

_DICT = object()  # a field that is a free mapping (any keys)
_LORA = {"rank": 0, "alpha": 64, "target_modules": "all-linear", "exclude_modules": None}
_MODEL = {"model_path": None, "tokenizer_path": None, "override_config": _DICT, "enable_gradient_checkpointing": True,
          "trust_remote_code": True, "freeze_vision_tower": False, "lora": _LORA}  # fmt: skip
_OPTIM = {"lr": 1e-6, "betas": _DICT, "weight_decay": 1e-2, "strategy": "adamw", "lr_warmup_ratio": 0.0,
          "lr_warmup_steps": None, "min_lr_ratio": None, "lr_scheduler_type": "constant",
          "training_steps": -1}  # fmt: skip
_FSDP = {"enable_full_shard": True, "enable_cpu_offload": False, "enable_rank0_init": True, "use_orig_params": False,
         "torch_dtype": None, "fsdp_size": -1, "mp_param_dtype": "bf16", "mp_reduce_dtype": "fp32",
         "mp_buffer_dtype": "fp32"}  # fmt: skip
_OFFLOAD = {"offload_params": False, "offload_optimizer": False}
_TRAIN = {"strategy": "fsdp", "global_batch_size": 256, "micro_batch_size_per_device_for_update": 4,
          "micro_batch_size_per_device_for_experience": 16, "max_grad_norm": 1.0, "ppo_epochs": 1,
          "dynamic_batching": True, "ulysses_size": 1, "loss_avg_mode": "token", "model": _MODEL, "optim": _OPTIM,
          "fsdp": _FSDP, "offload": _OFFLOAD, "global_batch_size_per_device": -1}  # fmt: skip
#: EasyR1's schema: every field, with its default (a nested mapping for a section).
SCHEMA: dict[str, Any] = {
    "data": {"train_files": "", "val_files": "", "prompt_key": "prompt", "answer_key": "answer", "image_key": "images",
             "video_key": "videos", "image_dir": None, "video_fps": 2.0, "max_prompt_length": 512,
             "max_response_length": 512, "rollout_batch_size": 512, "mini_rollout_batch_size": None,
             "val_batch_size": -1, "format_prompt": None, "override_chat_template": None, "shuffle": True, "seed": 1,
             "min_pixels": 262144, "max_pixels": 4194304, "filter_overlong_prompts": True,
             "filter_overlong_prompts_workers": 16},
    "algorithm": {"gamma": 1.0, "lam": 1.0, "adv_estimator": "grpo", "disable_kl": False, "use_kl_loss": False,
                  "kl_penalty": "kl", "kl_coef": 1e-3, "kl_type": "fixed", "kl_horizon": 10000.0, "kl_target": 0.1,
                  "online_filtering": False, "filter_key": "overall", "filter_low": 0.01, "filter_high": 0.99},
    "trainer": {"total_epochs": 15, "max_steps": None, "project_name": "easy_r1", "experiment_name": "demo",
                "logger": _DICT, "nnodes": 1, "n_gpus_per_node": 8, "max_try_make_batch": 20, "critic_warmup": 0,
                "val_freq": -1, "val_before_train": True, "val_only": False, "val_generations_to_log": 0,
                "save_freq": -1, "save_limit": -1, "save_model_only": False, "save_checkpoint_path": None,
                "load_checkpoint_path": None, "ray_timeline": None, "find_last_checkpoint": True},
    "worker": {
        "hybrid_engine": True,
        "actor": {**_TRAIN, "clip_ratio_low": 0.2, "clip_ratio_high": 0.3, "clip_ratio_dual": 3.0,
                  "loss_type": "default", "padding_free": True, "use_torch_compile": True, "tau_positive": 1.0,
                  "tau_negative": 1.05, "disable_kl": False, "use_kl_loss": False, "kl_penalty": "kl",
                  "kl_coef": 0.0},
        "critic": {**_TRAIN, "cliprange_value": 0.5, "padding_free": False},
        "ref": {"strategy": "fsdp", "fsdp": _FSDP, "offload": _OFFLOAD,
                "micro_batch_size_per_device_for_experience": -1, "padding_free": False, "dynamic_batching": False,
                "ulysses_size": 1, "use_torch_compile": True},
        "reward": {"reward_function": None, "reward_function_kwargs": _DICT, "skip_special_tokens": True,
                   "num_cpus": 1, "reward_function_name": None},
        "rollout": {"name": "vllm", "n": 1, "temperature": 1.0, "top_p": 1.0, "top_k": -1, "seed": 1,
                    "limit_images": 0, "dtype": "bf16", "gpu_memory_utilization": 0.6, "ignore_eos": False,
                    "enforce_eager": False, "enable_chunked_prefill": False, "tensor_parallel_size": 2,
                    "max_model_len": None, "max_num_batched_tokens": 8192, "disable_log_stats": True,
                    "disable_tqdm": False, "val_override_config": _DICT, "prompt_length": -1, "response_length": -1,
                    "trust_remote_code": False},
    },
}  # fmt: skip
_W = "worker."
#: EasyR1's fields that set memory, as the VERL keys they stand for (the reference's micro-batch is the actor's:
#: ``WorkerConfig.post_init``; the actor's parameters are fp32 unless ``fsdp.torch_dtype`` says otherwise).
AS_VERL: dict[str, tuple[str, ...]] = {
    f"{_W}actor.model.model_path": ("actor_rollout_ref.model.path",),
    "trainer.n_gpus_per_node": ("trainer.n_gpus_per_node",),
    "trainer.nnodes": ("trainer.nnodes",),
    f"{_W}rollout.tensor_parallel_size": ("actor_rollout_ref.rollout.tensor_model_parallel_size",),
    f"{_W}rollout.gpu_memory_utilization": ("actor_rollout_ref.rollout.gpu_memory_utilization",),
    "data.max_prompt_length": ("data.max_prompt_length",),
    "data.max_response_length": ("data.max_response_length",),
    f"{_W}rollout.max_model_len": ("actor_rollout_ref.rollout.max_model_len",),
    f"{_W}rollout.n": ("actor_rollout_ref.rollout.n",),
    f"{_W}actor.micro_batch_size_per_device_for_experience": (
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
    ),
    f"{_W}actor.micro_batch_size_per_device_for_update": ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",),
    f"{_W}actor.offload.offload_params": ("actor_rollout_ref.actor.fsdp_config.param_offload",),
    f"{_W}actor.offload.offload_optimizer": ("actor_rollout_ref.actor.fsdp_config.optimizer_offload",),
    "data.rollout_batch_size": ("data.train_batch_size",),
    f"{_W}actor.global_batch_size": ("actor_rollout_ref.actor.ppo_mini_batch_size",),
    "trainer.max_steps": ("trainer.total_training_steps",),
    "trainer.save_freq": ("trainer.save_freq",),
    "trainer.val_freq": ("trainer.test_freq",),
    "algorithm.adv_estimator": ("algorithm.adv_estimator",),
    "algorithm.use_kl_loss": ("actor_rollout_ref.actor.use_kl_loss",),
    f"{_W}actor.model.lora.rank": ("actor_rollout_ref.model.lora_rank",),
    f"{_W}actor.model.lora.target_modules": ("actor_rollout_ref.model.target_modules",),
    f"{_W}actor.strategy": ("actor_rollout_ref.actor.strategy",),
    f"{_W}rollout.name": ("actor_rollout_ref.rollout.name",),
    f"{_W}hybrid_engine": ("actor_rollout_ref.hybrid_engine",),
    f"{_W}actor.model.enable_gradient_checkpointing": ("actor_rollout_ref.model.enable_gradient_checkpointing",),
    f"{_W}actor.padding_free": ("actor_rollout_ref.model.use_remove_padding",),
    f"{_W}rollout.enforce_eager": ("actor_rollout_ref.rollout.enforce_eager",),
    f"{_W}rollout.max_num_batched_tokens": ("actor_rollout_ref.rollout.max_num_batched_tokens",),
    f"{_W}actor.ulysses_size": ("actor_rollout_ref.actor.ulysses_sequence_parallel_size",),
}
#: Read to derive a value above, or said in a ``read:`` line: not unread.
_ALSO_READ = (f"{_W}actor.fsdp.enable_cpu_offload", "algorithm.disable_kl", f"{_W}actor.fsdp.torch_dtype",
              f"{_W}actor.dynamic_batching")  # fmt: skip
SOURCE = "hiyouga/EasyR1 b44b311"


def easyr1_config(
    launch: Launch, folder: Path, origin: str, lines: Mapping[str, str], preset: Mapping[str, object]
) -> Config:
    """The config of an EasyR1 launch: its ``config=`` file and overrides over EasyR1's defaults, validated by
    EasyR1's schema and checks, as the VERL-shaped tree the mapping reads."""
    base: dict[str, Any] = {}
    path: Path | None = None
    if launch.config_name:
        path = _config_file(launch.config_name, folder, origin)
        base = yaml_tree(path, str(path))
    commanded = {key for _, key, _ in launch.overrides}
    user = merged(base, [(p, k, t) for p, k, t in launch.overrides if p != "~"], origin)
    typed = _validated(user, origin, lines)
    values = deep_update(copy.deepcopy(_defaults(SCHEMA)), typed)
    _checks(values, origin)
    tree: dict[str, Any] = {}
    where: dict[str, str] = {}
    for easy, keys in AS_VERL.items():
        for key in keys:
            _put(tree, key, _get(values, easy))
            if easy in commanded:
                where[key] = f"{lines.get(easy, origin)} ({easy})"
            elif path is not None and _raw(base, easy) is not _ABSENT:
                where[key] = f"{path} ({easy})"
            else:
                where[key] = f"EasyR1's default ({easy}, {SOURCE})"
    actor = values["worker"]["actor"]
    offloaded = actor["fsdp"]["enable_cpu_offload"] is True
    for key in ("param_offload", "optimizer_offload"):
        if offloaded:
            _put(tree, f"actor_rollout_ref.actor.fsdp_config.{key}", True)
            where[f"actor_rollout_ref.actor.fsdp_config.{key}"] = f"{origin} (worker.actor.fsdp.enable_cpu_offload)"
    reference = values["algorithm"]["disable_kl"] is not True
    _put(tree, "algorithm.use_kl_in_reward", reference)
    where["algorithm.use_kl_in_reward"] = f"{origin} (algorithm.disable_kl={not reference}: a reference policy " + (
        "is loaded)" if reference else "is not loaded)"
    )
    _put(tree, "actor_rollout_ref.rollout.free_cache_engine", True)
    where["actor_rollout_ref.rollout.free_cache_engine"] = (
        f"EasyR1 always sleeps vLLM between generation and training ({SOURCE}: verl/workers/rollout/"
        "vllm_rollout_spmd.py, enable_sleep_mode)"
    )
    dtype = actor["fsdp"]["torch_dtype"] or "fp32"
    _put(tree, "actor_rollout_ref.actor.fsdp_config.model_dtype", dtype)
    config = Config(tree, origin, SOURCE, "EasyR1", given=None, lines=where, label="EasyR1")
    config.reads.append(f"for EasyR1 ({SOURCE}), its fields named as EasyR1 names them")
    if actor["dynamic_batching"] is True:
        config.reads.append(
            "worker.actor.dynamic_batching: EasyR1 packs micro-batches up to micro-batch × the longest sequence "
            "tokens, read as the fixed micro-batch (the same tokens at most)"
        )
    unread = sorted(k for k in _flat(typed) if k not in AS_VERL and not k.startswith(_ALSO_READ))
    if unread:
        config.reads.append(f"not used by the answer (no floor, phase or scope reads them): {', '.join(unread)}")
    return config


def easyr1_written(written: Mapping[str, str]) -> dict[str, str]:
    """How errors name each setting: by the EasyR1 keys that give it."""
    back = {verl: easy for easy, keys in AS_VERL.items() for verl in keys}
    return {s: ", ".join(dict.fromkeys(back.get(k, k) for k in w.replace(" × ", ", ").split(", "))) for s, w in
            written.items()}  # fmt: skip


_MISSING_SENTINEL = object()


def _config_file(name: str, folder: Path, origin: str) -> Path:
    """``config=FILE`` as EasyR1 opens it: from the folder it runs in, looked for from the script's folder up."""
    path = Path(name)
    places = [path] if path.is_absolute() else [f / path for f in (folder, *folder.parents)][:6]
    for place in places:
        if place.is_file():
            return place
    raise InputError(f"{origin}: config={quote(name)}: no such file here (looked under the script's folder and above)")


def _defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (_defaults(v) if isinstance(v, Mapping) else None if v is _DICT else v) for k, v in schema.items()}


def _validated(user: Mapping[str, Any], origin: str, lines: Mapping[str, str]) -> dict[str, Any]:
    """``user`` checked against the schema: an unknown key or a value of the wrong type is EasyR1's refusal."""
    out: dict[str, Any] = {}
    for key, value in _flat_items(user):
        field = _field(key)
        where = lines.get(key, origin)
        if field is _MISSING_SENTINEL:
            raise InputError(f"{where}: EasyR1's config has no key {key} (EasyR1 refuses it before running)")
        if isinstance(field, Mapping):
            raise InputError(f"{where}: EasyR1 refuses {key}={quote(value)}: {key} is a section of its config")
        if field is not _DICT and field is not None:
            kind = {bool: "bool", int: "int64", float: "float64", str: "string"}[type(field)]
            value, _ = as_omegaconf(value, kind)
            if value is not None and not _fits(value, kind):
                raise InputError(f"{where}: EasyR1 refuses {key}={quote(value)}: not a {kind.replace('64', '')}")
        _put(out, key, value)
    return out


def _fits(value: object, kind: str) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int64":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float64":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, str)


def _field(key: str) -> object:
    """The schema's default of ``key`` (a mapping for a section, :data:`_DICT` inside a free mapping)."""
    node: object = SCHEMA
    for part in key.split("."):
        if node is _DICT:
            return _DICT
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING_SENTINEL
        node = node[part]
    return node


def _checks(values: Mapping[str, Any], origin: str) -> None:
    """EasyR1's own checks before a run."""
    data, actor, rollout = values["data"], values["worker"]["actor"], values["worker"]["rollout"]
    n, gpus = rollout["n"], values["trainer"]["n_gpus_per_node"] * values["trainer"]["nnodes"]

    def refuse(what: str) -> InputError:
        return InputError(f"{origin}: EasyR1 refuses this config before running: {what}")

    if data["rollout_batch_size"] % max(actor["global_batch_size"], 1):
        raise refuse("data.rollout_batch_size must be divisible by worker.actor.global_batch_size")
    if (data["rollout_batch_size"] * n) % max(actor["micro_batch_size_per_device_for_experience"], 1):
        raise refuse("data.rollout_batch_size × worker.rollout.n must be divisible by the experience micro-batch")
    if values["algorithm"]["adv_estimator"] in ("grpo", "rloo") and n == 1:
        raise refuse("GRPO and RLOO need worker.rollout.n above 1")
    per_device = actor["global_batch_size"] * (n if n > 1 else 1) // max(gpus // max(actor["ulysses_size"], 1), 1)
    if per_device == 0:
        raise refuse("worker.actor.global_batch_size × ulysses size must be larger than the number of GPUs")
    if per_device % max(actor["micro_batch_size_per_device_for_update"], 1):
        raise refuse("the actor's global batch per device must be divisible by its update micro-batch")
    if actor["fsdp"]["enable_cpu_offload"] and per_device != actor["micro_batch_size_per_device_for_update"]:
        raise refuse("FSDP's CPU offload (worker.actor.fsdp.enable_cpu_offload) with gradient accumulation")


def _get(tree: Mapping[str, Any], key: str) -> object:
    node: object = tree
    for part in key.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _put(tree: dict[str, Any], key: str, value: object) -> None:
    *parents, leaf = key.split(".")
    for part in parents:
        tree = tree.setdefault(part, {})
    tree[leaf] = value


def _flat_items(tree: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        field = _field(dotted)
        if isinstance(value, Mapping) and isinstance(field, Mapping):
            out += _flat_items(value, dotted + ".")
        else:
            out.append((dotted, value))
    return out


def _flat(tree: Mapping[str, Any]) -> list[str]:
    return [k for k, _ in _flat_items(tree)]
