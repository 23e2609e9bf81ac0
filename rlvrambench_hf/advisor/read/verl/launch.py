"""A VERL launch script read as text, never run: the ``key=value`` overrides of each ``python3 -m verl...`` command.

The script is read as bash would run it (:mod:`..shell.run`): variables, arrays, arithmetic, argument loops and the
arguments the user gives (none: the defaults the script sets). What the script computes at run time (``$(...)``,
backquotes, an unset variable, an argument not given) is a marker, an error only if an override the answer uses
reads it. A VERL launch runs VERL's trainer (``-m verl.trainer.main_ppo``, ``.../main_ppo.py``); its ``key=value``
words (Hydra's ``+`` / ``++`` / ``~`` too) are its overrides, ``--config-path`` / ``--config-name`` its base config.
EasyR1 runs ``-m verl.trainer.main config=FILE`` with ``worker.*`` keys (:mod:`.easyr1`). Text without a launch but
with overrides (a pasted command line) is one launch.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ....errors import InputError, quote
from ..shell.run import Ran, run_script
from ..shell.state import unresolved as _unresolved

_OVERRIDE = re.compile(r"^(\+{0,2}|~)([A-Za-z_][\w.@/-]*)(=(.*))?$", re.S)
_VERL_MODULE = re.compile(r"^verl\.trainer\.main_ppo\w*$")
_VERL_SCRIPT = re.compile(r"(^|/)verl/trainer/main_ppo\w*\.py$|(^|/)main_ppo\w*\.py$")
#: EasyR1's trainer (its own package is also named ``verl``).
_EASYR1_MODULE = re.compile(r"^verl\.trainer\.main$")
_EASYR1_SCRIPT = re.compile(r"(^|/)verl/trainer/main\.py$")
#: VERL's other programs (supervised fine-tuning, generation, evaluation), as a module or a script.
_VERL_OTHER = re.compile(r"^verl\.trainer\.\w+$|(^|/)verl/trainer/\w+\.py$")


@dataclass
class Launch:
    """One launch: where it starts, its overrides in order (``(prefix, key, value text or None)``), the Hydra config
    it names (EasyR1: its ``config=`` file), the tool it runs and, per key, the environment variables its value
    came from."""

    line: int
    overrides: list[tuple[str, str, str | None]] = field(default_factory=list)
    config_path: str | None = None
    config_name: str | None = None
    tool: str = "VERL"
    environment: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Script:
    """A script's launches and what its reading says about itself: where it reads its arguments, and whether any
    were given."""

    launches: list[Launch]
    argument_line: int | None = None
    arguments_given: bool = False


def unresolved(text: str) -> str | None:
    """The first run-time value ``text`` depends on (``$MODEL``, ``$(...)``), or None."""
    found = _unresolved(text)
    return found[0] if found else None


def read_launches(
    text: str, name: str, environ: Mapping[str, str] | None = None, arguments: Sequence[str] | None = None
) -> list[Launch]:
    """The VERL launches of a script or command line; a one-line error when there is none."""
    return read_script(text, name, environ, arguments).launches


def read_script(
    text: str, name: str, environ: Mapping[str, str] | None = None, arguments: Sequence[str] | None = None
) -> Script:
    """The script's launches (:func:`read_launches`) and how it reads its arguments."""
    ran = run_script(text, name, dict(os.environ if environ is None else environ), arguments)
    for line, body in ran.shells:
        if "verl.trainer" in body or "main_ppo" in body:
            raise InputError(
                f"{name} line {line}: a VERL launch in a here-document that another shell runs is not read (that "
                "shell expands it with its own values); write the launch in the script itself"
            )
    launches, loose = _launches(ran, name)
    if not launches and loose.overrides:
        launches.append(loose)
    if not launches and ran.exit_line is not None:
        _other_program(text, name)
        given = "with the arguments given" if ran.arguments_given else "run without arguments (give them after --)"
        raise InputError(f"{name} line {ran.exit_line}: the script ({given}) exits here, before any VERL launch")
    if not launches:
        raise InputError(f"{name}: no VERL launch (python3 -m verl.trainer.main_ppo key=value ...) and no overrides")
    return Script(launches, ran.argument_line, ran.arguments_given)


def _launches(ran: Ran, name: str) -> tuple[list[Launch], Launch]:
    launches: list[Launch] = []
    loose = Launch(ran.commands[0][0] if ran.commands else 1)
    other: tuple[int, str] | None = None  # the first VERL program run that is not its RL trainer
    for line, command, taints in ran.commands:
        launch = _launch_of(command, taints, line, name)
        if launch is not None:
            launches.append(launch)
            continue
        for word, names in zip(command, taints):
            parsed = _override(word)
            if parsed is not None and "." in parsed[1]:
                loose.overrides.append(parsed)
                if names:
                    loose.environment[parsed[1]] = names
        program = next((w for w in command if _VERL_OTHER.search(w)), None)
        other = other or ((line, program) if program else None)
    if not launches and other:
        raise InputError(
            f"{name} line {other[0]}: runs {other[1]}, not VERL's RL trainer (verl.trainer.main_ppo): the advisor "
            "answers GRPO/PPO training runs"
        )
    return launches, loose


def _other_program(text: str, name: str) -> None:
    """A script that exits before it launches anything, and whose only VERL program is not the RL trainer, is refused
    for what it runs (its usage check stopped the reading, not the program)."""
    found = [(m.start(), m.group(1) or m.group(2)) for m in re.finditer(
        r"-m\s+(verl\.trainer\.\w+)|((?:^|[\s/])verl/trainer/\w+\.py)", text)]  # fmt: skip
    programs = [p.strip() for _, p in found]
    if programs and not any(_VERL_MODULE.match(p) or _VERL_SCRIPT.search(p) for p in programs):
        line = text.count("\n", 0, found[0][0]) + 1
        raise InputError(
            f"{name} line {line}: runs {programs[0]}, not VERL's RL trainer (verl.trainer.main_ppo): the advisor "
            "answers GRPO/PPO training runs"
        )


def key_lines(text: str, launch: Launch, name: str) -> dict[str, str]:
    """Where each override of ``launch`` is written: ``{key: "run.sh line 12"}`` (the first line at or after the
    launch's that writes ``key=``, else the last before it: an array's). One pass over the text."""
    wanted = {key for _, key, _ in launch.overrides}
    seen: dict[str, list[int]] = {}
    number = 1
    for line in text.replace("\r\n", "\n").split("\n"):
        if "=" in line:
            for m in re.finditer(r"(?:^|[\s'\"(])[+~]{0,2}([A-Za-z_][\w.@/-]*)=", line):
                if m.group(1) in wanted:
                    seen.setdefault(m.group(1), []).append(number)
        number += 1
    found: dict[str, str] = {}
    for key in wanted:
        numbers = seen.get(key)
        if numbers:
            after = [n for n in numbers if n >= launch.line]
            found[key] = f"{name} line {after[0] if after else numbers[-1]}"
    return found


def _launch_of(words: list[str], taints: list[list[str]], line: int, name: str) -> Launch | None:
    start, tool = _launch_start(words)
    if start is None:
        return None
    launch = Launch(line, tool=tool)
    index = start
    while index < len(words):
        word = words[index]
        index += 1
        option, equals, value = word.partition("=")
        if option in ("--config-path", "-cp", "--config-name", "-cn"):
            if not equals:
                value = words[index] if index < len(words) else ""
                index += 1
            if option in ("--config-path", "-cp"):
                launch.config_path = value
            else:
                launch.config_name = value
            continue
        parsed = _override(word)
        if parsed is None:
            if any(unicodedata.category(c) in ("Cc", "Cf") for c in word.partition("=")[0]):
                raise InputError(f"{name} line {line}: {quote(word.partition('=')[0])} holds an invisible or control "
                                 "character: Hydra refuses it as a key")  # fmt: skip
            continue
        if tool == "EasyR1" and parsed[1] == "config":
            launch.config_name = parsed[2]
            continue
        launch.overrides.append(parsed)
        if taints[index - 1]:
            launch.environment[parsed[1]] = taints[index - 1]
    return launch


def _launch_start(words: list[str]) -> tuple[int | None, str]:
    """The index of the first word after VERL's (or EasyR1's) module or script in a command, and which tool it
    runs; None when it runs neither."""
    for i, word in enumerate(words):
        module = words[i + 1] if word == "-m" and i + 1 < len(words) else ""
        if _VERL_MODULE.match(module):
            return i + 2, "VERL"
        if _EASYR1_MODULE.match(module):
            return i + 2, "EasyR1"
        if _VERL_SCRIPT.search(word):
            return i + 1, "VERL"
        if _EASYR1_SCRIPT.search(word):
            return i + 1, "EasyR1"
    return None, "VERL"


def _override(word: str) -> tuple[str, str, str | None] | None:
    m = _OVERRIDE.match(word)
    if m is None or (m.group(3) is None and m.group(1) != "~"):
        return None
    return m.group(1), m.group(2), m.group(4)
