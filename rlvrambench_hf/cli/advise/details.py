"""``advise --details``: under each plan's plain-words answer, what it rests on — the verdict's sentence, the measured
and near records, every phase's peak with the error band's parts, the floors with their arithmetic, the reference
methods' own predictions with their held-out track record (beside the verdict, never deciding it), the distance to
the measured cloud, every change, the scope flags and the ``read:`` lines — under a one-line :data:`LEGEND`."""

from __future__ import annotations

import re

from ...advisor import Answer, Plans
from ..shared.common import format_table

#: The words of the details, defined once above them.
LEGEND = (
    "legend: basis = what decided the verdict (measured: the release ran these settings; floor: arithmetic that "
    "cannot hold; predicted: the per-phase memory model); band = the model's error, +/- MiB, from runs it was not "
    "fitted on, widened where your run leaves what was measured; scope = where your run leaves what the release "
    "measured; measured cloud = the release's configurations in the reference methods' standardised features (a run "
    "farther from its nearest one than any of them is from its own nearest lies outside it)"
)


def details(answer: Answer, plans: Plans, row: int) -> list[str]:
    """Everything the answer to plan ``row`` rests on (see the module docstring)."""
    from ...advisor.output.wording import verdict_text

    unmeasured = any(f.startswith("model family not measured") for f in answer.scope_flags)
    family = answer.model_family or (
        "family not measured" if unmeasured else "measured, outside the estimation families"
    )
    lines = [f"== {answer.configuration_id}: {answer.model_id} ({family})", f"verdict: {verdict_text(answer)}"]
    lines += measured_lines(answer)
    lines += phase_lines(answer)
    for f in answer.floors:
        mark = {True: "holds", False: "FAILS", None: "unchecked"}[f.holds]
        lines.append(f"floor {f.check}: {mark}: {f.arithmetic}")
    lines += reference_lines(answer)
    d = answer.distance
    if d is not None:
        where = "outside" if d.outside_cloud else "inside"
        lines.append(
            f"measured cloud: {where}: distance {d.nearest:.2f} to the nearest measured configuration (the measured "
            f"configurations' own nearest-neighbour distances: median {d.cloud_median:.2f}, largest {d.cloud_max:.2f})"
        )
    lines += change_lines(answer)
    for flag in answer.scope_flags or ("none: within the measured families, settings and hardware",):
        lines.append(f"scope: {flag}")
    return lines + read_from(plans, row)


def measured_lines(answer: Answer) -> list[str]:
    lines = []
    for r in answer.measured or ():
        peak = r.max_completed_peak_mib
        lines.append(
            f"measured: {r.table} {r.configuration_id} {r.observed_state}, seeds {list(r.eligible_seeds)}, "
            + ("no seed completed" if peak is None else f"max completed peak {peak:,.0f} MiB")
        )
    for n in answer.near_matches[:5]:
        lines.append(
            f"near match: {n.ref.table} {n.ref.configuration_id} {n.ref.observed_state} with {n.setting}="
            f"{n.measured} (yours {n.plan})"
        )
    return lines


def phase_lines(answer: Answer) -> list[str]:
    """Every phase's peak on the plan's device, the binding one marked, and the band with its parts."""
    memory = answer.memory
    if not memory.known:
        return []
    peaks = ", ".join(
        f"{p.phase} {p.peak_mib:,.0f}" + (" (binds)" if p.phase == memory.binding_phase else "") for p in memory.phases
    )
    parts = ", ".join(f"{p.part} {p.mib:,.0f}" for p in (memory.band.parts if memory.band else ()))
    band = f"; band +/- {memory.band_mib:,.0f} MiB" + (f" ({parts})" if parts else "")
    return [f"phases (the per-phase model, MiB per GPU on {answer.device.device_name}): {peaks}{band}"]


def reference_lines(answer: Answer) -> list[str]:
    """The three reference methods' own predictions, labelled as theirs, with their held-out track record."""
    if answer.predictions is None:
        return [f"reference methods: no prediction ({answer.predictions_unavailable})"]
    rows = [
        [p.method, p.state, None if p.peak_mib is None else f"{p.peak_mib:,.0f}", p.approvals_that_failed,
         p.usable_rejected]
        for p in answer.predictions
    ]  # fmt: skip
    headers = ["reference method", "its label", "its peak MiB", "held-out approvals that failed", "usable rejected"]
    intro = (
        "the reference methods' own predictions (they do not decide the verdict; their track record is from the "
        "model families held out in turn):"
    )
    return [intro, *("  " + line for line in format_table(headers, rows).splitlines())]


def change_lines(answer: Answer) -> list[str]:
    lines = []
    for change in answer.changes:
        if change.basis == "floor":
            why = f"floor {change.floor} holds after it; then {change.resulting_state or 'no verdict'}"
        elif change.supporting is not None:
            why = f"measured: {change.supporting.configuration_id}"
        else:
            why = "predicted"
        peak = change.predicted_peak_change_mib
        shift = f", predicted peak {peak:+,.0f} MiB" if peak is not None else ""
        lines.append(f"change: {change.setting} {change.before} -> {change.to} ({why}{shift})")
    return lines


def read_from(plans: Plans, row: int) -> list[str]:
    """The values a plan did not write itself: taken from defaults, another file or a conversion, each named by the
    user's own key and where it came from; then what reading the launch file says (its ``read:`` lines)."""
    if not plans.sources:
        return []
    values = plans.settings(row)
    lines = []
    origin = plans.origins[row]
    for setting, where in plans.sources[row].items():
        written = plans.written.get(setting, setting)
        if setting == "workload_id":  # a line of its own says which key named it
            continue
        if setting not in values or where == origin or re.fullmatch(r".* line \d+", where):
            continue
        named = f"{written} -> {setting} {values[setting]}" if written != setting else f"{setting} {values[setting]}"
        lines.append(f"read: {named}" + (f": {where}" if where.startswith(("not ", "EasyR1 ")) else f" from {where}"))
    return lines + [f"read: {note}" for note in plans.row_notes(row)]
