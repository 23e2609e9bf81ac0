"""The report's section on a plan file: the verdict of every planned run, what it rests on and what would make it
fit (HTML of answers already computed by :mod:`rlvrambench_hf.advisor`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import sections as s

if TYPE_CHECKING:
    from ..advisor.assess.answers import Answers
    from ..advisor.diagnose.diagnosis import Diagnosis

#: Columns of the verdicts table, one row per plan.
COLUMNS = ("plan", "verdict", "basis", "measured_records", "floors_failed", "smallest_change", "scope_flags")


def advice_rows(answers: Answers) -> list[list[object]]:
    """One row per plan of the advisor's answers."""
    rows: list[list[object]] = []
    for i in range(len(answers)):
        a = answers.answer(i)
        measured = ", ".join(f"{r.configuration_id} ({r.observed_state})" for r in a.measured or ())
        failed = ", ".join(f.check for f in a.failed_floors)
        shown = None
        if a.changes:
            change = a.changes[0]
            if change.basis == "floor":
                why = f"floor {change.floor}"
            elif change.supporting is not None:
                why = f"measured {change.supporting.configuration_id}"
            else:
                why = "predicted"
            shown = f"{change.setting} {change.before} → {change.to} ({why})"
        rows.append(
            [
                a.configuration_id,
                a.verdict.state,
                a.verdict.basis,
                measured or None,
                failed or None,
                shown,
                len(a.scope_flags),
            ]
        )
    return rows


def advice_section(answers: Answers, planned: str) -> str:
    """The section: the statement, the verdicts table, then each plan's verdict sentence."""
    from ..advisor.output.document import STATEMENT

    body = [s.paragraph(f"Plans of {planned}. {STATEMENT}"), s.table(COLUMNS, advice_rows(answers))]
    for i in range(len(answers)):
        a = answers.answer(i)
        body.append(s.paragraph(f"{a.configuration_id}: {a.verdict.sentence}", "note"))
    return s.section("Your planned runs: will they fit?", "".join(body), "advice")


#: Columns of the fixes table of a failure diagnosis.
FIX_COLUMNS = ("key", "change", "TRL", "basis", "why")


def diagnosis_section(diagnosis: Diagnosis, log: str) -> str:
    """The section on a failure log (a :class:`~rlvrambench_hf.advisor.diagnose.diagnosis.Diagnosis`): its one
    line, the figures the log states, the release's failures of that kind and the fixes."""
    body = [s.paragraph(f"{log}: {diagnosis.headline()}")]
    if diagnosis.numbers:
        figures = [[n.name, round(n.value, 1 if n.unit == "MiB" else 4), n.unit, n.written] for n in diagnosis.numbers]
        body.append(s.table(("figure", "value", "unit", "as written"), figures))
    release = diagnosis.release
    if release is not None:
        counts = ", ".join(f"{n} {table}" for table, n in release.counts.items() if n) or "none"
        body.append(s.paragraph(f"The release's {release.failure_kind} failures: {counts}.", "note"))
        rows: list[list[object]] = []
        for c in release.configurations:
            within: list[tuple[object, object]] = [(n.setting, n.within_margin) for n in c.neighbours]
            for setting, value in within or [(None, None)]:
                rows.append([c.configuration_id, c.observed_state, c.setting("model_id"), c.setting("gpu_count")])
                rows[-1] += [setting, value]
        body.append(s.table(("failed configuration", "state", "model", "GPUs", "within margin with", "value"), rows))
    fixes = [[f.key, f.change, f.trl, f.basis, f.why] for f in diagnosis.fixes]
    if fixes:
        body.append(s.table(FIX_COLUMNS, fixes))
    return s.section("Why did the run fail?", "".join(body), "diagnosis")
