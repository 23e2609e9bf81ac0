"""Helpers shared by the command modules: the source of a command and plain-text tables."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence

from ..data.sources import Source, open_source


def source_of(args: argparse.Namespace) -> Source:
    """The source named by the global ``--source`` / ``--revision`` options (or the environment)."""
    return open_source(args.source, args.revision)


def format_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A left-aligned plain-text table; ``None`` prints as an empty cell, floats with up to 4 decimals."""

    def cell(value: object) -> str:
        if value is None:
            return ""
        if isinstance(value, float):
            return f"{value:.4f}".rstrip("0").rstrip(".") if value == value else "nan"
        if isinstance(value, (list, tuple)):
            return ";".join(map(str, value))
        return str(value)

    body = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in body]
    return "\n".join(lines)
