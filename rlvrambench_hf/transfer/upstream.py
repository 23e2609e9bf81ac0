"""The task inputs in the reproduction repository's schema (``benchmark.py inputs`` of kobzaond/RLVRAMBench-reproduce),
so that a method written against upstream's inputs reads ours unchanged.

Upstream writes a JSON list with one object per task, sorted by task id: ``task_id``, ``track``, ``source`` (one
``{"settings": <configurations.csv row>, "measurements": <outcomes.csv row>}`` per distinct source, sorted by
configuration id) and ``targets`` (one ``{"query_id", "matched_source_configuration_id", "settings": <the target's
configurations.csv row>}`` per query, in ``queries.csv`` order). Rows are the CSV rows as text, in header order: a
blank cell is ``""``, a number is the text the file holds. Pure: the rows come in as lists of string mappings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import SchemaError, quote
from .key import ALL_TRACKS, check_track

Row = Mapping[str, str]


def upstream_task_inputs(
    queries: Sequence[Row], configurations: Sequence[Row], outcomes: Sequence[Row], track: str | None = None
) -> list[dict[str, Any]]:
    """``benchmark.py inputs``' task list for ``track`` (None or ``all``: every track)."""
    track = check_track(track)
    settings = _by_id(configurations, "configurations.csv")
    measured = _by_id(outcomes, "outcomes.csv")
    selected = [q for q in queries if track == ALL_TRACKS or q["track"] == track]
    tasks: dict[str, list[Row]] = {}
    for query in selected:
        for config_id in (query["source_configuration_id"], query["target_configuration_id"]):
            if config_id not in settings or config_id not in measured:
                raise SchemaError(f"query {query['query_id']}: configuration {config_id} has no settings or outcome")
        tasks.setdefault(query["task_id"], []).append(query)
    return [
        {
            "task_id": task_id,
            "track": part[0]["track"],
            "source": [
                {"settings": dict(settings[key]), "measurements": dict(measured[key])}
                for key in sorted({q["source_configuration_id"] for q in part})
            ],
            "targets": [
                {
                    "query_id": q["query_id"],
                    "matched_source_configuration_id": q["source_configuration_id"],
                    "settings": dict(settings[q["target_configuration_id"]]),
                }
                for q in part
            ],
        }
        for task_id, part in sorted(tasks.items())
    ]


def _by_id(rows: Sequence[Row], name: str) -> dict[str, Row]:
    out: dict[str, Row] = {}
    for row in rows:
        key = row["configuration_id"]
        if not key or key in out:
            raise SchemaError(f"{name}: missing or duplicate configuration_id {quote(key)}")
        out[key] = row
    return out
