"""The report's section on a plan file: the verdict of every planned run, what it rests on and what would make it
fit (HTML of answers already computed by :mod:`rlvrambench_hf.advisor`)."""

from __future__ import annotations

from collections.abc import Mapping

from . import sections as s

#: Columns of the verdicts table, one row per plan.
COLUMNS = ("plan", "verdict", "basis", "measured_records", "floors_failed", "smallest_change", "scope_flags")


def advice_rows(document: Mapping) -> list[list[object]]:
    """One row per plan of an advisor answer (``advisor.document.document``)."""
    rows = []
    for c in document["configurations"]:
        measured = ", ".join(f"{r['configuration_id']} ({r['observed_state']})" for r in c["measured"] or [])
        failed = ", ".join(f["check"] for f in c["floors"] if f["holds"] is False)
        change = c["changes"][0] if c["changes"] else None
        shown = None
        if change:
            support = change["supporting_configuration"]
            why = f"measured {support['configuration_id']}" if support else "predicted"
            shown = f"{change['setting']} {change['from']} → {change['to']} ({why})"
        verdict = c["verdict"]
        rows.append(
            [
                c["configuration_id"],
                verdict["state"],
                verdict["basis"],
                measured or None,
                failed or None,
                shown,
                len(c["scope_flags"]),
            ]
        )
    return rows


def advice_section(document: Mapping, planned: str) -> str:
    """The section: the statement, the verdicts table, then each plan's verdict sentence."""
    body = [s.paragraph(f"Plans of {planned}. {document['statement']}"), s.table(COLUMNS, advice_rows(document))]
    body += [
        s.paragraph(f"{c['configuration_id']}: {c['verdict']['sentence']}", "note") for c in document["configurations"]
    ]
    return s.section("Your planned runs: will they fit?", "".join(body), "advice")
