"""Scope flags: where a plan leaves the measured ground (pure, vectorised over plans).

Each flag is a mask over plans with a short code (the sweep table's ``flags`` column) and a sentence per plan
(the answer's ``scope_flags``): the model family or the model not measured, settings outside the measured values
or ranges (of every measured record), other hardware, no donor for its workload and level, a plan outside the
measured cloud, and no model metadata.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import cast

import numpy as np

from ...estimation.features import FAMILIES, coarse_family
from ..plan.arrays import valid_mask
from .predict import SettingArrays
from .records import DEFINING_SETTINGS, Codes, MeasuredIndex

#: Settings compared by value (a value never measured is flagged); the others by range.
CATEGORICAL = ("model_id", "workload_id", "parameter_offload", "optimizer_offload", "free_cache_engine")
#: Settings a range flag can name (the model is flagged by family / pool membership instead).
RANGED = tuple(s for s in DEFINING_SETTINGS if s not in ("model_id", "device_capacity_mib"))


@dataclass(frozen=True)
class Flag:
    """One kind of flag: its code, the plans it applies to and the sentence of one plan."""

    code: str
    mask: np.ndarray
    sentence: Callable[[int], str]


def scope_flags(
    s: SettingArrays,
    codes: Codes,
    index: MeasuredIndex,
    pool_models: set[str],
    sizes: tuple[int, int],
    extra: Mapping[str, tuple[np.ndarray, Callable[[int], str]]],
) -> list[Flag]:
    """The flags of every plan; ``sizes`` is the measured range of floating checkpoint elements, ``extra`` more
    flags by code (hardware, no donor, outside the cloud, no metadata)."""
    flags = []
    families = sorted(set(FAMILIES.values()))
    measured = set(index.values["model_id"].to_pylist()) if "model_id" in index.values else set()
    family = np.array([coarse_family(m) is None and m not in measured for m in s.models] + [False])[s.model]
    flags.append(
        Flag(
            "family_not_measured",
            family,
            lambda i: (
                f"model family not measured: {s.models[s.model[i]]} is outside the measured families "
                f"({', '.join(families)})"
            ),
        )
    )
    known = [coarse_family(m) is not None or m in measured for m in s.models]
    unpooled = np.array([k and m not in pool_models for m, k in zip(s.models, known)] + [False])[s.model]
    flags.append(
        Flag(
            "model_not_measured",
            unpooled,
            lambda i: (
                f"model outside the references' fitting pool: {s.models[s.model[i]]} "
                + (
                    "(the release measured it outside the estimation pool)"
                    if s.models[s.model[i]] in measured
                    else "(its family is in)"
                )
            ),
        )
    )
    outside = {name: _outside(name, s, codes, index) for name in RANGED}
    size = s.metadata[:, 0]
    big = s.has_metadata & ((size < sizes[0]) | (size > sizes[1]))
    mask = big | np.logical_or.reduce([m for m in outside.values()])

    def ranges(i: int) -> str:
        parts = [_range_text(n, s, index, i) for n, m in outside.items() if m[i]]
        if big[i]:
            parts.append(f"floating_checkpoint_elements={int(size[i])} (measured {sizes[0]}-{sizes[1]})")
        return "settings outside the measured ranges: " + "; ".join(parts)

    flags.append(Flag("outside_ranges", mask, ranges))
    flags += [Flag(code, m, text) for code, (m, text) in extra.items()]
    return flags


def _outside(name: str, s: SettingArrays, codes: Codes, index: MeasuredIndex) -> np.ndarray:
    if name in s.valid:
        given = s.valid[name]
    elif name in s.table.column_names:
        given = valid_mask(s.table.column(name))
    else:
        return np.zeros(codes.rows, dtype=bool)
    if name in CATEGORICAL or name not in s.values:
        return given & (codes.codes[name] < 0)
    values = index.values[name]
    low, high = values[0].as_py(), values[len(values) - 1].as_py()
    return cast("np.ndarray", given & ((s[name] < low) | (s[name] > high)))


def _range_text(name: str, s: SettingArrays, index: MeasuredIndex, i: int) -> str:
    values = index.values[name].to_pylist()
    mine = s.table.column(name)[i].as_py()
    if name in CATEGORICAL or name not in s.values:
        return f"{name}={mine} (measured: {', '.join(map(str, values))})"
    return f"{name}={mine} (measured {values[0]}-{values[-1]})"
