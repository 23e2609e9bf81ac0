"""``advise --planned / --verl / --trl``: the answers to the plans of a file, printed from the typed answers (each
plan's answer in plain words, then with ``--details`` what it rests on; for a sweep, a verdict line per plan and the
count of verdicts) and written by ``--output``. ``example:NAME`` names a launch file shipped with the package."""

from __future__ import annotations

import argparse
from typing import Any, Literal

from ...advisor import Hardware, Plans, advise, read_plans
from ...advisor.assess.answers import Answers
from ...errors import InputError, printable, quote
from ..shared.common import checked_source, format_table

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
    given, example = shipped_example(given, kind)
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
    text = render(answers, kind, args.details, {given: example} if example else None)
    if example is not None:  # where to copy it from
        beside = " with the files beside it that it names" if kind == "trl" else ""
        text += f"\n{example} is {given}: copy it{beside} to start your own"
    print(printable(text))
    return 0


#: How a launch option names an example this package ships (``--verl example:qwen2.5-3b-grpo-lora``).
EXAMPLE = "example:"


def shipped_example(given: str, kind: Kind) -> tuple[str, str | None]:
    """``given``, or for ``example:NAME`` the installed file of that example and the name as the user wrote it."""
    from pathlib import Path

    if not given.startswith(EXAMPLE) or kind == "planned" or Path(given).exists():  # a file of that name is the file
        return given, None
    from ... import example_path

    path = example_path(given[len(EXAMPLE) :])
    tool = Path(path).parent.name
    if tool != kind:
        raise InputError(f"{quote(given)} is a {tool.upper()} launch file: advise --{tool} {given}")
    return path, given


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


def render(
    answers: Answers, kind: Kind = "planned", with_details: bool = False, names: dict[str, str] | None = None
) -> str:
    """Each plan's answer in plain words (:func:`~rlvrambench_hf.advisor.output.headline.headline`) and the
    ``read:`` line of its workload; with ``with_details``, what it rests on under a legend (:mod:`.details`). A
    sweep (more than :data:`DETAIL_LIMIT` plans) gets a verdict line per plan and the count of verdicts. ``names``:
    files named as the user named them (a shipped example's path -> ``example:NAME``)."""
    from ...advisor.output.headline import headline

    if len(answers) > DETAIL_LIMIT:
        from ...advisor.output.sweep import verdict_counts, verdict_lines

        lines = verdict_lines(answers)
        summary = format_table(["verdict / basis", "plans"], verdict_counts(answers))
        return "\n".join([*lines, "", f"{len(lines)} plans; details of each are in --output F.json", summary])
    out: list[str] = []
    for i in range(len(answers)):
        answer = answers.answer(i)
        out += [*([""] if out else []), *headline(answer, kind), *workload_lines(answers.plans, i, names or {})]
    if with_details:
        from .details import LEGEND, details

        out += ["", LEGEND]
        for i in range(len(answers)):
            out += ["", *details(answers.answer(i), answers.plans, i)]
    else:
        out += ["", "(--details: each phase's peak, the floors, the reference methods' own predictions, the scope "
                "flags and every read: line)"]  # fmt: skip
    return _renamed("\n".join(out), names or {})


def _renamed(text: str, names: dict[str, str]) -> str:
    for path, name in names.items():
        text = text.replace(path, name)
    return text


def workload_lines(plans: Plans, row: int, names: dict[str, str]) -> list[str]:
    """The ``read:`` line that says which workload a launch file's data files name (or that asks for one)."""
    import textwrap

    notes = [_renamed(note, names) for note in plans.row_notes(row) if note.startswith("workload ")]
    return [
        line
        for note in notes
        for line in textwrap.wrap(f"read: {note}", 116, initial_indent="  ", subsequent_indent="    ",
                                  break_long_words=False, break_on_hyphens=False)
    ]  # fmt: skip
