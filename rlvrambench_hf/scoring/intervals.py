"""Bootstrap intervals over independent units, written once for every scorer.

A score is computed from units (target configurations, admission cases, held-out configurations) that are the
independent draws of the benchmark; rows that share a unit move together. :func:`resample_weights` draws, for a
seed, how often each unit appears in each resample (a resample of ``n`` units draws ``n`` with replacement, within
each stratum when there are strata); the scorer recomputes its metrics from those weights; :func:`percentile`
reads the interval off the resampled values (percentile bootstrap at a stated level).

Where a scope has fewer than :data:`MIN_UNITS` units, an interval would be a statement about very few draws and
would look far more certain than it is; the block then gives the exact range of the metric over the units (each
unit scored alone) and says so (:func:`range_block`). Everything here is pure and reproducible from the seed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputError, quote
from .intervaloptions import BOOTSTRAP as BOOTSTRAP  # the options, numpy-free; kept importable from here
from .intervaloptions import DEFAULT_LEVEL as DEFAULT_LEVEL
from .intervaloptions import DEFAULT_RESAMPLES as DEFAULT_RESAMPLES
from .intervaloptions import DEFAULT_SEED as DEFAULT_SEED
from .intervaloptions import MAX_RESAMPLES as MAX_RESAMPLES
from .intervaloptions import MIN_UNITS as MIN_UNITS
from .intervaloptions import RANGE as RANGE
from .intervaloptions import IntervalOptions as IntervalOptions
from .intervaloptions import IntervalsLike as IntervalsLike


def interval_options(value: IntervalsLike) -> IntervalOptions | None:
    """``value`` as :class:`IntervalOptions` (None when no intervals are asked for)."""
    if value is None or value is False:
        return None
    if value is True:
        return IntervalOptions()
    if isinstance(value, IntervalOptions):
        return value
    if isinstance(value, Mapping):
        unknown = sorted(str(k) for k in value if k not in ("level", "resamples", "seed"))
        if unknown:
            raise InputError(f"intervals takes level, resamples and seed, not {quote(unknown[0])}")
        return IntervalOptions(**value)
    raise InputError(f"intervals must be True, False, None or a mapping of level/resamples/seed, not {quote(value)}")


def resample_weights(units: int, options: IntervalOptions, stream: int = 0) -> np.ndarray:
    """``(resamples, units)`` counts: how often each unit is drawn in each resample (each row sums to ``units``).

    ``stream`` separates independent draws of the same seed (e.g. one per held-out fold)."""
    rng = np.random.default_rng([options.seed, stream])
    draws = rng.integers(0, units, size=(options.resamples, units))
    offsets = np.arange(options.resamples)[:, None] * units
    return np.bincount((draws + offsets).ravel(), minlength=options.resamples * units).reshape(-1, units)


def percentile(values: Sequence[float | int | None], level: float) -> tuple[float | int | None, ...]:
    """(low, high, undefined): the percentile interval of the defined resampled values at ``level`` (each end is
    a resampled value), and how many resamples left the value undefined (None)."""
    defined = np.array([v for v in values if v is not None], dtype=float)
    undefined = len(values) - len(defined)
    if not len(defined):
        return None, None, undefined
    tail = (1 - level) / 2
    low, high = np.quantile(defined, [tail, 1 - tail], method="inverted_cdf")
    return _number(low, values), _number(high, values), undefined


def _number(value: float, like: Sequence[float | int | None]) -> float | int:
    """An end of an interval: an int when the metric is a count."""
    return int(value) if all(isinstance(v, int) for v in like if v is not None) else float(value)


def bootstrap_block(
    point: Mapping[str, Any],
    draws: Sequence[Mapping[str, Any]],
    names: Sequence[str],
    *,
    unit: str,
    units: int,
    level: float,
) -> dict[str, Any]:
    """The interval block of one scope from its resampled metrics ``draws`` (a null point value has a null
    interval)."""
    metrics: dict[str, dict[str, Any]] = {}
    for name in names:
        if point.get(name) is None:
            metrics[name] = {"low": None, "high": None}
            continue
        low, high, undefined = percentile([d.get(name) for d in draws], level)
        metrics[name] = {"low": low, "high": high}
        if undefined:
            metrics[name]["undefined_resamples"] = undefined
    return {"method": BOOTSTRAP, "unit": unit, "units": units, "metrics": metrics}


def range_block(per_unit: Sequence[Mapping[str, Any]], names: Sequence[str], *, unit: str) -> dict[str, Any]:
    """The block of a scope with too few units: each metric's smallest and largest value over the units (each
    scored alone; units where it is undefined are skipped), and a note saying so."""
    metrics: dict[str, dict[str, Any]] = {}
    for name in names:
        values: list[Any] = [u[name] for u in per_unit if u.get(name) is not None]
        metrics[name] = {"low": min(values), "high": max(values)} if values else {"low": None, "high": None}
    n = len(per_unit)
    return {
        "method": RANGE,
        "unit": unit,
        "units": n,
        "metrics": metrics,
        "note": f"{n} {plural(unit, n)}: too few for a bootstrap interval (at least {MIN_UNITS}); low and high are "
        f"the smallest and largest value over the {plural(unit, n)}, each scored alone",
    }


def plural(unit: str, n: int) -> str:
    """``target configuration(s)`` from the unit's name ``target_configuration``."""
    words = unit.replace("_", " ")
    return words if n == 1 else words + "s"


def unit_block(
    statistic: Callable[[np.ndarray], Mapping[str, Any]],
    point: Mapping[str, Any],
    names: Sequence[str],
    *,
    unit: str,
    units: int,
    options: IntervalOptions,
    stream: int = 0,
) -> dict[str, Any]:
    """The interval block of a scope whose metrics ``statistic`` computes from integer unit weights (a unit
    drawn twice counts twice): a bootstrap interval, or the range over units when they are too few."""
    if units < MIN_UNITS:
        return range_block([statistic(np.eye(units, dtype=np.int64)[u]) for u in range(units)], names, unit=unit)
    weights = resample_weights(units, options, stream)
    draws = [statistic(w) for w in weights]
    return bootstrap_block(point, draws, names, unit=unit, units=units, level=options.level)


def confusion_draws(confusions: np.ndarray) -> list[dict[str, Any]]:
    """The label metrics (:func:`~.labels.metrics_from_confusion`) of each row of ``confusions`` (draws × 9 cells,
    predicted-major), computed once per distinct matrix."""
    from .labels import metrics_from_confusion

    distinct, inverse = np.unique(confusions, axis=0, return_inverse=True)
    metrics = [metrics_from_confusion(c.reshape(3, 3)) for c in distinct]
    return [dict(metrics[i]) for i in inverse.ravel()]


def numeric_names(metrics: Mapping[str, Any]) -> list[str]:
    """The keys of ``metrics`` whose values are numbers (or null), booleans and nested values excluded."""
    return [k for k, v in metrics.items() if v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))]


def settings(options: IntervalOptions, unit: str, why: str) -> dict[str, Any]:
    """The description of how a score file's intervals were made (its ``interval_settings``)."""
    return {
        **options.as_json(),
        "method": f"{BOOTSTRAP}: resample {plural(unit, 2)} with replacement, recompute, take the percentiles",
        "unit": unit,
        "why_this_unit": why,
        "minimum_units": MIN_UNITS,
        "too_few_units": f"{RANGE}: the exact range of each metric over the units, each scored alone",
    }
