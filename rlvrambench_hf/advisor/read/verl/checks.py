"""What VERL itself does to a config before a run, done to the merged tree: the deprecated global micro-batch keys
converted to per-GPU ones, a Megatron actor's offloads and an adapter path's rank read where the mapping looks,
known keys of forks built on VERL read with a flag (:data:`FORK_KEYS`), and the checks VERL makes before anything
runs (``verl/utils/config.py`` ``validate_config``, ``verl/workers/config/actor.py``; older releases
``verl/trainer/ppo/ray_trainer.py``) reported as the error VERL would raise, never as a memory outcome. A check only
some releases make (:mod:`.versions`) is a flag, not a refusal, when the release is not known.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ....errors import InputError, quote
from ....userfile import MAX_CONFIG_BYTES, content_of, parse_json
from .versions import ALWAYS_REFERENCE_UNTIL, MINI_BATCH_CHECK_FROM, RELEASES

if TYPE_CHECKING:
    from .config import Config

_ARR = "actor_rollout_ref"
#: The deprecated global micro-batch keys, the per-GPU key each stands for, and the section whose Ulysses size
#: divides it.
DEPRECATED = (
    (f"{_ARR}.actor.ppo_micro_batch_size", f"{_ARR}.actor.ppo_micro_batch_size_per_gpu", "actor"),
    (f"{_ARR}.rollout.log_prob_micro_batch_size", f"{_ARR}.rollout.log_prob_micro_batch_size_per_gpu", "actor"),
    (f"{_ARR}.ref.log_prob_micro_batch_size", f"{_ARR}.ref.log_prob_micro_batch_size_per_gpu", "ref"),
)


class VerlRefuses(InputError):
    """A config VERL refuses before anything runs (its own config validation), with the key at fault."""

    def __init__(self, origin: str, key: str, what: str) -> None:
        super().__init__(f"{origin}: VERL refuses this config before running: {what}")
        self.key = key


def checked(config: Config) -> Config:
    """``config`` with VERL's own conversions applied (notes say where each value came from); VerlRefuses for
    what VERL's validation refuses."""
    _megatron_offloads(config)
    _adapter_rank(config)
    _fork_keys(config)
    _always_reference(config)
    if _get(config, f"{_ARR}.actor.use_dynamic_bsz") is not True:
        for old, new, section in DEPRECATED:
            _convert(config, old, new, section)
    else:
        for key, budget in TOKEN_BUDGETS:
            _from_budget(config, key, budget)
    _validate(config)
    return config


#: With dynamic batch sizes, each per-GPU micro-batch key and the token budget that replaces it.
TOKEN_BUDGETS = (
    (f"{_ARR}.actor.ppo_micro_batch_size_per_gpu", f"{_ARR}.actor.ppo_max_token_len_per_gpu"),
    (f"{_ARR}.rollout.log_prob_micro_batch_size_per_gpu", f"{_ARR}.rollout.log_prob_max_token_len_per_gpu"),
    (f"{_ARR}.ref.log_prob_micro_batch_size_per_gpu", f"{_ARR}.ref.log_prob_max_token_len_per_gpu"),
    ("critic.ppo_micro_batch_size_per_gpu", "critic.ppo_max_token_len_per_gpu"),
)


def _from_budget(config: Config, key: str, budget: str) -> None:
    """A token budget per GPU as the micro-batch of full-length sequences it holds (its memory at the worst case:
    budget x Ulysses size // (prompt + response), at least one: VERL packs ``max_token_len_per_gpu x
    ulysses_sequence_parallel_size`` tokens per micro-batch, split over the SP group), when the per-GPU micro-batch is
    not given."""
    tokens = _count(_get(config, budget))
    prompt, response = _count(_get(config, "data.max_prompt_length")), _count(_get(config, "data.max_response_length"))
    if _get(config, key) is not None or not (tokens and prompt and response):
        return
    sp_key = "critic.ulysses_sequence_parallel_size" if key.startswith("critic.") else (
        f"{_ARR}.{key.split('.')[1]}.ulysses_sequence_parallel_size" if key.startswith(_ARR) else "")  # fmt: skip
    own = _count(_get(config, sp_key)) if sp_key else None
    sp = own or _count(_get(config, f"{_ARR}.actor.ulysses_sequence_parallel_size")) or 1
    sequences = max(tokens * sp // (prompt + response), 1)
    over = f" x Ulysses {sp}" if sp > 1 else ""
    note = f"{config.source(budget)} (use_dynamic_bsz: {budget.rsplit('.', 1)[-1]}={tokens}{over} holds {sequences} "
    _set(config, key, sequences, note + f"sequence(s) of {prompt} + {response} tokens)")


def _get(config: Config, key: str) -> object:
    from .config import _ABSENT, lookup

    try:
        value = lookup(config.tree, key, config.origin)
    except InputError:
        return None
    return None if value is _ABSENT else value


def _set(config: Config, key: str, value: object, note: str) -> None:
    node = config.tree
    parts = key.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        node = child if isinstance(child, dict) else node.setdefault(part, {})
    node[parts[-1]] = value
    config.notes[key] = note


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _minimal_batch(config: Config) -> tuple[int | None, str]:
    """The batch VERL's check divides by: the GPUs, or under Megatron (VERL 0.4 and later) its data-parallel ranks
    times the per-GPU micro-batch."""
    gpus = _gpus(config)
    megatron = _get(config, f"{_ARR}.actor.strategy") == "megatron"
    if not gpus or not megatron or (config.version is not None and config.version.since((0, 4)) is False):
        return gpus, f"the {gpus} GPUs"
    sizes = [_count(_get(config, f"{_ARR}.actor.megatron.{k}") or 1) for k in (
        "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size")]  # fmt: skip
    micro = _count(_get(config, f"{_ARR}.actor.ppo_micro_batch_size_per_gpu"))
    if None in sizes or not micro:
        return None, ""
    ranks = gpus // (sizes[0] * sizes[1] * sizes[2])  # type: ignore[operator]
    return ranks * micro, f"{ranks} Megatron data-parallel ranks × ppo_micro_batch_size_per_gpu {micro}"


def _gpus(config: Config) -> int | None:
    per_node, nodes = _count(_get(config, "trainer.n_gpus_per_node")), _count(_get(config, "trainer.nnodes") or 1)
    return per_node * nodes if per_node and nodes else None


def _convert(config: Config, old: str, new: str, section: str) -> None:
    """VERL's workers divide a global micro-batch over the data-parallel ranks: global // (GPUs // Ulysses size)."""
    written, per_gpu = _get(config, old), _get(config, new)
    if written is None:
        return
    if per_gpu is not None:
        raise VerlRefuses(config.origin, old, f"both {old} (deprecated) and {new} are set; remove {old}")
    gpus, sp = _gpus(config), _count(_get(config, f"{_ARR}.{section}.ulysses_sequence_parallel_size") or 1)
    given = _count(written)
    if not given or not gpus or not sp:
        return
    ranks = max(gpus // sp, 1)
    if given * sp < gpus:
        raise VerlRefuses(
            config.origin, old, f"{old} = {given} × ulysses_sequence_parallel_size {sp} is below the {gpus} GPUs"
        )
    where = config.source(old)
    _set(config, new, given // ranks, f"{where} ({old}={given}, deprecated: {given} / {ranks} data-parallel ranks)")


#: Keys forks built on VERL add (Search-R1, RAGEN and others), each with the VERL key its value stands for.
FORK_KEYS = {f"{_ARR}.rollout.n_agent": f"{_ARR}.rollout.n"}


def _fork_keys(config: Config) -> None:
    """``rollout.n_agent``: such forks repeat each prompt ``n_agent`` times before generating ``n`` responses each,
    so a prompt's group holds ``n × n_agent`` sequences; read as VERL's group size, with a flag."""
    key, target = f"{_ARR}.rollout.n_agent", f"{_ARR}.rollout.n"
    agents = _get(config, key)
    if agents is None:
        return
    count, n = _count(agents), _count(_get(config, target)) or 1
    if count is None:
        raise VerlRefuses(config.origin, key, f"{key} = {quote(agents)} is not a positive count")
    if count > 1:
        _set(config, target, n * count, f"{config.source(key)} ({key}={count} × rollout.n={n})")
    config.flags.append(
        f"fork key {key}={count} read as the group size: rollout.n × n_agent = {n * count} sequences per prompt "
        "(a key of forks built on VERL, not VERL's own)"
    )


def _always_reference(config: Config) -> None:
    """VERL 0.2 and 0.3 always load a reference policy (later releases only with a KL term): read as a KL term on."""
    version = config.version
    if version is None or not version.known or version.minor > ALWAYS_REFERENCE_UNTIL:
        return
    key = "algorithm.use_kl_in_reward"
    if _get(config, key) is not True and _get(config, f"{_ARR}.actor.use_kl_loss") is not True:
        _set(config, key, True, f"{version.label} always loads a reference policy (verl/trainer/main_ppo.py)")


def _megatron_offloads(config: Config) -> None:
    if _get(config, f"{_ARR}.actor.strategy") != "megatron":
        return
    from .config import _ABSENT, _raw

    for name in ("param_offload", "optimizer_offload"):
        value, target = _get(config, f"{_ARR}.actor.megatron.{name}"), f"{_ARR}.actor.fsdp_config.{name}"
        written = config.given is None or _raw(config.given, target) is not _ABSENT  # the user's own, not a default
        if value is not None and not (written and _get(config, target) is not None):
            source = f"{_ARR}.actor.megatron.{name}"
            _set(config, target, value, f"{config.source(source)} ({source})")


def _adapter_rank(config: Config) -> None:
    """An adapter path without a rank: VERL trains that adapter (LoRA); its rank is the adapter's own ``r``, read
    when the folder is here."""
    path, rank = _get(config, f"{_ARR}.model.lora_adapter_path"), _get(config, f"{_ARR}.model.lora_rank")
    if not isinstance(path, str) or _count(rank):
        return
    adapter = Path(path).expanduser() / "adapter_config.json"
    if not os.path.lexists(adapter):
        return
    label = f"the LoRA adapter config {quote(str(adapter))} (actor_rollout_ref.model.lora_adapter_path)"
    tree = parse_json(content_of(str(adapter), label, MAX_CONFIG_BYTES), label)  # a regular file, bounded
    found = tree.get("r") if isinstance(tree, dict) else None
    if _count(found):
        _set(config, f"{_ARR}.model.lora_rank", found, f"{adapter} (r of the adapter at lora_adapter_path)")


def _validate(config: Config) -> None:
    """VERL's checks of the batch sizes before a run (``validate_config``, ``ActorConfig.validate``; before 0.6
    ``RayPPOTrainer._validate_config``)."""
    batch, n = _count(_get(config, "data.train_batch_size")), _count(_get(config, f"{_ARR}.rollout.n"))
    mini = _count(_get(config, f"{_ARR}.actor.ppo_mini_batch_size"))
    dynamic = _get(config, f"{_ARR}.actor.use_dynamic_bsz") is True
    minimal, what = _minimal_batch(config)
    checked_here = not dynamic or (config.version is not None and config.version.since((0, 6)) is False)
    if batch and n and minimal and checked_here and (batch * n) % minimal:
        raise VerlRefuses(
            config.origin,
            "data.train_batch_size",
            f"data.train_batch_size × rollout.n = {batch * n} is not divisible by {what}",
        )
    if batch and mini and not dynamic and batch < mini:
        what = f"data.train_batch_size = {batch} is below actor_rollout_ref.actor.ppo_mini_batch_size = {mini}"
        checks = config.version.since(MINI_BATCH_CHECK_FROM) if config.version else True
        if checks is True:
            raise VerlRefuses(config.origin, f"{_ARR}.actor.ppo_mini_batch_size", what)
        if checks is None:
            first = RELEASES[MINI_BATCH_CHECK_FROM]
            config.flags.append(
                f"{what}: VERL {first} and later refuse this before running, earlier releases run it (give "
                "--verl-version to read it as yours)"
            )
    micro = _count(_get(config, f"{_ARR}.actor.ppo_micro_batch_size"))
    if micro and mini and not dynamic and mini % micro:
        raise VerlRefuses(
            config.origin,
            f"{_ARR}.actor.ppo_micro_batch_size",
            f"ppo_mini_batch_size = {mini} is not divisible by ppo_micro_batch_size = {micro}",
        )


#: Sections of a VERL config whose keys change memory beyond what the mapping reads (a critic or reward model, a
#: Megatron layout, the reference's own offload, vLLM's scheduler).
MEMORY_SECTIONS = (
    "critic.",
    "reward_model.",
    f"{_ARR}.actor.megatron.",
    f"{_ARR}.ref.megatron.",
    f"{_ARR}.ref.fsdp_config.",
    f"{_ARR}.actor.fsdp_config.",
    f"{_ARR}.rollout.enable_chunked_prefill",
    f"{_ARR}.rollout.mode",
    f"{_ARR}.rollout.cpu_offload",
    f"{_ARR}.model.use_shm",
)
#: How many such keys the flag names before it counts the rest.
NAMED = 6


def unread_flag(config: Config, read: set[str]) -> list[str]:
    """One flag naming the keys the user wrote that matter for memory and that no mapping row reads."""
    from .record import whole_names

    keys = [k for k in _unread(config, read) if k.startswith(MEMORY_SECTIONS)]
    if not keys:
        return []
    named = whole_names(keys, NAMED)
    parts = "critic, reward model, Megatron layout, offloads, vLLM scheduler"
    return [f"VERL settings of parts that take memory ({parts}), read but not passed on: {named}"]


def unread_keys(config: Config, read: set[str], flag: list[str]) -> list[str]:
    """One ``read:`` line naming every other key the user wrote that the answer does not read (the flag names the
    first :data:`NAMED` of the memory-relevant ones; each key is named once)."""
    named = set([k for k in _unread(config, read) if k.startswith(MEMORY_SECTIONS)][:NAMED]) if flag else set()
    keys = [k for k in _unread(config, read) if k not in named]
    if not keys:
        return []
    return [f"not used by the answer (no floor, phase or scope reads them): {', '.join(keys)}"]


#: Keys VERL's own checks and conversions read (:func:`checked`), beside those the mapping reads.
CHECKED_KEYS = frozenset(
    {f"{_ARR}.actor.ppo_mini_batch_size", f"{_ARR}.actor.megatron.param_offload",
     f"{_ARR}.actor.megatron.optimizer_offload", *(budget for _, budget in TOKEN_BUDGETS)}
)  # fmt: skip


def _unread(config: Config, read: set[str]) -> list[str]:
    given: list[str] = []
    _flatten(config.given or {}, "", given)
    converted = " ".join(config.notes.values())  # keys a conversion read (named in its note)
    return sorted(k for k in given if k not in read and k not in CHECKED_KEYS and k not in converted)


def _flatten(tree: object, prefix: str, out: list[str]) -> None:
    if isinstance(tree, dict):
        for key, value in tree.items():
            _flatten(value, f"{prefix}{key}.", out)
    elif prefix:
        out.append(prefix[:-1])
