"""``advise --planned / --verl / --trl``: the answers to the plans of a file, printed from the typed answers (one
verdict line per plan, then each plan's details or, for a sweep, the count of verdicts) and written by
``--output``."""

from __future__ import annotations

import argparse
import re
from typing import Any, Literal

from ...advisor import Answer, Hardware, Plans, advise, read_plans
from ...advisor.assess.answers import Answers
from ...errors import InputError, printable, quote
from .._common import checked_source, format_table

Kind = Literal["planned", "verl", "trl"]
#: Plans whose details are printed; above it stdout has the verdict lines and a summary.
DETAIL_LIMIT = 20
OUTPUT_SUFFIXES = (".json", ".csv", ".parquet")


def run_plans(args: argparse.Namespace, settings: dict[str, str]) -> int:
    """Answer the plans of ``--planned`` / ``--verl`` / ``--trl`` (``settings``: the ``--setting`` options)."""
    if args.output and not args.output.lower().endswith(OUTPUT_SUFFIXES):
        raise InputError(f"--output {quote(args.output)}: use a file ending in {', '.join(OUTPUT_SUFFIXES)}")
    hardware = Hardware.of(args.device_capacity_mib, args.margin_limit_mib, args.gpu)
    kind, given = next((k, v) for k, v in named(args) if v)
    inputs = {f"--{kind}": given, **({"--accelerate-config": args.accelerate_config} if args.accelerate_config else {})}
    source = checked_source(args, [args.output], inputs)
    plans = read_plans(
        given,
        kind=kind,
        workload=args.workload,
        settings=settings,
        source=source,
        accelerate_config=args.accelerate_config,
        **launch_options(args),
    )
    answers = advise(plans, source, hardware=hardware, model_revision=args.model_revision, nearest=args.nearest)
    write_answers(answers, args.output)
    print(printable(render(answers)))
    return 0


def launch_options(args: argparse.Namespace) -> dict[str, Any]:
    """``-- ARGS`` and ``--verl-version`` for the reader of a VERL or TRL launch file."""
    if (args.verl_version is not None and not args.verl) or (args.arguments and not (args.verl or args.trl)):
        raise InputError("a script's arguments (after --) go with --verl or --trl, --verl-version with --verl")
    return {"arguments": args.arguments or None, "verl_version": args.verl_version}


def named(args: argparse.Namespace) -> list[tuple[Kind, str | None]]:
    """The launch-file options, in the order they are looked for."""
    return [("planned", args.planned), ("verl", args.verl), ("trl", args.trl)]


def write_answers(answers: Answers, path: str | None) -> None:
    """``--output``: JSON, CSV or Parquet by suffix."""
    if not path:
        return
    if path.lower().endswith(".json"):
        from ...advisor.output.document import document
        from ...data.tables.output import write_json

        write_json(path, document(answers))
        return
    from ...advisor.output.sweep import write_sweep

    write_sweep(answers, path)


def render(answers: Answers) -> str:
    """The verdict line of each plan, then details (or, for a sweep, the verdict counts)."""
    from ...advisor.output.document import STATEMENT
    from ...advisor.output.sweep import verdict_counts, verdict_lines

    lines = verdict_lines(answers)
    if len(lines) > DETAIL_LIMIT:
        summary = format_table(["verdict / basis", "plans"], verdict_counts(answers))
        return "\n".join([*lines, "", f"{len(lines)} plans; details of each are in --output F.json", summary])
    out = [*lines, "", STATEMENT]
    for i in range(len(lines)):
        out += ["", *detail(answers.answer(i)), *read_from(answers.plans, i)]
    return "\n".join(out)


def read_from(plans: Plans, row: int) -> list[str]:
    """The values a plan did not write itself: taken from defaults, another file or a conversion, each named by the
    user's own key and where it came from."""
    if not plans.sources:
        return []
    values = plans.settings(row)
    lines = []
    origin = plans.origins[row]
    for setting, where in plans.sources[row].items():
        written = plans.written.get(setting, setting)
        if setting not in values or where == origin or re.fullmatch(r".* line \d+", where):
            continue
        named = f"{written} -> {setting} {values[setting]}" if written != setting else f"{setting} {values[setting]}"
        lines.append(f"read: {named}" + (f": {where}" if where.startswith(("not ", "EasyR1 ")) else f" from {where}"))
    return lines + [f"read: {note}" for note in plans.row_notes(row)]


def detail(answer: Answer) -> list[str]:
    """The readable answer to one plan."""
    from ...advisor.output.wording import verdict_text

    unmeasured = any(f.startswith("model family not measured") for f in answer.scope_flags)
    family = answer.model_family or (
        "family not measured" if unmeasured else "measured, outside the estimation families"
    )
    lines = [f"== {answer.configuration_id}: {answer.model_id} ({family})", f"verdict: {verdict_text(answer)}"]
    for r in answer.measured or ():
        peak = r.max_completed_peak_mib
        lines.append(
            f"measured: {r.table} {r.configuration_id} {r.observed_state}, seeds {list(r.eligible_seeds)}, "
            + ("no seed completed" if peak is None else f"max completed peak {peak} MiB")
        )
    for n in answer.near_matches[:5]:
        lines.append(
            f"near match: {n.ref.table} {n.ref.configuration_id} {n.ref.observed_state} with {n.setting}="
            f"{n.measured} (yours {n.plan})"
        )
    for f in answer.floors:
        mark = {True: "holds", False: "FAILS", None: "unchecked"}[f.holds]
        lines.append(f"floor {f.check}: {mark}: {f.arithmetic}")
    if answer.predictions is not None:
        body = [[p.method, p.state, p.peak_mib, p.approvals_that_failed, p.usable_rejected] for p in answer.predictions]
        headers = ["method", "predicted_state", "predicted_peak_mib", "held_out_failed_approvals", "usable_rejected"]
        lines.append(format_table(headers, body))
    else:
        lines.append(f"predictions: unavailable ({answer.predictions_unavailable})")
    d = answer.distance
    if d is not None:
        lines.append(
            f"distance to the nearest measured configuration: {d.nearest:.2f} (measured configurations' own "
            f"nearest-neighbour distances: median {d.cloud_median:.2f}, largest {d.cloud_max:.2f})"
        )
    for change in answer.changes:
        if change.basis == "floor":
            why = f"floor {change.floor} holds after it; then {change.resulting_state or 'no verdict'}"
        elif change.supporting is not None:
            why = f"measured: {change.supporting.configuration_id}"
        else:
            why = "predicted"
        peak = change.predicted_peak_change_mib
        shift = f", predicted peak {peak:+.0f} MiB" if peak is not None else ""
        lines.append(f"change: {change.setting} {change.before} -> {change.to} ({why}{shift})")
    for flag in answer.scope_flags or ("none: within the measured families, settings and hardware",):
        lines.append(f"scope: {flag}")
    return lines
