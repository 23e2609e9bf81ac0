"""A one-page HTML report of a release: configs, the three figures, reference scores and follow-up scores.

:func:`build_report` computes everything in memory (nothing is written if any part fails);
:func:`write_report` then writes ``index.html`` — self-contained, the figures embedded as PNG data URIs — and
the same PNGs beside it.
"""

from __future__ import annotations

import base64
import contextlib
import html
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..data.registry import MARGIN_LIMIT_MIB, card_configs
from ..errors import MissingFileError

TITLE = "RLVRAMBench report"
REFERENCE_RULES = ("source_label", "always_approve", "always_reject")
TRANSFER_COLUMNS = (
    "queries",
    "correct_three_state",
    "three_state_accuracy",
    "approved",
    "approved_within_margin",
    "approved_memory_failure",
    "approved_above_margin",
    "rejected_within_margin",
    "within_margin_recall",
    "within_margin_approval_precision",
)
ADMISSION_COLUMNS = (
    "rule",
    "budget_target_attempts_per_case",
    "cases",
    "cases_with_defined_recall",
    "macro_case_within_margin_recall",
    "approved",
    "approved_within_margin",
    "approved_memory_failure",
    "approved_above_margin",
    "spent_target_attempts",
    "donor_attempts",
    "cold_start_attributed_attempts",
)
FIGURES = (
    (
        "feasibility.png",
        "Boundary-study feasibility",
        f"Repeated label of each 2-GPU boundary configuration (c0–c5); numbers are the maximum completed per-device "
        f"peak in GiB, blank for memory failures. Limit: {MARGIN_LIMIT_MIB:,} MiB per device.",
    ),
    (
        "stages.png",
        "Per-stage peaks",
        f"Per-stage device-memory peaks of every eligible process against the {MARGIN_LIMIT_MIB:,} MiB limit; "
        "boxes summarise completed runs, crosses are failure-partial stage records.",
    ),
    (
        "admission.png",
        "Admission curves",
        "Case-averaged within-margin recall against the per-case screening budget for each rule.",
    ),
)


@dataclass(frozen=True)
class Report:
    """The rendered page and the PNG bytes of its figures, by file name."""

    html: str
    images: Mapping[str, bytes]


def build_report(source=None, revision: str | None = None, *, policy: str | None = None) -> Report:
    """Compute every section of the report for ``source`` (a ``module:attr`` policy joins the admission replay)."""
    from .. import admission, transfer
    from ..data.sources import open_source
    from ..data.tables import load_table
    from ..followup import STUDIES, score_study
    from .figuredata import admission_curve, feasibility_matrix, stage_table
    from .plots import admission_figure, feasibility_figure, figure_png, stages_figure

    src = open_source(source, revision)
    configurations = load_table("all_configurations", src, decode=True)
    replay = (
        admission.replay_report(src)
        if policy is None
        else admission.replay_report(src, policy=admission.load_policy(policy))
    )
    images = {
        "feasibility.png": figure_png(feasibility_figure(feasibility_matrix(configurations))),
        "stages.png": figure_png(
            stages_figure(
                stage_table(load_table("stage_measurements", src, decode=True), configurations),
                title="Per-stage device-memory peaks: all eligible processes",
            )
        ),
        "admission.png": figure_png(admission_figure(admission_curve(replay))),
    }
    references = {rule: transfer.reference_scores(rule, src) for rule in REFERENCE_RULES}
    followups = {study: score_study(study, src) for study in STUDIES}
    sections = [
        _section("Configs", _configs_table(src)),
        *(_section(title, _figure(name, images[name], caption)) for name, title, caption in FIGURES),
        _section("Transfer reference rules, per track", _transfer_table(references)),
        _section(
            "Admission replay summary",
            _table(ADMISSION_COLUMNS, [[row.get(c) for c in ADMISSION_COLUMNS] for row in replay["summary"]]),
        ),
        _section("Follow-up studies", "".join(_followup_block(study, scores) for study, scores in followups.items())),
    ]
    identity = src.identity
    provenance = ", ".join(f"{k} {v}" for k, v in identity.items() if v)
    page = _PAGE.format(title=html.escape(TITLE), provenance=html.escape(provenance), body="\n".join(sections))
    return Report(page, images)


def write_report(
    output_dir: str | os.PathLike, source=None, revision: str | None = None, *, policy: str | None = None
) -> Path:
    """Build the report and write ``index.html`` and its PNGs into ``output_dir`` (created if needed)."""
    from ..data.output import check_outputs, check_target, object_file, write_all_atomic
    from ..data.sources import open_source

    target = Path(output_dir)
    check_target(target, folder=True)
    src = open_source(source, revision)
    names = ["index.html", *(name for name, _title, _caption in FIGURES)]
    if target.is_dir():  # an existing folder: only the report's own files are written
        check_outputs([target / name for name in names], inputs={"--policy": object_file(policy)}, source=src)
    else:
        check_outputs(folders=[target], inputs={"--policy": object_file(policy)}, source=src)
    report = build_report(src, policy=policy)
    created = not target.is_dir()
    target.mkdir(exist_ok=True)
    try:
        files: dict[Path, str | bytes] = {target / name: report.images[name] for name in names[1:]}
        write_all_atomic({**files, target / "index.html": report.html})
    except BaseException:
        if created:
            with contextlib.suppress(OSError):
                target.rmdir()
        raise
    return target / "index.html"


def _configs_table(src) -> str:
    from ..data.tables import load_table

    rows = []
    for spec in card_configs():
        try:
            count: object = f"{load_table(spec.name, src).num_rows:,}"
        except MissingFileError:
            count = "not in this revision"
        rows.append([spec.name, spec.split, count, spec.path, spec.description])
    return _table(("config", "split", "rows", "file", "description"), rows)


def _transfer_table(references: Mapping[str, Mapping]) -> str:
    rows = []
    for rule, scores in references.items():
        for track, metrics in scores["per_track"].items():
            rows.append([track, rule, *(metrics.get(c) for c in TRANSFER_COLUMNS)])
    rows.sort(key=lambda r: (r[0], REFERENCE_RULES.index(r[1])))
    return _table(("track", "rule") + TRANSFER_COLUMNS, rows)


def _followup_block(study: str, scores: Mapping) -> str:
    summary = (
        f"<p><strong>{html.escape(study)}</strong>: {scores['resolved_configurations']} of "
        f"{scores['planned_configurations']} planned configurations resolved (full-panel coverage "
        f"{_cell(scores['full_panel_coverage'])}). Unresolved: "
        f"{html.escape(', '.join(scores['unresolved_ids']) or 'none')}.</p>"
    )
    headers = (
        "method",
        "approved (full panel)",
        "scored approvals",
        "unscored approvals",
        "unscored with known failure",
        "unscored with known exceedance",
        "correct on resolved",
        "approved memory failures",
        "approved above margin",
        "recall",
        "precision",
        "peak coverage",
        "peak MAE (MiB)",
    )
    rows = []
    for method, a in scores["approvals"].items():
        m = scores["resolved_subset_metrics"][method]
        rows.append(
            [
                method,
                a["full_panel_approved_configurations"],
                a["scored_approved_configurations"],
                a["unscored_approved_configurations"],
                a["unscored_approvals_with_known_failure"],
                a["unscored_approvals_with_known_margin_exceedance"],
                m.get("correct_three_state"),
                m.get("approved_memory_failure"),
                m.get("approved_above_margin"),
                m.get("within_margin_recall"),
                m.get("within_margin_approval_precision"),
                m.get("completed_peak_prediction_coverage"),
                m.get("completed_peak_mae_mib"),
            ]
        )
    return summary + _table(headers, rows) + f"<p class=note>{html.escape(scores['metric_scope'])}</p>"


def _figure(name: str, data: bytes, caption: str) -> str:
    encoded = base64.b64encode(data).decode("ascii")
    return (
        f'<figure><img id="{html.escape(name.split(".")[0])}" src="data:image/png;base64,{encoded}" '
        f'alt="{html.escape(caption)}"><figcaption>{html.escape(caption)}</figcaption></figure>'
    )


def _section(title: str, body: str) -> str:
    return f"<section><h2>{html.escape(title)}</h2>\n{body}\n</section>"


def _table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    head = "".join(f"<th>{html.escape(str(h).replace('_', ' '))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _cell(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".")
    return str(value)


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1200px; color: #222; }}
table {{ border-collapse: collapse; font-size: 0.85rem; margin: 0.5rem 0 1rem; }}
th, td {{ border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: left; }}
th {{ background: #f0f0f0; }}
figure img {{ max-width: 100%; }}
.scroll {{ overflow-x: auto; }}
figcaption, .note {{ font-size: 0.85rem; color: #555; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p>Source: {provenance}. A rate with a zero denominator is shown as null.</p>
{body}
</body>
</html>
"""
