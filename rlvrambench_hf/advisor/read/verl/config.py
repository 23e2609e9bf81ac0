"""A VERL run as a plan: its config tree (YAML, a mapping, or a launch script's overrides over a base config and
VERL's own defaults) read through :data:`~.mapping.VERL_MAPPING`.

VERL's defaults are those of the VERL the run uses (:mod:`.versions`): the installed VERL's packaged, Hydra-composed
trainer config ``trainer/config/_generated_ppo_trainer.yaml`` (older releases: a flat ``ppo_trainer.yaml``), found
without importing it (``importlib.util.find_spec``); without VERL, or for another ``--verl-version``, the
memory-relevant defaults this package ships for that release. Values are read as OmegaConf reads them
(:mod:`.values`); OmegaConf interpolations of the mapped keys (``${data.max_prompt_length}``,
``${oc.select:key,default}``, ``${oc.env:NAME,default}``) are resolved over the merged tree.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ....errors import InputError, quote
from ....userfile import parse_structured, read_text
from ..checks import quoted
from ..shell.environment import note_environment
from .hydra import HydraSweep, hydra_value, plain
from .values import check_digits
from .versions import LOOK_UP, NEWEST, LookUp, Version, default_tree, installed_version, parse_version

_ABSENT = object()
#: OmegaConf's value of a mandatory key not yet given.
MISSING_VALUE = "???"
_INTERPOLATION = re.compile(r"^\$\{(.*)\}$", re.S)
#: The packaged trainer configs of VERL, most complete first.
DEFAULT_CONFIGS = ("trainer/config/_generated_ppo_trainer.yaml", "trainer/config/ppo_trainer.yaml")


@dataclass(frozen=True)
class Config:
    """A merged config tree, what it was read from, and where the defaults under it come from (``defaults``: their
    file; ``label``: whose they are, ``VERL 0.9.1``); ``given`` is the user's own tree (None: all of ``tree``),
    ``lines`` where each key was written (``run.sh line 12``), ``notes`` how a value was derived (a deprecated key
    converted), ``environment`` the environment variables each key's value came from, ``flags`` the scope flags
    reading raised and ``reads`` what the answer's ``read:`` lines say beyond each setting's source."""

    tree: dict[str, Any]
    origin: str
    defaults: str | None
    tool: str = "VERL"
    given: dict[str, Any] | None = None
    lines: Mapping[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    label: str = "VERL"
    version: Version | None = None
    environment: Mapping[str, list[str]] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    removed: set[str] = field(default_factory=set)  # keys deleted with Hydra's ~key (defaults included)

    def source(self, key: str) -> str:
        """Where the value of ``key`` comes from: the user's file (and line), a conversion, or the defaults."""
        if key in self.notes:
            return self.notes[key]
        if self.given is None or _raw(self.given, key) is not _ABSENT:
            names = self.environment.get(key)
            where = self.lines.get(key, self.origin)
            return f"{where} (from the environment: {', '.join('$' + n for n in names)})" if names else where
        if self.defaults:
            return f"{self.label}'s default ({short_path(self.defaults)})"
        return f"{self.tool}'s default"


def short_path(path: str) -> str:
    """A packaged config's path from ``verl/trainer/`` on."""
    path = path.replace(os.sep, "/")
    return path[path.rfind("verl/trainer/") :] if "verl/trainer/" in path else path


def verl_folders() -> list[Path]:
    """The folders of the installed ``verl`` package (found, never imported); empty when it is not installed."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("verl")
    except (ImportError, ValueError):
        return []
    return [Path(folder) for folder in (spec.submodule_search_locations or [])] if spec else []


def installed_defaults(relatives: Sequence[str] = DEFAULT_CONFIGS) -> tuple[dict[str, Any], str] | None:
    """VERL's packaged trainer config (the first of ``relatives`` found) and where it is, or None when VERL is not
    importable here."""
    for folder in verl_folders():
        for relative in relatives:
            path = folder / relative
            if path.is_file():
                tree = packaged_tree(read_text(path, "VERL's trainer config"), str(path))
                if isinstance(tree, dict):
                    tree.pop("defaults", None)
                    return tree, str(path)
    return None


#: The kind of the advisor's store entries of a parsed packaged config; bump :data:`PARSED_FORMAT` when what is
#: stored changes in a way the code does not show.
PARSED_KIND, PARSED_FORMAT = "verl-config", 1


def packaged_tree(text: str, name: str) -> object:
    """``text`` (a packaged config of VERL's, ``name``) parsed as YAML, from the advisor's store when the same text
    was parsed before by the same code and PyYAML (keyed by its SHA-256; VERL's generated config is 40 KiB of YAML
    read on every answer)."""
    import hashlib

    from ....data.tables.kept import library_signature
    from ...store import load_parsed

    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    key = (digest, library_signature("yaml"))
    return load_parsed(PARSED_KIND, PARSED_FORMAT, key, lambda: parse_structured(text, name, ".yaml"), object)


def merged(base: Mapping[str, Any], overrides: Sequence[tuple[str, str, str | None]], name: str) -> dict[str, Any]:
    """``base`` with Hydra overrides applied in order (``~key`` deletes, ``+`` / ``++`` add)."""
    tree = copy.deepcopy(dict(base))
    for prefix, key, text in overrides:
        parts = key.split(".")
        node = tree
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        if prefix == "~":
            node.pop(parts[-1], None)
            continue
        check_digits(text or "", f"{name}: {key}")
        try:
            node[parts[-1]] = hydra_value(text)
        except HydraSweep as exc:
            raise HydraSweep(f"{name}: {prefix}{key}={exc}") from None
    return tree


def deep_update(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``top`` merged in, nested mappings key by key."""
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            deep_update(base[key], value)
        else:
            base[key] = plain(value)
    return base


def yaml_tree(path: str | os.PathLike[str], name: str, text: str | None = None) -> dict[str, Any]:
    """A VERL config YAML (``text`` when it was read already, e.g. from a pipe) as a tree, ``defaults:`` dropped."""
    if text is None:
        text = read_text(path, "VERL config")
    data = parse_structured(text, name, Path(path).suffix.lower())
    if not isinstance(data, dict):
        raise InputError(f"{name}: a VERL config is a mapping (actor_rollout_ref:, data:, trainer:, ...)")
    data.pop("defaults", None)
    return data


def with_defaults(
    top: Mapping[str, Any],
    origin: str,
    *,
    packaged: Sequence[str] = DEFAULT_CONFIGS,
    lines: Mapping[str, str] | None = None,
    version: Version | None = None,
    environment: Mapping[str, list[str]] | None = None,
    installed: str | None | LookUp = LOOK_UP,
) -> Config:
    """``top`` over the defaults of the VERL the run uses: the installed one's packaged config (``packaged``: which
    of them) when that is the VERL asked for, else the defaults this package ships for ``version``; what VERL does
    to it before a run is :func:`~.checks.checked`'s. ``installed``: the installed VERL's version when the caller
    read it already (:func:`~.versions.installed_version`)."""
    _visible_keys(top, origin)
    version = version or Version(NEWEST, "unknown")
    installed = installed_version() if isinstance(installed, LookUp) else installed
    mine = version.how != "given" or (installed is not None and parse_version(installed).minor == version.minor)
    found = installed_defaults(packaged) if mine else None
    if found is not None:  # a tree of this call's own (parsed, or read from the store, for it): not copied
        (tree, where), label = found, (f"VERL {installed}" if installed else "VERL")
    else:
        (base, where), label = default_tree(version), version.label
        base = deep_update(base, PACKAGED_EXTRAS.get(packaged[-1], {})) if packaged != DEFAULT_CONFIGS else base
        tree = copy.deepcopy(base)
    return Config(deep_update(tree, top), origin, where, given=copy.deepcopy(dict(top)),
                  lines=dict(lines or {}), label=label, version=version,
                  environment=dict(environment or {}))  # fmt: skip


def _visible_keys(tree: Mapping[str, Any], origin: str, prefix: str = "") -> None:
    """A key holding an invisible or control character is no key of VERL's config (it only looks like one)."""
    import unicodedata

    for key, value in tree.items():
        name = f"{prefix}{key}"
        if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in str(key)):
            raise InputError(f"{origin}: key {quote(name)} holds an invisible or control character")
        if isinstance(value, Mapping):
            _visible_keys(value, origin, f"{name}.")


#: What VERL's other packaged trainer configs change in the memory-relevant defaults of ``ppo_trainer``
#: (``verl/trainer/config/ppo_megatron_trainer.yaml``: the Megatron strategy for the actor, reference and critic).
PACKAGED_EXTRAS: dict[str, dict[str, Any]] = {
    "trainer/config/ppo_megatron_trainer.yaml": {
        "actor_rollout_ref": {"actor": {"strategy": "megatron"}, "ref": {"strategy": "megatron"}},
        "critic": {"strategy": "megatron"},
    },
}


def lookup(tree: Mapping[str, Any], key: str, origin: str, depth: int = 0) -> object:
    """The value of a dotted ``key`` (:data:`_ABSENT` if absent, or OmegaConf's mandatory ``???`` that no one
    filled in, as VERL's own ``rollout.name``), interpolations resolved."""
    node = _raw(tree, key)
    if node is _ABSENT or node == MISSING_VALUE:
        return _ABSENT
    if isinstance(node, str) and _INTERPOLATION.match(node):
        return _interpolated(tree, key, node, origin, depth)
    return node


def _interpolated(tree: Mapping[str, Any], key: str, text: str, origin: str, depth: int) -> object:
    if depth > 20:
        raise InputError(f"{origin}: {key}: interpolation {quoted(text)} refers to itself")
    body = _INTERPOLATION.match(text).group(1).strip()  # type: ignore[union-attr]
    resolver, _, arguments = body.partition(":") if body.startswith("oc.") else ("", "", body)
    target, _, fallback = arguments.partition(",")
    if resolver == "oc.env":
        from ..shell.state import SECRET_NAME

        if SECRET_NAME.search(target.strip()):
            raise InputError(
                f"{origin}: {key} uses {quoted(text)}, an environment variable named as a secret, whose value is never "
                "read; write the value"
            )
        value = os.environ.get(target.strip())
        if value is not None:
            note_environment(target.strip(), value)
            return hydra_value(value)
        if fallback:
            return hydra_value(fallback)
        raise InputError(f"{origin}: {key}: {quoted(text)} needs the environment variable {target.strip()}, not set")
    if resolver not in ("", "oc.select"):
        raise InputError(f"{origin}: {key}: the resolver of {quoted(text)} is not one this reader knows")
    target = target.strip()
    if target.startswith("."):
        target = ".".join(key.split(".")[:-1] + [target.lstrip(".")])
    found = lookup(tree, target, origin, depth + 1)
    if found is _ABSENT:
        if resolver == "oc.select":
            return hydra_value(fallback) if fallback else None
        raise InputError(f"{origin}: {key}: {quoted(text)} refers to {target}, which the config does not have")
    return found


def _raw(tree: Mapping[str, Any], key: str) -> object:
    """The value written at a dotted ``key`` (:data:`_ABSENT` if absent), nothing resolved."""
    node: object = tree
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _ABSENT
        node = node[part]
    return node
