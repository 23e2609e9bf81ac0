"""A TRL run's shell launcher, read as bash would run it (:mod:`..shell.run`), never run: ``accelerate launch
[--config_file FILE] [--num_processes N] [--num_machines M] [--multi_gpu | --use_deepspeed | --use_fsdp ...]
script.py --config recipe.yaml [--field value ...]`` (the way open-r1 and TRL's documentation launch), ``python -m
accelerate.commands.launch ...`` or ``trl grpo --config recipe.yaml ...``.

Accelerate's own options become the keys of its config they stand for (the command line wins over the config file,
as accelerate has it); the training script and its arguments are read by :mod:`.script` (a script not here, or one
that takes its config from the command line, by its arguments).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ....errors import InputError
from ..shell.run import run_script
from ..shell.state import unresolved

#: accelerate launch's options that take no value.
_FLAGS = frozenset(
    {"multi_gpu", "use_deepspeed", "use_fsdp", "use_megatron_lm", "cpu", "use_cpu", "tpu", "use_xpu", "same_network",
     "debug", "quiet", "q", "no_python", "module", "m", "enable_cpu_affinity", "fsdp_offload_params_flag"}
)  # fmt: skip
#: accelerate launch's options that set a key of its config file (the key as :data:`..trl_mapping.ACCELERATE_KEYS`
#: flattens it) and, for the flags, the value they set.
_OPTIONS: dict[str, tuple[str, object]] = {
    "num_processes": ("num_processes", None),
    "num_machines": ("num_machines", None),
    "zero_stage": ("zero_stage", None),
    "offload_param_device": ("offload_param_device", None),
    "offload_optimizer_device": ("offload_optimizer_device", None),
    "fsdp_offload_params": ("fsdp_offload_params", None),
    "fsdp_version": ("fsdp_version", None),
    "multi_gpu": ("distributed_type", "MULTI_GPU"),
    "use_deepspeed": ("distributed_type", "DEEPSPEED"),
    "use_fsdp": ("distributed_type", "FSDP"),
}


@dataclass
class Launcher:
    """One launch: its line, the accelerate config file it names, the config keys its options set, the training
    script (None: ``trl grpo``) and the script's arguments."""

    line: int
    config_file: Path | None = None
    options: dict[str, object] = field(default_factory=dict)
    script: str | None = None
    arguments: list[str] = field(default_factory=list)


def read_launcher(
    text: str, name: str, folder: Path, arguments: Sequence[str] | None, environ: Mapping[str, str] | None = None
) -> Launcher:
    """The launch of a TRL run in a shell script; a one-line error when there is none, or more than one."""
    import os

    ran = run_script(text, name, dict(os.environ if environ is None else environ), arguments)
    found = [launch for line, words, _ in ran.commands if (launch := _launch(words, line, name, folder)) is not None]
    if not found:
        raise InputError(
            f"{name}: no TRL launch (accelerate launch ... script.py --config recipe.yaml, or trl grpo --config ...)"
        )
    if len(found) > 1:
        raise InputError(f"{name}: {len(found)} TRL launches (lines {', '.join(str(f.line) for f in found)}); "
                         "the advisor reads a launcher with one")  # fmt: skip
    return found[0]


def _launch(words: list[str], line: int, name: str, folder: Path) -> Launcher | None:
    heads = [w.rsplit("/", 1)[-1] for w in words]
    after = {h: heads.index(h) + 1 for h in ("trl", "accelerate") if h in heads}
    if "trl" in after and words[after["trl"] : after["trl"] + 1] == ["grpo"]:
        return Launcher(line, arguments=words[after["trl"] + 1 :])
    if "accelerate" in after and words[after["accelerate"] : after["accelerate"] + 1] == ["launch"]:
        return _accelerate(words, after["accelerate"] + 1, line, name, folder)
    if "accelerate.commands.launch" in words:
        return _accelerate(words, words.index("accelerate.commands.launch") + 1, line, name, folder)
    return None


def _accelerate(words: list[str], i: int, line: int, name: str, folder: Path) -> Launcher:
    """``accelerate launch``'s options from ``words[i]`` on, then its training script and the script's arguments."""
    launcher = Launcher(line)
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("-"):
            launcher.script, launcher.arguments = word, words[i:]
            break
        key, equals, value = word.lstrip("-").partition("=")
        key = key.replace("-", "_")
        if key in ("m", "module"):
            launcher.script, launcher.arguments = f"-m {words[i] if i < len(words) else ''}", words[i + 1 :]
            break
        if key in _FLAGS and not equals:
            value = "true"
        elif not equals:
            value, i = (words[i] if i < len(words) else ""), i + 1
        if key == "config_file":
            launcher.config_file = _found(value, folder, name, line)
        elif key in _OPTIONS:
            target, fixed = _OPTIONS[key]
            launcher.options[target] = fixed if fixed is not None else _option_value(value, key, name, line)
    if launcher.script is None:
        raise InputError(f"{name} line {line}: accelerate launch without a training script")
    return launcher


def _option_value(text: str, key: str, name: str, line: int) -> object:
    from ..verl.hydra import hydra_value
    from ..verl.values import check_digits

    found = unresolved(text)
    if found is not None:
        what, why = found
        raise InputError(f"{name} line {line}: --{key} uses {what}, which is {why}; write its value")
    check_digits(text, f"{name} line {line}: --{key}")
    return hydra_value(text)


def _found(path: str, folder: Path, name: str, line: int) -> Path:
    """A file the launcher names, as the run opens it: from the folder it runs in (the script's or one above it)."""
    found = unresolved(path)
    if found is not None:
        raise InputError(f"{name} line {line}: the file {found[0]} is {found[1]}; write its path")
    given = Path(path)
    places = [given] if given.is_absolute() else [f / given for f in (folder, *folder.parents)][:6]
    for place in places:
        if place.is_file():
            return place
    raise InputError(f"{name} line {line}: {path} is not here (looked from {folder} up)")


def script_path(launcher: Launcher, folder: Path) -> Path | None:
    """The training script as a file here, or None (a module, ``trl grpo``, a script of a repository not here)."""
    if launcher.script is None or launcher.script.startswith("-m ") or unresolved(launcher.script):
        return None
    given = Path(launcher.script)
    places = [given] if given.is_absolute() else [f / given for f in (folder, *folder.parents)][:6]
    return next((p for p in places if p.is_file()), None)
