"""``rlvrambench advise`` (alias: ``estimate advise``): will my run fit? Measurement, then floors, then predictions.

stdout leads with one verdict line per plan, then the details of each plan (up to :data:`DETAIL_LIMIT` plans; a
sweep gets a count of verdicts instead). ``--output`` writes the JSON answer (``.json``) or one row per plan
(``.csv``, ``.parquet``), atomically and behind the output guard.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from ..errors import InputError, quote
from ._common import checked_source, format_table

#: Plans whose details are printed; above it stdout has the verdict lines and a summary.
DETAIL_LIMIT = 20
OUTPUT_SUFFIXES = (".json", ".csv", ".parquet")


def add_advise(p: argparse.ArgumentParser) -> None:
    """The options of ``rlvrambench advise`` (and of its alias ``rlvrambench estimate advise``)."""
    p.description = (
        "For each planned configuration: the release's measured records with the same settings (every "
        "measured table: the 212 configurations, the larger-model and expanded-host follow-ups, the admission "
        "candidates), its physical floors with their arithmetic, the three reference methods' labels and peaks "
        "with their leave-one-family-out track record, the single-setting changes that would make it fit, its "
        "distance to the measured cloud and scope flags. The verdict is measured > floor > predicted."
    )
    given = p.add_mutually_exclusive_group(required=False)  # one of them, or --log (advise_log)
    given.add_argument(
        "--planned",
        metavar="F.yaml|F.json|F.csv",
        help="a mapping of settings (or a list of them) or a CSV with the columns of targets.csv",
    )
    given.add_argument(
        "--verl",
        metavar="FILE",
        help="your VERL run: a config YAML (Hydra-composed, dumped or ppo_trainer.yaml-shaped) or a launch script of "
        "key=value overrides (read as text, never run); absent settings take your installed VERL's defaults",
    )
    given.add_argument(
        "--trl",
        metavar="FILE",
        help="your TRL GRPOConfig as YAML or JSON (as trl grpo --config takes it), or your TRL training script (.py, "
        "read as source, never run)",
    )
    p.add_argument(
        "--accelerate-config",
        metavar="FILE",
        help="with --trl: the accelerate config the run is launched with (accelerate launch --config_file FILE): "
        "processes over all machines, machines, DeepSpeed / FSDP / DDP and their offloads",
    )
    p.add_argument("--verl-version", metavar="X.Y.Z", help="with --verl: the VERL release the run uses (its defaults "
                   "and checks; default: the installed VERL's, else the newest this package knows)")  # fmt: skip
    p.add_argument("arguments", nargs="*", metavar="-- ARGS", help="after --: the launch script's own arguments, as "
                   "you run it (none: the values it sets by default)")  # fmt: skip
    p.add_argument(
        "--workload",
        metavar="NAME",
        help="the measured workload your run resembles (gsm8k, math, code_standard, longer_prompt_code); VERL and "
        "TRL configs do not say it",
    )
    p.add_argument(
        "--device-capacity-mib",
        type=int,
        metavar="MIB",
        help="plan for a device other than the benchmark's 40 GB A100 (every row is then flagged)",
    )
    p.add_argument(
        "--gpu", metavar="NAME", help="plan for a GPU by name (A100-80GB, H100, H200, L40S, RTX 4090, L4, A10G, ...)"
    )
    p.add_argument(
        "--margin-limit-mib",
        type=int,
        metavar="MIB",
        help="the per-device limit on that device (default: 95%% of its capacity, as the card defines the margin)",
    )
    p.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting in the dataset's vocabulary (a column of configurations.csv) for every plan that does not give "
        "it, e.g. max_prompt_length=1024 for a TRL config that does not cap prompts (repeatable)",
    )
    p.add_argument("--model-revision", metavar="REV", help="Hub revision of a model outside the release (default main)")
    p.add_argument("--nearest", type=int, default=3, metavar="K", help="measured configurations to list (default 3)")
    p.add_argument(
        "--output",
        metavar="F.json|F.csv|F.parquet",
        help="write the answer as JSON, or one row per plan as CSV or Parquet (atomically)",
    )
    add_log_option(p)
    p.set_defaults(handler=run_advise)


def run_advise(args: argparse.Namespace) -> int:
    from ..advisor import Hardware, advise, read_plans

    if args.log:
        return run_log(args, given_settings(args.setting))
    if not (args.planned or args.verl or args.trl):
        raise InputError("give the run to advise on: --planned, --verl, --trl, or the log of a failed run with --log")
    if args.output and not args.output.lower().endswith(OUTPUT_SUFFIXES):
        raise InputError(f"--output {quote(args.output)}: use a file ending in {', '.join(OUTPUT_SUFFIXES)}")
    hardware = Hardware.of(args.device_capacity_mib, args.margin_limit_mib, args.gpu)
    kind, given = next((k, v) for k, v in (("planned", args.planned), ("verl", args.verl), ("trl", args.trl)) if v)
    inputs = {f"--{kind}": given, **({"--accelerate-config": args.accelerate_config} if args.accelerate_config else {})}
    source = checked_source(args, [args.output], inputs)
    settings = given_settings(args.setting)
    plans = read_plans(
        given,
        kind=kind,  # type: ignore[arg-type]
        workload=args.workload,
        settings=settings,
        source=source,
        accelerate_config=args.accelerate_config,
        **launch_options(args),
    )
    answers = advise(plans, source, hardware=hardware, model_revision=args.model_revision, nearest=args.nearest)
    write_answers(answers, args.output)
    print(render(answers))
    return 0


def launch_options(args: argparse.Namespace) -> dict[str, Any]:
    """``-- ARGS`` and ``--verl-version`` for the reader of a VERL or TRL launch file."""
    if (args.verl_version is not None and not args.verl) or (args.arguments and not (args.verl or args.trl)):
        raise InputError("a script's arguments (after --) go with --verl or --trl, --verl-version with --verl")
    return {"arguments": args.arguments or None, "verl_version": args.verl_version}


def given_settings(pairs: list[str]) -> dict[str, str]:
    """``--setting NAME=VALUE`` options as a mapping (typed and checked by the plan reader, as a CSV cell is)."""
    settings: dict[str, str] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        name = name.strip()
        if not equals or not name:
            raise InputError(f"--setting {quote(pair)}: write NAME=VALUE, e.g. max_prompt_length=1024")
        if settings.get(name, value) != value:
            raise InputError(f"--setting {quote(name)} is given twice with different values")
        settings[name] = value
    return settings


def write_answers(answers: object, path: str | None) -> None:
    """``--output``: JSON, CSV or Parquet by suffix."""
    if not path:
        return
    if path.lower().endswith(".json"):
        from ..advisor.output.document import document
        from ..data.tables.output import write_json

        write_json(path, document(answers))  # type: ignore[arg-type]
        return
    from ..advisor.output.sweep import write_sweep

    write_sweep(answers, path)  # type: ignore[arg-type]


def render(answers: object) -> str:
    """The verdict line of each plan, then details (or, for a sweep, the verdict counts)."""
    from ..advisor.output.document import STATEMENT, configuration
    from ..advisor.output.sweep import verdict_counts, verdict_lines

    lines = verdict_lines(answers)  # type: ignore[arg-type]
    if len(lines) > DETAIL_LIMIT:
        summary = format_table(["verdict / basis", "plans"], verdict_counts(answers))  # type: ignore[arg-type]
        return "\n".join([*lines, "", f"{len(lines)} plans; details of each are in --output F.json", summary])
    out = [*lines, "", STATEMENT]
    for i in range(len(lines)):
        out += ["", *detail(configuration(answers, i)), *read_from(answers.plans, i)]  # type: ignore[arg-type, attr-defined]
    return "\n".join(out)


def read_from(plans: object, row: int) -> list[str]:
    """The values a plan did not write itself: taken from defaults, another file or a conversion, each named by the
    user's own key and where it came from."""
    sources = getattr(plans, "sources", ())
    if not sources:
        return []
    values = plans.settings(row)  # type: ignore[attr-defined]
    lines = []
    origin = plans.origins[row]  # type: ignore[attr-defined]
    for setting, where in sources[row].items():
        written = plans.written.get(setting, setting)  # type: ignore[attr-defined]
        if setting not in values or where == origin or re.fullmatch(r".* line \d+", where):
            continue
        named = f"{written} -> {setting} {values[setting]}" if written != setting else f"{setting} {values[setting]}"
        lines.append(f"read: {named}" + (f": {where}" if where.startswith(("not ", "EasyR1 ")) else f" from {where}"))
    return lines + [f"read: {note}" for note in getattr(plans, "row_notes", lambda _: [])(row)]


def detail(c: dict[str, Any]) -> list[str]:
    """The readable answer to one plan."""
    v = c["verdict"]
    unmeasured = any(str(f).startswith("model family not measured") for f in c["scope_flags"])
    family = c["model_family"] or ("family not measured" if unmeasured else "measured, outside the estimation families")
    lines = [f"== {c['configuration_id']}: {c['model_id']} ({family})"]
    lines.append(f"verdict: {v['state'] or 'unknown'} (basis {v['basis']}): {v['sentence']}")
    for r in c["measured"] or []:
        peak = r["max_completed_peak_mib"]
        lines.append(
            f"measured: {r['table']} {r['configuration_id']} {r['observed_state']}, seeds {r['eligible_seeds']}, "
            + ("no seed completed" if peak is None else f"max completed peak {peak} MiB")
        )
    for n in c["near_matches"][:5]:
        lines.append(
            f"near match: {n['table']} {n['configuration_id']} {n['observed_state']} with {n['setting']}="
            f"{n['measured']} (yours {n['plan']})"
        )
    for f in c["floors"]:
        mark = {True: "holds", False: "FAILS", None: "unchecked"}[f["holds"]]
        lines.append(f"floor {f['check']}: {mark}: {f['arithmetic']}")
    if c["predictions"]:
        body = [
            [
                m,
                p["predicted_state"],
                p["predicted_peak_mib"],
                p["track_record"]["approvals_that_failed"],
                p["track_record"]["usable_rejected"],
            ]
            for m, p in c["predictions"].items()
        ]
        headers = ["method", "predicted_state", "predicted_peak_mib", "held_out_failed_approvals", "usable_rejected"]
        lines.append(format_table(headers, body))
    else:
        lines.append(f"predictions: unavailable ({c['predictions_unavailable']})")
    d = c["distance"]
    if d:
        lines.append(
            f"distance to the nearest measured configuration: {d['nearest']:.2f} (measured configurations' own "
            f"nearest-neighbour distances: median {d['cloud_nearest_neighbour_median']:.2f}, largest "
            f"{d['cloud_nearest_neighbour_max']:.2f})"
        )
    for change in c["changes"]:
        support = change["supporting_configuration"]
        why = f"measured: {support['configuration_id']}" if support else "predicted"
        peak = change["predicted_peak_change_mib"]
        shift = f", predicted peak {peak:+.0f} MiB" if peak is not None else ""
        lines.append(f"change: {change['setting']} {change['from']} -> {change['to']} ({why}{shift})")
    for flag in c["scope_flags"] or ["none: within the measured families, settings and hardware"]:
        lines.append(f"scope: {flag}")
    return lines


# --log: why did my run run out of memory? (alone, or with the launch file)


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
    from ..advisor.diagnose.explain import explain_failure
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
        plans = read_plans(given, kind=kind, workload=args.workload, settings=settings, source=source,  # type: ignore[arg-type]
                           **launch_options(args))  # fmt: skip
    found = explain_failure(args.log, source, plans=plans, hardware=hardware)
    if args.output:
        from ..advisor.output.document import STATEMENT
        from ..data.tables.output import write_json

        write_json(args.output, {"statement": STATEMENT, "diagnosis": found.as_dict()})
    print(render_diagnosis(found.as_dict()))
    return 0


def render_diagnosis(d: dict[str, Any]) -> str:
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


def _release_lines(release: dict[str, Any] | None) -> list[str]:
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


def _specific_lines(specific: dict[str, Any] | None) -> list[str]:
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
