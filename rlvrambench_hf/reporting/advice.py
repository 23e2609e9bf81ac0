"""The report's section on a plan file: the verdict of every planned run, what it rests on and what would make it
fit (HTML of answers already computed by :mod:`rlvrambench_hf.advisor`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import sections as s

#: Columns of the verdicts table, one row per plan.
COLUMNS = ("plan", "verdict", "basis", "measured_records", "floors_failed", "smallest_change", "scope_flags")


def advice_rows(document: Mapping[str, Any]) -> list[list[object]]:
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


def advice_section(document: Mapping[str, Any], planned: str) -> str:
    """The section: the statement, the verdicts table, then each plan's verdict sentence."""
    body = [s.paragraph(f"Plans of {planned}. {document['statement']}"), s.table(COLUMNS, advice_rows(document))]
    body += [
        s.paragraph(f"{c['configuration_id']}: {c['verdict']['sentence']}", "note") for c in document["configurations"]
    ]
    return s.section("Your planned runs: will they fit?", "".join(body), "advice")


#: Columns of the fixes table of a failure diagnosis.
FIX_COLUMNS = ("key", "change", "TRL", "basis", "why")


def diagnosis_section(diagnosis: Mapping[str, Any], log: str) -> str:
    """The section on a failure log (``Diagnosis.as_dict()`` of :mod:`rlvrambench_hf.advisor.diagnose.diagnosis`): its
    one line, the figures the log states, the release's failures of that kind and the fixes."""
    body = [s.paragraph(f"{log}: {diagnosis['headline']}")]
    if diagnosis["numbers"]:
        rows = [[n["name"], n["value"], n["unit"], n["written"]] for n in diagnosis["numbers"]]
        body.append(s.table(("figure", "value", "unit", "as written"), rows))
    release = diagnosis["release"]
    if release:
        counts = ", ".join(f"{n} {table}" for table, n in release["counts"].items() if n) or "none"
        body.append(s.paragraph(f"The release's {release['failure_kind']} failures: {counts}.", "note"))
        rows = [
            [
                c["configuration_id"],
                c["observed_state"],
                c["model_id"],
                c["gpu_count"],
                n["setting"],
                n["within_margin"],
            ]
            for c in release["configurations"]
            for n in c["within_margin_neighbours"] or [{"setting": None, "within_margin": None}]
        ]
        body.append(s.table(("failed configuration", "state", "model", "GPUs", "within margin with", "value"), rows))
    fixes = [[f["key"], f["change"], f["trl"], f["basis"], f["why"]] for f in diagnosis["fixes"]]
    if fixes:
        body.append(s.table(FIX_COLUMNS, fixes))
    return s.section("Why did the run fail?", "".join(body), "diagnosis")
