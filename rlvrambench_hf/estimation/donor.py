"""Donor copy (ESTIMATION.md §4.1): copy the label and peak of the most similar measured configuration.

Candidates share the target's workload and level; among them the key (GPU count differs, coarse family differs,
|ln(P_candidate / P_target)|, configuration id) is minimised. Outcomes play no part in the choice.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ..errors import InputError
from .features import coarse_family


@dataclass(frozen=True)
class Donor:
    """The chosen donor of one target: its row (settings and outcomes) and whether its GPU count matches."""

    row: Mapping[str, Any]
    gpu_count_matches: bool

    @property
    def configuration_id(self) -> str:
        return cast("str", self.row["configuration_id"])

    @property
    def state(self) -> str:
        return cast("str", self.row["observed_state"])

    @property
    def peak_mib(self) -> float | None:
        """The donor's largest completed peak, or None when it is not complete."""
        return self.row["max_completed_run_peak_mib"] if self.row["completed"] else None


def choose_donor(
    target: Mapping[str, Any], training: Sequence[Mapping[str, Any]], parameters: Mapping[str, int]
) -> Donor | None:
    """The donor of ``target`` among ``training`` rows (None when no row shares its workload and level).

    ``parameters`` maps each model id to its floating checkpoint elements. A model outside the measured families
    differs in family from every candidate.
    """
    family = coarse_family(target["model_id"])
    if target["model_id"] not in parameters:
        raise InputError(f"no model metadata for {target['model_id']}")
    p_target = parameters[target["model_id"]]
    best: tuple[bool, bool, float, str] | None = None
    chosen: Mapping[str, Any] | None = None
    for row in training:
        if row["workload_id"] != target["workload_id"] or row["configuration_level"] != target["configuration_level"]:
            continue
        key = (
            row["gpu_count"] != target["gpu_count"],
            family is None or coarse_family(row["model_id"]) != family,
            abs(math.log(parameters[row["model_id"]] / p_target)),
            row["configuration_id"],
        )
        if best is None or key < best:
            best, chosen = key, row
    if chosen is None or best is None:
        return None
    return Donor(chosen, gpu_count_matches=not best[0])
