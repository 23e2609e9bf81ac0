"""The HTML sections of the report, each a pure function of data already computed (no I/O, no scoring).

Tables come from :mod:`.tables`, the renderers every face shares; this module only turns them into HTML. A new
section is a function returning :func:`section` of its body, added to the list in :func:`.report.build_report`.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..data.schema.pins import OUTCOME_LABELS
from .tables import (
    Table,
    admission_table,
    confusion_matrices,
    followup_facts,
    followup_notes,
    followup_summary,
    followup_table,
    ledger_tables,
)

#: Short names of the labels in the confusion matrices.
LABEL_ABBREVIATIONS = {"within_margin": "WM", "above_margin": "AM", "memory_failure": "MF"}


def section(title: str, body: str, anchor: str | None = None) -> str:
    """A titled ``<section>`` (with an ``id`` when ``anchor`` is given)."""
    ident = f' id="{html.escape(anchor)}"' if anchor else ""
    return f"<section{ident}><h2>{html.escape(title)}</h2>\n{body}\n</section>"


def paragraph(text: str, css_class: str | None = None) -> str:
    """A paragraph of escaped text."""
    attribute = f' class="{css_class}"' if css_class else ""
    return f"<p{attribute}>{html.escape(text)}</p>"


def figure(name: str, data: bytes, caption: str) -> str:
    """A PNG embedded as a data URI (the page stays self-contained), with its caption; the ``id`` is the file stem."""
    encoded = base64.b64encode(data).decode("ascii")
    return (
        f'<figure><img id="{html.escape(name.split(".")[0])}" src="data:image/png;base64,{encoded}" '
        f'alt="{html.escape(caption)}"><figcaption>{html.escape(caption)}</figcaption></figure>'
    )


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], css_class: str = "") -> str:
    """An HTML table (underscores of the headers shown as spaces; None shown as null)."""
    head = "".join(f"<th>{html.escape(str(h).replace('_', ' '))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(cell(v))}</td>" for v in row) + "</tr>" for row in rows)
    attribute = f' class="{css_class}"' if css_class else ""
    return f'<div class="scroll"><table{attribute}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def from_table(data: Table) -> str:
    """:func:`table` of a :class:`~.tables.Table`."""
    return table(data.headers, data.rows)


def cell(value: object) -> str:
    """A value as a table cell shows it: null, up to four decimals, or its text."""
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".")
    return str(value)


def provenance(items: Sequence[tuple[str, str]]) -> str:
    """The provenance block at the top of the page: one row per item (package, source, commit, time, inputs)."""
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in items)
    return f'<table class="provenance"><tbody>{rows}</tbody></table>'


def confusion_block(method: str, scores: Mapping[str, Any]) -> str:
    """One method's confusion matrices, every scope side by side: predicted labels down, observed across."""
    scopes, matrices = confusion_matrices(scores)
    n = len(OUTCOME_LABELS)
    top = "<th rowspan=2>predicted \\ observed</th>" + "".join(
        f"<th colspan={n}>{html.escape(scope.replace('_', ' '))}</th>" for scope in scopes
    )
    labels = "".join(f"<th>{LABEL_ABBREVIATIONS[o]}</th>" for o in OUTCOME_LABELS) * len(scopes)
    body = "".join(
        f"<tr><th>{LABEL_ABBREVIATIONS[p]}</th>"
        + "".join(f"<td>{m[i][j]}</td>" for m in matrices for j in range(n))
        + "</tr>"
        for i, p in enumerate(OUTCOME_LABELS)
    )
    return (
        f"<h3>{html.escape(method)}</h3>"
        f'<div class="scroll"><table class="confusion"><thead><tr>{top}</tr><tr>{labels}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def admission_summary(summary: Sequence[Mapping[str, Any]]) -> str:
    """The replay summary, one row per rule × budget, with the total attempts (target + donor)."""
    return from_table(admission_table(summary))


def admission_ledgers(report: Mapping[str, Any]) -> str:
    """The replay's three cost ledgers and its cold-start totals, each titled."""
    return "".join(
        f"{paragraph(title[0].upper() + title[1:] + '.')}{from_table(table)}" for title, table in ledger_tables(report)
    )


def followup_block(study: str, scores: Mapping[str, Any]) -> str:
    """One follow-up study: coverage, slot facts and costs, one row per method (frozen methods, the always-failure
    reference, then yours), then the notes."""
    notes = "".join(paragraph(note, "note") for note in followup_notes(scores))
    facts = "".join(paragraph(fact[0].upper() + fact[1:] + ".") for fact in followup_facts(scores))
    return (
        f"<h3>{html.escape(study)}</h3>{paragraph(followup_summary(scores) + '.')}{facts}"
        f"{from_table(followup_table(scores))}{notes}"
    )


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1200px; color: #222; }}
table {{ border-collapse: collapse; font-size: 0.85rem; margin: 0.5rem 0 1rem; }}
th, td {{ border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: left; }}
th {{ background: #f0f0f0; }}
table.confusion td {{ text-align: right; min-width: 2.2rem; }}
table.provenance th {{ width: 12rem; }}
figure img {{ max-width: 100%; }}
.scroll {{ overflow-x: auto; }}
figcaption, .note {{ font-size: 0.85rem; color: #555; }}
</style>
</head>
<body>
<h1>{title}</h1>
{provenance}
<p class="note">A rate with a zero denominator is shown as null.</p>
{body}
</body>
</html>
"""
