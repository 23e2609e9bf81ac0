"""VERL's versions as facts the package ships, so that a config reads as the VERL it runs on reads it, VERL installed
here or not: the memory-relevant defaults of each release's packaged trainer config, how it gives vLLM a
``max_model_len`` left null, whether it always loads a reference policy, and which pre-run checks it makes.

Source of every default: the ``verl/trainer/config/ppo_trainer.yaml`` (0.2 to 0.4) or
``verl/trainer/config/_generated_ppo_trainer.yaml`` (0.5 on) of the verl wheel on PyPI named in :data:`RELEASES`,
for the keys the mapping reads (``advisor/plan/mapping.py``) and the keys VERL's checks read. Behaviour facts name
their file in the wheel. The version is the one the user names (``--verl-version``), else the installed VERL's (from
its package metadata, never imported), else not known: defaults are then the newest release's, and a check only
some releases make is a flag, not a refusal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ....errors import InputError, quote

#: Each minor release read, and the wheel whose files are the source of its facts.
RELEASES: dict[tuple[int, int], str] = {
    (0, 2): "0.2.0.post2", (0, 3): "0.3.0.post1", (0, 4): "0.4.1", (0, 5): "0.5.0", (0, 6): "0.6.1",
    (0, 7): "0.7.1", (0, 8): "0.8.0", (0, 9): "0.9.1",
}  # fmt: skip
NEWEST = max(RELEASES)
_FLAT, _GENERATED = "verl/trainer/config/ppo_trainer.yaml", "verl/trainer/config/_generated_ppo_trainer.yaml"
_A, _R, _M = "actor_rollout_ref.actor.", "actor_rollout_ref.rollout.", "actor_rollout_ref.model."
_ALL = ((0, 2), NEWEST)
_BUDGET_OLD = "${actor_rollout_ref.actor.ppo_max_token_len_per_gpu}"
_BUDGET_NEW = "${oc.select:actor_rollout_ref.actor.ppo_max_token_len_per_gpu,16384}"

#: key -> ((first, last) release, value) rows; a release no row covers has no such key.
DEFAULTS: dict[str, tuple[tuple[tuple[tuple[int, int], tuple[int, int]], object], ...]] = {
    "actor_rollout_ref.hybrid_engine": ((_ALL, True),),
    f"{_M}path": ((_ALL, "~/models/deepseek-llm-7b-chat"),),
    f"{_M}enable_gradient_checkpointing": ((_ALL, True),),
    f"{_M}use_remove_padding": ((((0, 2), (0, 6)), False), (((0, 7), NEWEST), True)),
    f"{_M}lora_rank": ((((0, 4), NEWEST), 0),),
    f"{_M}target_modules": ((((0, 4), NEWEST), "all-linear"),),
    f"{_M}lora_adapter_path": ((((0, 6), NEWEST), None),),
    f"{_M}lora.rank": ((((0, 8), NEWEST), 0),),
    f"{_M}lora.adapter_path": ((((0, 8), NEWEST), None),),
    f"{_A}strategy": ((_ALL, "fsdp"),),
    f"{_A}ppo_mini_batch_size": ((_ALL, 256),),
    f"{_A}ppo_micro_batch_size": ((_ALL, None),),
    f"{_A}ppo_micro_batch_size_per_gpu": ((_ALL, None),),
    f"{_A}use_dynamic_bsz": ((_ALL, False),),
    f"{_A}ppo_max_token_len_per_gpu": ((_ALL, 16384),),
    f"{_A}ulysses_sequence_parallel_size": ((_ALL, 1),),
    f"{_A}use_kl_loss": ((_ALL, False),),
    f"{_A}fsdp_config.param_offload": ((_ALL, False),),
    f"{_A}fsdp_config.optimizer_offload": ((_ALL, False),),
    f"{_A}fsdp_config.model_dtype": ((((0, 6), NEWEST), "fp32"),),
    "actor_rollout_ref.ref.fsdp_config.param_offload": ((_ALL, False),),
    "actor_rollout_ref.ref.log_prob_micro_batch_size": ((_ALL, None),),
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": ((_ALL, None),),
    "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu": (
        (((0, 2), (0, 4)), _BUDGET_OLD),
        (((0, 5), NEWEST), _BUDGET_NEW),
    ),
    f"{_R}name": ((((0, 2), (0, 5)), "vllm"), (((0, 6), NEWEST), "???")),
    f"{_R}mode": ((((0, 4), (0, 6)), "sync"), (((0, 7), NEWEST), "async")),
    f"{_R}tensor_model_parallel_size": ((_ALL, 2),),
    f"{_R}gpu_memory_utilization": ((_ALL, 0.5),),
    f"{_R}free_cache_engine": ((_ALL, True),),
    f"{_R}enforce_eager": ((((0, 2), (0, 5)), True), (((0, 6), NEWEST), False)),
    f"{_R}load_format": ((((0, 2), (0, 5)), "dummy_dtensor"), (((0, 6), NEWEST), "dummy")),
    f"{_R}layered_summon": ((((0, 4), NEWEST), False),),
    f"{_R}max_model_len": ((((0, 3), NEWEST), None),),
    f"{_R}max_num_seqs": ((((0, 2), (0, 8)), 1024), (((0, 9), NEWEST), 256)),
    f"{_R}max_num_batched_tokens": ((_ALL, 8192),),
    f"{_R}enable_chunked_prefill": ((_ALL, True),),
    f"{_R}n": ((_ALL, 1),),
    f"{_R}log_prob_micro_batch_size": ((_ALL, None),),
    f"{_R}log_prob_micro_batch_size_per_gpu": ((_ALL, None),),
    f"{_R}log_prob_max_token_len_per_gpu": ((((0, 2), (0, 4)), _BUDGET_OLD), (((0, 5), NEWEST), _BUDGET_NEW)),
    "algorithm.adv_estimator": ((_ALL, "gae"),),
    "algorithm.use_kl_in_reward": ((((0, 4), NEWEST), False),),
    "data.train_batch_size": ((_ALL, 1024),),
    "data.max_prompt_length": ((_ALL, 512),),
    "data.max_response_length": ((_ALL, 512),),
    "trainer.n_gpus_per_node": ((_ALL, 8),),
    "trainer.nnodes": ((_ALL, 1),),
    "trainer.total_training_steps": ((_ALL, None),),
    "trainer.save_freq": ((_ALL, -1),),
    "trainer.test_freq": ((_ALL, -1),),
}

#: From this release, a null ``max_model_len`` gives vLLM the model's own context length (``max_position_embeddings``
#: of its config.json: ``verl/workers/rollout/vllm_rollout/vllm_async_server.py`` of 0.7.1); before, prompt +
#: response (``vllm_rollout_spmd.py``; 0.2 has no such key and always passes prompt + response).
MODEL_CONTEXT_FROM = (0, 7)
#: Up to this release, ``verl/trainer/main_ppo.py`` always adds the reference policy (from 0.4 only with a KL term:
#: ``use_kl_in_reward`` or ``use_kl_loss``).
ALWAYS_REFERENCE_UNTIL = (0, 3)
#: From this release, ``RayPPOTrainer._validate_config`` (``verl/trainer/ppo/ray_trainer.py``; from 0.6
#: ``verl/workers/config/actor.py``) refuses ``data.train_batch_size`` below ``actor.ppo_mini_batch_size``.
MINI_BATCH_CHECK_FROM = (0, 3)


@dataclass(frozen=True)
class Version:
    """The VERL a config is read for: its release (``minor``), how it was known (``how``: ``given``, ``installed``,
    or ``unknown``) and the version as written."""

    minor: tuple[int, int]
    how: str
    written: str = ""

    @property
    def known(self) -> bool:
        return self.how != "unknown"

    @property
    def label(self) -> str:
        """``VERL 0.9.1`` (the wheel whose facts are read)."""
        return f"VERL {RELEASES[self.minor]}"

    def since(self, first: tuple[int, int]) -> bool | None:
        """Whether this release is ``first`` or later (None: the version is not known)."""
        return self.minor >= first if self.known else None

    def describe(self) -> str:
        """The release read for and how it was found, for a ``read:`` line."""
        if self.how == "given":
            closest = "" if self.written.startswith(RELEASES[self.minor][:3]) else f", read as {self.label}"
            return f"VERL {self.written} (--verl-version{closest})"
        if self.how == "installed":
            return f"VERL {self.written} (installed here)"
        return f"{self.label}, the newest release this package knows (VERL's version is not known here: --verl-version)"


def parse_version(text: str, how: str = "given") -> Version:
    """A version as written (``0.4.1``, ``v0.3.0.post1``) read as the closest release this package knows; a
    one-line error for text that is not a version."""
    m = re.fullmatch(r"\s*v?([0-9]{1,3})\.([0-9]{1,3})(?:[.+-]?[0-9A-Za-z.+-]{0,40})?\s*", str(text))
    if m is None:
        raise InputError(f"--verl-version {quote(text)} is not a version (write it as 0.4.1)")
    minor = (int(m.group(1)), int(m.group(2)))
    if minor in RELEASES or minor > NEWEST:
        closest = min(minor, NEWEST)
    else:
        closest = max((r for r in RELEASES if r <= minor), default=min(RELEASES))
    return Version(closest, how, str(text).strip().lstrip("v"))


def installed_version() -> str | None:
    """The installed VERL's version from its package metadata (VERL is never imported), or None. Kept in the
    advisor's store while every place the metadata is looked for is as it was
    (:func:`~rlvrambench_hf.data.tables.kept.distribution_places`): :mod:`importlib.metadata` and the email parser
    it reads the metadata with take about 15 ms to import."""
    from ....data.tables.kept import distribution_places
    from ...store import load_parsed

    places = distribution_places("verl")
    if places is None:
        return _metadata_version()
    found = load_parsed(VERSION_KIND, VERSION_FORMAT, (places,), lambda: (_metadata_version(),), tuple)
    return found[0] if len(found) == 1 and isinstance(found[0], str | None) else _metadata_version()


#: The kind of the advisor's store entries of the installed VERL's version; bump :data:`VERSION_FORMAT` when what is
#: stored changes in a way the code does not show.
VERSION_KIND, VERSION_FORMAT = "verl-version", 1


def _metadata_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("verl")
    except (metadata.PackageNotFoundError, ValueError, OSError):
        return None


class LookUp:
    """The type of :data:`LOOK_UP`."""


#: The installed VERL's version not given by the caller: it is read from VERL's package metadata.
LOOK_UP = LookUp()


def version_for(given: str | None, installed: str | None | LookUp = LOOK_UP) -> Version:
    """The VERL a config is read for: ``given``, else the installed one's (``installed``, when the caller read it
    already: :func:`installed_version`), else not known (the newest facts)."""
    if given is not None:
        return parse_version(given)
    installed = installed_version() if isinstance(installed, LookUp) else installed
    if installed is not None:
        try:
            return parse_version(installed, "installed")
        except InputError:
            pass
    return Version(NEWEST, "unknown")


def default_tree(version: Version) -> tuple[dict[str, Any], str]:
    """The memory-relevant defaults of ``version`` as a config tree, and their source."""
    tree: dict[str, Any] = {}
    for key, rows in DEFAULTS.items():
        for (first, last), value in rows:
            if first <= version.minor <= last:
                node = tree
                *parents, leaf = key.split(".")
                for part in parents:
                    node = node.setdefault(part, {})
                node[leaf] = value
    source = _GENERATED if version.minor >= (0, 5) else _FLAT
    return tree, f"{source}, shipped with this package"
