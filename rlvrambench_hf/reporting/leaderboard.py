"""A leaderboard per track that does not pretend to more order than the data hold.

Each method's within-margin recall with its interval, beside its approved memory failures and above-margin
approvals, sorted by recall; methods are grouped as rank-stability groups are: the first method leads group 1,
and every following method whose interval overlaps the leader's joins it; the first that does not leads the next
group. A method without a bootstrap interval (a score file made without ``--intervals``, or a track with too few
targets for one) is listed but not grouped. Standings come from score files or from the Hub's evaluation
results (:mod:`rlvrambench_hf.release.evalresults`). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..scoring.intervals import BOOTSTRAP
from .tables import Table

RECALL = "within_margin_recall"
LEADERBOARD_COLUMNS = (
    "track",
    "group",
    "method",
    "within_margin_recall",
    "recall_low",
    "recall_high",
    "approved_memory_failure",
    "approved_above_margin",
)
NOT_GROUPED = "no interval: not grouped"


@dataclass(frozen=True)
class Standing:
    """One method on one track."""

    track: str
    method: str
    recall: float | None
    interval: tuple[float, float] | None
    approved_memory_failure: int | None
    approved_above_margin: int | None


def standings_from_scores(method: str, scores: Mapping[str, Any]) -> list[Standing]:
    """A method's standing on each track of a transfer score file (the interval if the file has one)."""
    out = []
    for track, scope in scores["per_track"].items():
        block = scope.get("intervals")
        interval = None
        if block and block.get("method") == BOOTSTRAP and block["metrics"].get(RECALL, {}).get("low") is not None:
            ends = block["metrics"][RECALL]
            interval = (ends["low"], ends["high"])
        out.append(
            Standing(
                track,
                method,
                scope.get(RECALL),
                interval,
                scope.get("approved_memory_failure"),
                scope.get("approved_above_margin"),
            )
        )
    return out


def standings_from_entries(method: str, entries: Sequence[Any]) -> list[Standing]:
    """A method's standings from its evaluation-result entries (``EvalResultEntry``) of this benchmark."""
    from ..release.evalresults import interval_of, split_task_id

    values: dict[str, dict[str, Any]] = {}
    intervals: dict[str, tuple[float, float] | None] = {}
    for entry in entries:
        parsed = split_task_id(entry.task_id)
        if parsed is None:
            continue
        track, metric = parsed
        values.setdefault(track, {})[metric] = entry.value
        if metric == RECALL:
            intervals[track] = interval_of(entry.notes)
    return [
        Standing(
            track,
            method,
            got.get(RECALL),
            intervals.get(track),
            got.get("approved_memory_failure"),
            got.get("approved_above_margin"),
        )
        for track, got in values.items()
    ]


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def ranked(standings: Sequence[Standing]) -> list[tuple[int | None, Standing]]:
    """One track's standings sorted by recall (undefined last), each with its group (None: not grouped)."""
    order = sorted(standings, key=lambda s: (s.recall is None, -(s.recall or 0.0), s.method))
    out: list[tuple[int | None, Standing]] = []
    group, leader = 0, None
    for standing in order:
        if standing.interval is None or standing.recall is None:
            out.append((None, standing))
            continue
        if leader is None or not _overlap(leader, standing.interval):
            group, leader = group + 1, standing.interval
        out.append((group, standing))
    return out


def leaderboard_table(standings: Sequence[Standing]) -> Table:
    """Every track (in the documented order) with its ranked, grouped methods."""
    from ..transfer.key import TRACKS

    tracks = list(dict.fromkeys(s.track for s in standings))
    tracks = [t for t in TRACKS if t in tracks] + [t for t in tracks if t not in TRACKS]
    rows: list[list[object]] = []
    for track in tracks:
        for group, s in ranked([s for s in standings if s.track == track]):
            low, high = s.interval if s.interval else (None, None)
            shown = NOT_GROUPED if group is None else group
            rows.append(
                [track, shown, s.method, s.recall, low, high, s.approved_memory_failure, s.approved_above_margin]
            )
    return Table(LEADERBOARD_COLUMNS, rows)


def leaderboard_csv(table: Table) -> str:
    """The table as CSV (null as an empty cell)."""
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.headers)
    writer.writerows([["" if v is None else v for v in row] for row in table.rows])
    return buffer.getvalue()


LEGEND = (
    "Sorted by within-margin recall per track; a group holds the methods whose recall interval overlaps the "
    "group leader's, so the order inside a group is not established. Read the approval errors beside the recall."
)


def leaderboard_html(table: Table, title: str = "RLVRAMBench leaderboard") -> str:
    """A self-contained page with the table and the legend."""
    import html

    from .sections import PAGE, from_table, paragraph

    body = paragraph(LEGEND, "note") + from_table(table)
    return PAGE.format(title=html.escape(title), provenance="", body=body)
