"""Paired comparisons of two methods scored on the same units: the difference in each metric with its paired
bootstrap interval and a one-line reading, never one combined number.

Both methods are recomputed on the same resampled units (the same weights), so what the units have in common
cancels out of the difference. A scope with too few units gives the range of the per-unit differences instead.
Pure: the scorers hand in their point metrics and their metrics under each resample (or each unit alone).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .intervals import BOOTSTRAP, MIN_UNITS, percentile, plural


@dataclass(frozen=True)
class Phrase:
    """How a reading names a metric: a count with its verb and noun, or a rate with its name."""

    noun: str
    verb: str | None = None  # set for counts

    @property
    def is_count(self) -> bool:
        return self.verb is not None


#: The metrics a comparison reports, in this order, and how their readings name them.
PHRASES: dict[str, Phrase] = {
    "within_margin_recall": Phrase("within-margin recall"),
    "within_margin_approval_precision": Phrase("approval precision"),
    "approved_within_margin": Phrase("within-margin targets", "approves"),
    "approved_memory_failure": Phrase("memory failures", "approves"),
    "approved_above_margin": Phrase("above-margin targets", "approves"),
    "rejected_within_margin": Phrase("within-margin targets", "rejects"),
    "correct_three_state": Phrase("labels right", "gets"),
}
COMPARED_METRICS: tuple[str, ...] = tuple(PHRASES)


@dataclass(frozen=True)
class Side:
    """One method of a comparison: its name, point metrics and metrics under each draw (resample or unit)."""

    name: str
    point: Mapping[str, Any]
    draws: Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class Design:
    """How the draws of a comparison were made: the unit, how many there are, the method (a bootstrap, or each
    unit alone when they are too few) and the level."""

    unit: str
    units: int
    method: str
    level: float


def compare_scope(
    a: Side, b: Side, design: Design, *, marginal: bool = False, names: Sequence[str] = COMPARED_METRICS
) -> dict[str, Any]:
    """Per metric: both values, the difference A − B and its interval (or range over units), and the reading;
    with ``marginal``, each side's own interval too."""
    method, level = design.method, design.level
    out: dict[str, Any] = {}
    for name in names:
        x, y = a.point.get(name), b.point.get(name)
        differences = [_minus(p.get(name), q.get(name)) for p, q in zip(a.draws, b.draws)]
        if method == BOOTSTRAP:
            low, high, undefined = percentile(differences, level)
        else:
            defined = [d for d in differences if d is not None]
            low, high, undefined = (min(defined), max(defined), 0) if defined else (None, None, 0)
        entry: dict[str, Any] = {"a": x, "b": y, "difference": _minus(x, y), "low": low, "high": high}
        if undefined and method == BOOTSTRAP:
            entry["undefined_resamples"] = undefined
        if marginal:
            for label, side in (("a", a), ("b", b)):
                low_side, high_side = _ends(side, name, design)
                entry[f"{label}_interval"] = {"low": low_side, "high": high_side}
        entry["reading"] = reading(a.name, b.name, name, entry, design)
        out[name] = entry
    return {"method": method, "unit": design.unit, "units": design.units, "metrics": out}


def _ends(side: Side, name: str, design: Design) -> tuple[Any, Any]:
    """One side's own interval (or range over units) of ``name``."""
    if design.method == BOOTSTRAP:
        low, high, _ = percentile([d.get(name) for d in side.draws], design.level)
        return low, high
    values: list[Any] = [d[name] for d in side.draws if d.get(name) is not None]
    return (min(values), max(values)) if values else (None, None)


def _minus(x: Any, y: Any) -> Any:
    return None if x is None or y is None else x - y


def number(value: float | int) -> str:
    """A count as is, a rate with up to four decimals."""
    return str(value) if isinstance(value, int) else f"{value:.4f}".rstrip("0").rstrip(".")


def reading(a: str, b: str, name: str, entry: Mapping[str, Any], design: Design) -> str:
    """One sentence: "A approves 2 fewer memory failures than B (2 against 4), 95% interval 0–5 fewer"."""
    phrase = PHRASES.get(name, Phrase(name.replace("_", " ")))
    x, y, d = entry["a"], entry["b"], entry["difference"]
    if d is None:
        missing = a if x is None else b
        return f"{phrase.noun}: undefined for {missing} (zero denominator), no difference to state"
    more, fewer = ("more", "fewer") if phrase.is_count else ("higher", "lower")
    if phrase.is_count:
        head = (
            f"{a} and {b} {str(phrase.verb).removesuffix('s')} the same number of {phrase.noun} ({number(x)} each)"
            if d == 0
            else f"{a} {phrase.verb} {number(abs(d))} {more if d > 0 else fewer} {phrase.noun} than {b} "
            f"({number(x)} against {number(y)})"
        )
    else:
        head = (
            f"{a} and {b} have the same {phrase.noun} ({number(x)})"
            if d == 0
            else f"{a}'s {phrase.noun} is {number(abs(d))} {more if d > 0 else fewer} than {b}'s "
            f"({number(x)} against {number(y)})"
        )
    low, high = entry["low"], entry["high"]
    if low is None or high is None:
        return f"{head}; no interval (the difference is undefined in every resample)"
    span = _span_text(low, high, more, fewer)
    unit, units = design.unit, design.units
    if design.method == BOOTSTRAP and low == high == 0:
        return f"{head}; no difference in any resample"
    if design.method == BOOTSTRAP:
        tail = f", {design.level:.0%} interval {span}"
        if low <= 0 <= high:
            tail += " (the interval includes no difference)"
        return head + tail
    return (
        f"{head}; {units} {plural(unit, units)} are too few for an interval (at least {MIN_UNITS}): scored one "
        f"at a time, the difference runs {span}"
    )


def _span_text(low: float | int, high: float | int, more: str, fewer: str) -> str:
    if low == high == 0:
        return "0 to 0"
    if low >= 0:
        return f"{number(low)}–{number(high)} {more}" if low != high else f"{number(low)} {more}"
    if high <= 0:
        return f"{number(-high)}–{number(-low)} {fewer}" if low != high else f"{number(-low)} {fewer}"
    return f"from {number(-low)} {fewer} to {number(high)} {more}"
