"""``advise --log``: why did my run run out of memory? The diagnosis of a failure log, alone or with the launch
file (``--verl`` / ``--trl`` / ``--planned``, with ``--accelerate-config``, ``--setting``, ``--workload``) answered on
the device the log reports or the one given (``--gpu``, ``--device-capacity-mib``), printed from the typed
diagnosis. A launch file that cannot be read leaves the log's diagnosis, which says so in its note."""

from __future__ import annotations

import argparse

from ...advisor import Hardware, read_plans
from ...advisor.api import explain_failure, plan_unread
from ...advisor.diagnose.diagnosis import Diagnosis
from ...advisor.diagnose.parts import PlanMatch, ReleaseFailures
from ...advisor.plan.plans import Plans
from ...errors import InputError, MissingExtraError, first_line, printable, quote
from ..shared.common import checked_source
from .plans import launch_options, named, shipped_example


def run_log(args: argparse.Namespace, settings: dict[str, str]) -> int:
    """Diagnose ``args.log`` (with the plans of ``--verl`` / ``--trl`` / ``--planned`` when given; ``settings``: the
    ``--setting`` options)."""
    if args.output and not args.output.lower().endswith(".json"):
        raise InputError(
            f"--output {quote(args.output)}: with --log, write the answer as JSON (a file ending in .json)"
        )
    given = args.device_capacity_mib is not None or args.margin_limit_mib is not None or args.gpu is not None
    hardware = Hardware.of(args.device_capacity_mib, args.margin_limit_mib, args.gpu) if given else None
    files = [(k, shipped_example(v, k)[0]) for k, v in named(args) if v]
    inputs = {"--log": args.log, **{f"--{k}": v for k, v in files}}
    if args.accelerate_config:
        inputs["--accelerate-config"] = args.accelerate_config
    source = checked_source(args, [args.output], {k: v for k, v in inputs.items() if v != "-"})
    plans: Plans | None = None
    unread = None
    options = launch_options(args)
    if files:
        kind, path = files[0]
        try:
            plans = read_plans(
                path,
                kind=kind,
                workload=args.workload,
                settings=settings,
                source=source,
                accelerate_config=args.accelerate_config,
                **options,
            )
        except (InputError, MissingExtraError) as exc:  # the log's diagnosis stands without the plan
            unread = first_line(exc)
    found = explain_failure(args.log, source, plans=plans, hardware=hardware, model_revision=args.model_revision)
    if unread is not None:
        found = plan_unread(found, unread)
    if args.output:
        from ...advisor.output.document import diagnosis_document
        from ...data.tables.output import write_json

        write_json(args.output, diagnosis_document(found))
    print(printable(render_diagnosis(found)))
    return 0


def render_diagnosis(found: Diagnosis) -> str:
    """The diagnosis as text: its one line first, then the figures, the release's record and the fixes."""
    lines = [found.headline(), ""]
    message = found.signal
    if message is not None:
        lines.append(f"message ({message.source}, line {message.line}): {message.excerpt}")
    lines += _where_lines(found)
    for n in found.numbers:
        value = round(n.value, 1 if n.unit == "MiB" else 4)
        lines.append(f"figure {n.name}: {value:,} {n.unit} (written {n.written})")
    device = found.device
    if device is not None:
        names = " or ".join(device.candidates) or "a device not in the list"
        measured = "the release's device" if device.measured else "not the release's device (A100 40GB)"
        lines.append(f"device: {device.log_total_mib:,} MiB total: {names}, {measured}")
    for s in found.others:
        lines.append(f"also in the log (line {s.line}, {s.family}): {s.excerpt[:160]}")
    lines += _release_lines(found.release)
    lines += _specific_lines(found.specific)
    for f in found.fixes:
        trl = f" (TRL: {f.trl})" if f.trl else ""
        lines.append(f"fix [{f.basis}]: {f.key} {f.change}{trl}: {f.why}")
    if found.note:
        lines.append(f"note: {found.note}")
    lines.append(f"log: {found.log_note}")
    return "\n".join(lines)


def _where_lines(found: Diagnosis) -> list[str]:
    """The phase, the operation inside it, where to look when the cause is not established, and the stack."""
    lines = []
    if found.failure_class is not None:
        lines.append(f"phase: {found.phase or 'not stated in the log'} ({found.phase_basis})")
    if found.operation:
        lines.append(f"operation: {found.operation}")
    if found.look_at:
        lines.append(f"look at: {found.look_at}")
    if found.stack:
        lines.append(f"stack: {', '.join(found.stack)}")
    return lines


def _release_lines(release: ReleaseFailures | None) -> list[str]:
    if release is None:
        return []
    counts = ", ".join(f"{n} {t}" for t, n in release.counts.items() if n) or "none"
    stages = dict(release.terminal_stages) or "not recorded"
    lines = [f"release: {release.failure_kind}: {counts}; stages {stages}"]
    for c in release.configurations:
        lines.append(
            f"release configuration {c.configuration_id} ({c.observed_state}): {c.setting('model_id')} "
            f"{c.setting('workload_id')}, {c.setting('gpu_count')} GPUs, utilization "
            f"{c.setting('vllm_gpu_memory_utilization')}, micro-batch {c.setting('actor_micro_batch')}"
        )
        for n in c.neighbours:
            lines.append(
                f"  within the margin with {n.setting}={n.within_margin} (was {n.failed}): "
                f"{n.configuration_id}, peak {n.max_completed_peak_mib} MiB"
            )
    return lines


def _specific_lines(specific: PlanMatch | None) -> list[str]:
    from ...advisor.output.wording import verdict_text

    if specific is None:
        return []
    answer = specific.answer
    lines = [f"your plan {answer.configuration_id} ({answer.origin}): {verdict_text(answer)}"]
    device = specific.device
    if device is not None and not device.agrees:
        lines.append(f"device: {device.note}")
    for f in answer.failed_floors:
        lines.append(f"floor {f.check} FAILS: {f.arithmetic}")
    phases = specific.phases
    if phases is not None:
        term = phases.overflowing_term
        lines.append(
            f"model: binding phase {phases.binding_phase}, diagnosed {phases.diagnosed_phase} "
            f"({'agree' if phases.agree else 'disagree'}); overflowing term {term and term.term.term}"
        )
    return lines
