"""The workload a launch file's data files name, when no ``--workload`` is given.

VERL's (and EasyR1's) ``data.train_files`` (else ``data.val_files``) and TRL's ``dataset_name`` (a GRPOConfig file's,
or the first ``load_dataset("...")`` of a training script) are read as the user wrote them (VERL's own defaults are
not: they name no data of the user's). A workload the release measured is named when its id, or its legacy id, is a
word of those paths or names (``~/data/gsm8k/train.parquet``, ``openai/gsm8k``, ``MATH-lighteval``: words split at
anything but letters and digits, in any case); exactly one must be named. The ``read:`` line says which key named it,
or, when none or several are named, asks for ``--workload`` with the measured workloads. Values from the environment
are never printed: the line names the key and where it was written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .measured import Measured
from .shell.state import known_text

#: The keys that name a run's data, in the order they are looked at (the first that names a workload decides).
DATA_KEYS: tuple[str, ...] = ("data.train_files", "data.val_files", "dataset_name")


def workload_names(measured: Measured) -> dict[str, str]:
    """Every spelling of a measured workload (its id and its legacy id) -> its id."""
    names = {w: w for w in measured.workloads}
    names.update({legacy: w for legacy, w in measured.legacy.items()})
    return names


def named_workloads(value: object, measured: Measured) -> list[str]:
    """The measured workloads ``value`` (a path, a Hub id, or a list of them) names, sorted."""
    texts = [known_text(v) for v in _strings(value)]
    found = set()
    for spelling, workload in workload_names(measured).items():
        pattern = re.compile(rf"(?<![a-z0-9]){re.escape(spelling.lower())}(?![a-z0-9])")
        if any(pattern.search(text.lower()) for text in texts):
            found.add(workload)
    return sorted(found)


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        for item in value:
            yield from _strings(item)


def infer_workload(
    given: Mapping[str, Any], where: Mapping[str, str], measured: Measured, origin: str
) -> tuple[str | None, str | None, str]:
    """The workload the data keys of ``given`` (the user's own, dotted keys as written) name, the key that names
    it, and the ``read:`` line that says so; ``where`` gives each key's source (a file and line). No workload when
    no key or several workloads are named (the line then asks for ``--workload``)."""
    from .verl.config import _ABSENT, _raw  # the dotted lookup of every launch file's keys

    ask = f"name the one your data resembles with --workload ({', '.join(measured.workloads)})"
    looked: list[str] = []
    for key in DATA_KEYS:
        value = _raw(given, key)
        if value is _ABSENT or value is None:
            continue
        named = named_workloads(value, measured)
        place = re.sub(r" \(from the environment: ([^()]*)\)$", r", from the environment: \1", where.get(key, origin))
        if len(named) == 1:
            return (
                named[0],
                key,
                f"workload {named[0]}: {key} names it ({place}); --workload NAME to read it as another",
            )
        if len(named) > 1:
            return None, None, f"workload not inferred: {key} ({place}) names {' and '.join(named)}; {ask}"
        looked.append(f"{key} ({place})")
    if len(looked) > 1:
        said = f"neither {' nor '.join(looked)} names a workload the release measured"
    elif looked:
        said = f"{looked[0]} names no workload the release measured"
    else:
        said = f"the launch file names no data files or dataset ({', '.join(DATA_KEYS)})"
    without = (
        "records of any workload with these settings match, no level or donor applies, and the per-phase model takes "
        "every response at its cap"
    )
    return None, None, f"workload not inferred: {said}; {ask}; without it, {without}"
