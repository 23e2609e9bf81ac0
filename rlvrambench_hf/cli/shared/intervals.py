"""The interval options every scoring command shares (``--intervals``, ``--level``, ``--seed``, ``--resamples``)
and the cells that print a value with its interval."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from ...errors import InputError
from ...scoring.intervaloptions import BOOTSTRAP, DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, IntervalOptions

OPTIONAL = (
    "add a bootstrap interval over the independent units (or the exact range where they are too few) to every rate "
    "and count of the score file"
)


def add_interval_options(parser: argparse.ArgumentParser, *, flag: str | None = OPTIONAL, always: bool = False) -> None:
    """``--intervals`` (with the help ``flag``; None: no such flag) and its three settings; with ``always`` the
    intervals are computed whether or not ``--intervals`` is given (it then means what ``flag`` says)."""
    if flag is not None:
        parser.add_argument("--intervals", action="store_true", help=flag)
    parser.add_argument("--level", type=float, help=f"interval coverage, 0 < level < 1 (default {DEFAULT_LEVEL})")
    parser.add_argument(
        "--seed", type=int, help=f"seed of the resampling (default {DEFAULT_SEED}); same seed, same file"
    )
    parser.add_argument(
        "--resamples", type=int, help=f"bootstrap resamples, 100 to 100000 (default {DEFAULT_RESAMPLES})"
    )
    parser.set_defaults(intervals_always=always or flag is None, **({"intervals": False} if flag is None else {}))


def interval_options_of(args: argparse.Namespace) -> IntervalOptions | None:
    """The options the command line asked for (None: no intervals); a setting without ``--intervals`` is refused
    where intervals are optional."""
    given = {k: getattr(args, k) for k in ("level", "resamples", "seed") if getattr(args, k) is not None}
    if not args.intervals and not args.intervals_always:
        if given:
            raise InputError(f"--{next(iter(given))} needs --intervals")
        return None
    return IntervalOptions(**given)


def with_interval(value: Any, block: Mapping[str, Any] | None, name: str) -> str:
    """``0.9438 [0.9124, 0.9679]``: a value and its interval from a scope's block, or ``0.75 (per case 0.5–1)``:
    its range over the units, each scored alone, where they were too few."""
    shown = cell(value)
    if not block or name not in block["metrics"]:
        return shown
    ends = block["metrics"][name]
    if ends["low"] is None:
        return shown
    if block["method"] != BOOTSTRAP:
        unit = str(block["unit"]).replace("_", " ").split()[-1]
        return f"{shown} (per {unit} {cell(ends['low'])}–{cell(ends['high'])})"
    return f"{shown} [{cell(ends['low'])}, {cell(ends['high'])}]"


def units_cell(block: Mapping[str, Any]) -> str:
    """``94``, or ``4 (range)`` where the units were too few for a bootstrap interval."""
    return str(block["units"]) if block["method"] == BOOTSTRAP else f"{block['units']} (range)"


def cell(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".")
    return str(value)


def interval_legend(settings: Mapping[str, Any]) -> str:
    """One line saying how the printed intervals were made."""
    unit = str(settings["unit"]).replace("_", " ")
    return (
        f"[low, high]: {settings['level']:.0%} percentile bootstrap over {unit}s ({settings['resamples']} resamples, "
        f"seed {settings['seed']}); where a scope has fewer than {settings['minimum_units']} {unit}s, the range over "
        "them, each scored alone"
    )
