"""``rlvrambench estimate advise --log FILE``: why did my run run out of memory? (alone, or with the launch file)."""

from __future__ import annotations

import argparse

from ..errors import InputError, quote


def add_log_option(parser: argparse.ArgumentParser) -> None:
    """The ``--log`` option of ``estimate advise``."""
    parser.add_argument(
        "--log",
        metavar="FILE",
        help="the log of a run that failed (- reads standard input; read as text, never run): its failure in the "
        "release's taxonomy, phase and figures, the release's failures of that kind and the fixes; with --verl or "
        "--trl as well, specific to that launch file on the device the log reports",
    )


def run_log(args: argparse.Namespace, settings: dict[str, str]) -> int:
    """Diagnose ``args.log`` (with the plans of ``--verl`` / ``--trl`` / ``--planned`` when given; ``settings``: the
    ``--setting`` options)."""
    from ..advisor import Hardware, read_plans
    from ..advisor.oom import explain_failure
    from ._common import checked_source

    if args.output and not args.output.lower().endswith(".json"):
        raise InputError(
            f"--output {quote(args.output)}: with --log, write the answer as JSON (a file ending in .json)"
        )
    given = args.device_capacity_mib is not None or args.margin_limit_mib is not None
    hardware = Hardware.of(args.device_capacity_mib, args.margin_limit_mib) if given else None  # None: the log's
    named = [(k, v) for k, v in (("planned", args.planned), ("verl", args.verl), ("trl", args.trl)) if v]
    inputs = {"--log": args.log, **{f"--{k}": v for k, v in named}}
    source = checked_source(args, [args.output], {k: v for k, v in inputs.items() if v != "-"})
    plans = None
    if named:
        kind, given = named[0]
        plans = read_plans(given, kind=kind, workload=args.workload, settings=settings, source=source)  # type: ignore[arg-type]
    found = explain_failure(args.log, source, plans=plans, hardware=hardware)
    if args.output:
        from ..advisor.document import STATEMENT
        from ..data.tables.output import write_json

        write_json(args.output, {"statement": STATEMENT, "diagnosis": found.as_dict()})
    print(render(found.as_dict()))
    return 0


def render(d: dict) -> str:
    """The diagnosis as text: its one line first, then the figures, the release's record and the fixes."""
    lines = [d["headline"], ""]
    message = d["message"]
    if message:
        lines.append(f"message ({message['source']}, line {message['line']}): {message['excerpt']}")
    if d["failure_class"] is not None:
        lines.append(f"phase: {d['phase'] or 'not stated in the log'} ({d['phase_basis']})")
    for n in d["numbers"]:
        lines.append(f"figure {n['name']}: {n['value']:,} {n['unit']} (written {n['written']})")
    device = d["device"]
    if device:
        names = " or ".join(device["candidates"]) or "a device not in the list"
        measured = "the release's device" if device["measured"] else "not the release's device (A100 40GB)"
        lines.append(f"device: {device['log_total_mib']:,} MiB total: {names}, {measured}")
    for s in d["also_in_log"]:
        lines.append(f"also in the log (line {s['line']}, {s['family']}): {s['excerpt'][:160]}")
    lines += _release_lines(d["release"])
    lines += _specific_lines(d["specific"])
    for f in d["fixes"]:
        trl = f" (TRL: {f['trl']})" if f["trl"] else ""
        lines.append(f"fix [{f['basis']}]: {f['key']} {f['change']}{trl}: {f['why']}")
    if d["note"]:
        lines.append(f"note: {d['note']}")
    lines.append(f"log: {d['log']}")
    return "\n".join(lines)


def _release_lines(release: dict | None) -> list[str]:
    if not release:
        return []
    counts = ", ".join(f"{n} {t}" for t, n in release["counts"].items() if n) or "none"
    lines = [f"release: {release['failure_kind']}: {counts}; stages {release['terminal_stages'] or 'not recorded'}"]
    for c in release["configurations"]:
        lines.append(
            f"release configuration {c['configuration_id']} ({c['observed_state']}): {c['model_id']} "
            f"{c['workload_id']}, {c['gpu_count']} GPUs, utilization {c['vllm_gpu_memory_utilization']}, "
            f"micro-batch {c['actor_micro_batch']}"
        )
        for n in c["within_margin_neighbours"]:
            lines.append(
                f"  within the margin with {n['setting']}={n['within_margin']} (was {n['failed']}): "
                f"{n['configuration_id']}, peak {n['max_completed_peak_mib']} MiB"
            )
    return lines


def _specific_lines(specific: dict | None) -> list[str]:
    if not specific:
        return []
    v = specific["verdict"]
    lines = [f"your plan {specific['plan']} ({specific['origin']}): {v['state']} (basis {v['basis']}): {v['sentence']}"]
    device = specific["device"]
    if device and not device["agrees"]:
        lines.append(f"device: {device['note']}")
    for f in specific["floors_failed"]:
        lines.append(f"floor {f['check']} FAILS: {f['arithmetic']}")
    phases = specific.get("phases")
    if phases:
        term = phases["overflowing_term"]
        lines.append(
            f"model: binding phase {phases['binding_phase']}, diagnosed {phases['diagnosed_phase']} "
            f"({'agree' if phases['agree'] else 'disagree'}); overflowing term {term and term['term']}"
        )
    return lines
