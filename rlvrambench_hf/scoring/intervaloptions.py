"""How intervals are asked for: the options every scorer and command shares, without numpy (so that a command's
``--help`` that shows their defaults imports no numerical library). :mod:`.intervals` computes them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InputError, quote

#: A scope with fewer units than this gets the exact range over its units instead of a bootstrap interval.
MIN_UNITS = 20
DEFAULT_LEVEL = 0.95
DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0
MAX_RESAMPLES = 100_000
BOOTSTRAP = "percentile_bootstrap"
RANGE = "range_over_units"


@dataclass(frozen=True)
class IntervalOptions:
    """How intervals are computed: the coverage ``level`` (0 < level < 1), the number of ``resamples`` and the
    ``seed`` of the random generator (the same seed gives the same intervals)."""

    level: float = DEFAULT_LEVEL
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED

    def __post_init__(self) -> None:
        level, resamples, seed = self.level, self.resamples, self.seed
        if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
            raise InputError(f"interval level {quote(level)} must be a number between 0 and 1 (e.g. 0.95)")
        if isinstance(resamples, bool) or not isinstance(resamples, int) or not 100 <= resamples <= MAX_RESAMPLES:
            raise InputError(f"interval resamples {quote(resamples)} must be an integer from 100 to {MAX_RESAMPLES}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InputError(f"interval seed {quote(seed)} must be a non-negative integer")

    def as_json(self) -> dict[str, Any]:
        return {"level": self.level, "resamples": self.resamples, "seed": self.seed}


#: What the ``intervals`` keyword of every scorer accepts: None/False (no intervals), True (the defaults), a
#: mapping with any of ``level``, ``resamples``, ``seed``, or :class:`IntervalOptions`.
IntervalsLike = IntervalOptions | Mapping[str, Any] | bool | None
