"""The readable form of ``release diff``: what moves the metrics first, then every table's rows and cells."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...release.diff import ReleaseDiff
from .common import format_table


def diff_text(result: ReleaseDiff, limit: int) -> str:
    """The whole report; ``limit`` bounds each list of ids and of changed cells."""
    lines = [f"OLD {result.old}", f"NEW {result.new}", ""]
    if not result.changed:
        return "\n".join([*lines, "no differences"])
    lines += [f"what moves the metrics: {result.impact.headline()}", *_impact_lines(result, limit)]
    lines += ["", _tables(result), *_cells(result, limit)]
    return "\n".join(lines)


def _impact_lines(result: ReleaseDiff, limit: int) -> list[str]:
    impact = result.impact
    lines = []
    if impact.configurations:
        rows = [
            (c["configuration_id"], c["kind"], c["origin"], c["old"], c["new"], ", ".join(c["tables"]))
            for c in impact.configurations
        ]
        lines += ["", "configurations whose label or peak changed"]
        lines.append(format_table(("configuration", "kind", "column", "old", "new", "changed in"), rows))
    t = impact.transfer
    for what, queries, tasks in (
        ("transfer queries whose target label changed", t.get("label_queries"), t.get("label_tasks")),
        ("transfer queries whose source configuration changed", t.get("input_queries"), t.get("input_tasks")),
    ):
        if queries:
            lines.append(f"{what} ({len(queries)}, in {len(tasks or ())} task(s)): {_listed(queries, limit)}")
    a = impact.admission
    if a.get("candidates"):
        lines.append(
            f"admission candidates touched ({len(a['candidates'])}): records changed: "
            f"{_listed(a['records_changed'], limit) or 'none'}; donor configuration changed: "
            f"{_listed(a['donor_changed'], limit) or 'none'}"
        )
    e = impact.estimation
    if e.get("folds"):
        lines.append(
            f"estimation pool configurations changed ({len(e['pool_configurations'])}): "
            f"{_listed(e['pool_configurations'], limit)}; held out in {', '.join(e['held_out_in'])}, fitted in the "
            f"other folds: folds touched {', '.join(e['folds'])}"
        )
    for study, facts in impact.followup.items():
        if facts["changed_rows"]:
            lines.append(f"follow-up {study}: {facts['changed_rows']} changed row(s) in its tables")
    return lines


def _tables(result: ReleaseDiff) -> str:
    rows = [
        (
            c.config,
            c.status,
            c.old_rows,
            c.new_rows,
            len(c.added),
            len(c.removed),
            c.changed_rows,
            ", ".join(f"{k}({v})" for k, v in c.changed_columns.items()),
        )
        for c in result.configs
        if c.status != "unchanged"
    ]
    unchanged = sum(c.status == "unchanged" for c in result.configs)
    headers = ("config", "status", "old rows", "new rows", "added", "removed", "changed", "changed columns")
    return f"{format_table(headers, rows)}\n({unchanged} other table(s) unchanged)"


def _cells(result: ReleaseDiff, limit: int) -> list[str]:
    lines = []
    labels = [(c.config, _key(x.key), x.column, x.old, x.new) for c in result.configs for x in c.label_changes]
    if labels:
        lines += ["", "label changes", format_table(("config", "key", "column", "old", "new"), labels[:limit])]
    cells = [
        (c.config, _key(x.key), x.column, x.old, x.new)
        for c in result.configs
        for x in c.cells
        if x.column not in c.label_columns
    ]
    if cells:
        shown = cells[:limit]
        lines += [
            "",
            f"other changed cells ({len(cells)}{'' if len(shown) == len(cells) else f', first {len(shown)}'})",
        ]
        lines.append(format_table(("config", "key", "column", "old", "new"), shown))
    for c in result.configs:
        for verb, keys in (("added", c.added), ("removed", c.removed)):
            if keys:
                lines += ["", f"{c.config}: {verb} {len(keys)} row(s): {_listed([_key(k) for k in keys], 10)}"]
    return lines


def _listed(items: Sequence[str], limit: int) -> str:
    shown = "; ".join(items[:limit])
    return shown + (f" ... ({len(items) - limit} more)" if len(items) > limit else "")


def _key(key: dict[str, Any]) -> str:
    return ",".join(str(v) for v in key.values()) or "(the record)"
