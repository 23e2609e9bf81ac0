"""``rlvrambench advise`` (alias: ``estimate advise``): will my run fit? Measurement, then floors, then the
per-phase memory model; and, with ``--log``, why did my run run out of memory?

stdout gives each plan's answer in plain words first (fits / does not fit / near the limit / not answered, the
binding phase, by how much, the change to paste: :mod:`.plans`), and with ``--details`` what it rests on under a
legend (:mod:`.details`); a sweep gets a verdict line per plan and a count of verdicts instead. ``--verl`` /
``--trl`` also take ``example:NAME``, a launch file shipped with the package. A failure log's diagnosis is printed
by :mod:`.log`.
``--output`` writes the JSON answer (``.json``) or one row per plan (``.csv``, ``.parquet``), atomically and behind
the output guard. Every line is printed through :func:`~rlvrambench_hf.errors.printable`: names and values from the
user's files reach the terminal escaped.
"""

from __future__ import annotations

import argparse

from ...errors import InputError, quote


def add_advise(p: argparse.ArgumentParser) -> None:
    """The options of ``rlvrambench advise`` (and of its alias ``rlvrambench estimate advise``)."""
    p.description = (
        "Will my run fit? For each planned configuration, first in plain words: fits, does not fit, near the limit or "
        "not answered on your GPU, the phase that binds and by how much, and the change to paste in your own keys. "
        "What it rests on (--details, and the JSON of --output): the release's measured records with the same "
        "settings (every "
        "measured table: the 212 configurations, the larger-model and expanded-host follow-ups, the admission "
        "candidates), its physical floors with their arithmetic, the per-phase memory model's peak of every phase "
        "on your device, the three reference methods' labels and peaks beside it with their leave-one-family-out "
        "track record, the single-setting changes that would make it fit (and those that make a failing floor "
        "hold), its distance to the measured cloud and scope flags. The verdict is the measurement, else a floor "
        "that cannot hold, else the per-phase model's label; what the model does not cover gets none. With --log, "
        "why a run failed."
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
        "key=value overrides (read as text, never run); absent settings take your installed VERL's defaults; "
        "example:qwen2.5-3b-grpo-lora is the example shipped with the package",
    )
    given.add_argument(
        "--trl",
        metavar="FILE",
        help="your TRL GRPOConfig as YAML or JSON (as trl grpo --config takes it), or your TRL training script (.py, "
        "read as source, never run), or its accelerate launch script; example:qwen2.5-1.5b-grpo-lora is the example "
        "shipped with the package",
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
        help="the measured workload your run resembles (gsm8k, math, code_standard, longer_prompt_code); without "
        "it, the one a launch file's data files name (data.train_files, data.val_files, TRL's dataset_name)",
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
        "--details",
        action="store_true",
        help="under each plan's answer, what it rests on: each phase's peak and the error band's parts, the floors "
        "with their arithmetic, the reference methods' own predictions with their track record, the distance to the "
        "measured cloud, every change, the scope flags and every read: line, under a legend of the words",
    )
    p.add_argument(
        "--output",
        metavar="F.json|F.csv|F.parquet",
        help="write the answer as JSON, or one row per plan as CSV or Parquet (atomically)",
    )
    add_log_option(p)
    p.set_defaults(handler=run_advise)


def run_advise(args: argparse.Namespace) -> int:
    if args.log:
        from .log import run_log

        return run_log(args, given_settings(args.setting))
    if not (args.planned or args.verl or args.trl):
        raise InputError("give the run to advise on: --planned, --verl, --trl, or the log of a failed run with --log")
    from .plans import run_plans

    return run_plans(args, given_settings(args.setting))


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


# --log: why did my run run out of memory? (alone, or with the launch file)


def add_log_option(parser: argparse.ArgumentParser) -> None:
    """The ``--log`` option of ``estimate advise``."""
    parser.add_argument(
        "--log",
        metavar="FILE",
        help="the log of a run that failed (- reads standard input; read as text, never run): its failure in the "
        "release's taxonomy, phase and figures, the release's failures of that kind and the fixes; with --verl, "
        "--trl (and --accelerate-config) or --planned as well, specific to that launch file, on the device the log "
        "reports or the one --gpu / --device-capacity-mib names (a launch file that cannot be read leaves the log's "
        "diagnosis, which says why)",
    )
