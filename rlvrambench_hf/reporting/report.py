"""A one-page HTML report of a release and, if given, of your own predictions beside the reference ones.

Top to bottom: provenance (package version, source, revision and commit, time of the run, your input files), the
configs, the figures, the transfer scores (overall then the tracks in the documented order; reference rules and
your predictions) with their confusion matrices, the leaderboard (recall with its interval per track, grouped
where intervals overlap), the admission replay (recall against the budget and against the
attempts really spent, target plus donor), the follow-up studies (frozen methods and your predictions) and the
estimator comparison with model families held out, and — given a plan file — the verdicts of your planned runs.

:func:`build_report` computes everything in memory (nothing is written if any part fails); :func:`write_report`
then writes ``index.html`` — self-contained, the figures embedded as PNG data URIs — and the same PNGs beside it.
The HTML of each section is in :mod:`.sections`, the tables in :mod:`.tables`.
"""

from __future__ import annotations

import datetime as dt
import html
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, Unpack

from ..data.schema.pins import MARGIN_LIMIT_MIB
from ..data.schema.registry import card_configs
from ..data.sources.base import Source
from ..data.sources.resolve import SourceLike
from ..errors import MissingFileError
from ..scoring.bounded import DEFAULT_TIMEOUT
from . import sections as s

TITLE = "RLVRAMBench report"
#: The method name under which your predictions appear (the follow-up scoring's name for them).
USER_METHOD = "user"
FIGURES: dict[str, tuple[str, str]] = {  # file name -> (title, caption)
    "feasibility.png": (
        "Boundary-study feasibility",
        f"Repeated label of each 2-GPU boundary configuration (c0–c5); numbers are the maximum completed per-device "
        f"peak in GiB, blank for memory failures. Limit: {MARGIN_LIMIT_MIB:,} MiB per device.",
    ),
    "stages.png": (
        "Per-stage peaks",
        f"Per-stage device-memory peaks of every eligible process against the {MARGIN_LIMIT_MIB:,} MiB limit; "
        "boxes summarise completed runs, crosses are failure-partial stage records.",
    ),
    "admission.png": (
        "Admission recall against the screening budget",
        "Case-averaged within-margin recall against the per-case screening budget (target attempts) for each rule.",
    ),
    "attempts.png": (
        "Admission recall against the attempts spent",
        "The same recall against every attempt the rule relied on: target attempts spent plus donor attempts. "
        "At budget 0 a donor-based rule's recall rests on its donor attempts alone.",
    ),
    "estimation.png": (
        "Approvals per held-out model family",
        "Each reference method fitted with one model family held out and applied to its 30 configurations: approvals "
        "by observed label (within margin is useful; above margin and memory failure are errors), correct labels and "
        "usable settings rejected above each bar.",
    ),
}
#: Columns of the estimator comparison table (one row per held-out family and method).
ESTIMATION_COLUMNS = (
    "fold",
    "method",
    "correct",
    "approved",
    "approved_within_margin",
    "approved_above_margin",
    "approved_memory_failure",
    "rejected_within_margin",
    "peak_mae_mib",
)


@dataclass(frozen=True)
class Report:
    """The rendered page and the PNG bytes of its figures, by file name."""

    html: str
    images: Mapping[str, bytes]


class ReportInputs(TypedDict, total=False):
    """What a user adds to the report (every key optional): ``predictions`` (a transfer predictions file) and
    ``followup_predictions`` (study → predictions file), scored beside the reference rules and frozen methods; a
    ``module:attr`` ``policy`` that joins the admission replay, each of its calls within ``timeout`` seconds
    (default 300; None: no limit); ``planned`` (a plan file), which gets a section of verdicts."""

    policy: str | None
    predictions: str | os.PathLike[str] | None
    followup_predictions: Mapping[str, str | os.PathLike[str]] | None
    planned: str | os.PathLike[str] | None
    timeout: float | None


def build_report(
    source: SourceLike = None,
    revision: str | None = None,
    *,
    now: dt.datetime | None = None,
    **given: Unpack[ReportInputs],
) -> Report:
    """Compute every section of the report for ``source``, with the user's inputs (:class:`ReportInputs`); your
    files are read, scored and replayed first, so that a bad one fails before the release's own sections."""
    from .. import __version__, admission, transfer
    from ..data.sources.resolve import open_source
    from ..data.tables.reader import load_table
    from ..estimation import fold_table, run_retrospective
    from ..followup import STUDIES, score_study, study_config
    from .canvas import figure_png, require_matplotlib
    from .comparison import estimation_figure
    from .curves import admission_figure, attempts_figure
    from .figuredata import admission_curve, feasibility_matrix, fold_approvals, stage_table
    from .plots import feasibility_figure, stages_figure

    require_matplotlib()
    policy, predictions, planned = given.get("policy"), given.get("predictions"), given.get("planned")
    followup_files = dict(given.get("followup_predictions") or {})
    for study in followup_files:
        study_config(study)  # an unknown study fails before any work
    plans = None
    if planned is not None:
        from ..advisor import read_plans

        plans = read_plans(planned, source=source, revision=revision)
    src = open_source(source, revision)
    # the user's inputs first (their predictions scored, their policy replayed), so that a bad one fails at once
    tables = transfer.load_transfer_tables(src)
    mine = None
    if predictions is not None:
        key = transfer.scoring_key(tables["queries"], tables["outcomes"])
        ids, states = transfer.read_predictions(predictions)
        origin = f"predictions file {predictions}"
        mine = transfer.score_predictions(key, ids, states, origin=origin, intervals=True)
    theirs = {study: score_study(study, src, predictions=path) for study, path in followup_files.items()}
    replay = admission.replay_report(src, policy=policy, timeout=given.get("timeout", DEFAULT_TIMEOUT))
    methods = {rule: transfer.reference_scores(rule, src, intervals=True) for rule in transfer.RULES}
    if mine is not None:
        methods[USER_METHOD] = mine
    followups = {study: theirs[study] if study in theirs else score_study(study, src) for study in STUDIES}
    configurations = load_table("all_configurations", src, decode=True)
    points = admission_curve(replay)
    retrospective = run_retrospective(src)
    images = {
        "feasibility.png": figure_png(feasibility_figure(feasibility_matrix(configurations))),
        "stages.png": figure_png(
            stages_figure(
                stage_table(load_table("stage_measurements", src, decode=True), configurations),
                title="Per-stage device-memory peaks: all eligible processes",
            )
        ),
        "admission.png": figure_png(admission_figure(points)),
        "attempts.png": figure_png(attempts_figure(points)),
        "estimation.png": figure_png(estimation_figure(fold_approvals(retrospective))),
    }
    inputs: dict[str, str | os.PathLike[str] | None] = {"transfer predictions": predictions, "admission policy": policy}
    inputs.update({f"{study} predictions": path for study, path in followup_files.items()})
    body = [
        s.section("Configs", _configs_table(src), "configs"),
        s.section("Figures of the release", _figures(images, ("feasibility.png", "stages.png")), "figures"),
        s.section("Transfer tasks", _transfer_body(methods), "transfer"),
        s.section("Leaderboard", _leaderboard_body(methods), "leaderboard"),
        s.section(
            "Admission replay",
            _figures(images, ("admission.png", "attempts.png"))
            + s.admission_summary(replay["summary"])
            + s.admission_ledgers(replay),
            "admission",
        ),
        s.section("Follow-up studies", "".join(s.followup_block(k, v) for k, v in followups.items()), "followup"),
        s.section(
            "Estimator comparison, model families held out",
            _figures(images, ("estimation.png",))
            + s.table(ESTIMATION_COLUMNS, [[row[c] for c in ESTIMATION_COLUMNS] for row in fold_table(retrospective)]),
            "estimation",
        ),
    ]
    if plans is not None:
        from ..advisor import advise
        from .advice import advice_section

        body.append(advice_section(advise(plans, src), os.fspath(str(planned))))
        inputs["planned runs"] = planned
    items = provenance(src, __version__, now or dt.datetime.now(dt.UTC), inputs)
    page = s.PAGE.format(title=html.escape(TITLE), provenance=s.provenance(items), body="\n".join(body))
    return Report(page, images)


def provenance(
    src: Source, version: str, now: dt.datetime, inputs: Mapping[str, str | os.PathLike[str] | None] | None = None
) -> list[tuple[str, str]]:
    """What the report was made from: package version, source, revision, commit, time of the run and the user's
    inputs that were given."""
    identity = src.identity
    local = identity.get("commit") is None
    items = [
        ("package", f"rlvrambench-hf {version}"),
        ("source", f"{identity['source']}" + (" (local folder)" if local else " (Hub repository)")),
        ("revision", str(identity.get("revision") or "none: a local folder has no revision")),
        ("commit", str(identity.get("commit") or "none: a local folder has no commit")),
        ("run at", now.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")),
    ]
    items += [(name, os.fspath(value)) for name, value in (inputs or {}).items() if value is not None]
    return items


def write_report(
    output_dir: str | os.PathLike[str],
    source: SourceLike = None,
    revision: str | None = None,
    **given: Unpack[ReportInputs],
) -> Path:
    """Build the report (the inputs as :func:`build_report`) and write ``index.html`` and its PNGs into
    ``output_dir`` (created if needed), all of them or none."""
    from ..data.sources.resolve import open_source
    from ..data.tables.output import check_outputs, check_target, new_folder, object_file, write_all_atomic

    target = Path(output_dir)
    check_target(target, folder=True)
    src = open_source(source, revision)
    inputs = {
        "--policy": object_file(given.get("policy")),
        "--predictions": given.get("predictions"),
        "--planned": given.get("planned"),
    }
    followup = given.get("followup_predictions") or {}
    inputs.update({f"--followup-predictions {study}": path for study, path in followup.items()})
    names = ["index.html", *FIGURES]
    if target.is_dir():  # an existing folder: only the report's own files are written
        check_outputs([target / name for name in names], inputs=inputs, source=src)
    else:
        check_outputs(folders=[target], inputs=inputs, source=src)
    report = build_report(src, **given)
    with new_folder(target):
        files: dict[Path, str | bytes] = {target / name: report.images[name] for name in names[1:]}
        write_all_atomic({**files, target / "index.html": report.html})
    return target / "index.html"


def _figures(images: Mapping[str, bytes], names: tuple[str, ...]) -> str:
    return "".join(f"<h3>{html.escape(FIGURES[n][0])}</h3>{s.figure(n, images[n], FIGURES[n][1])}" for n in names)


def _configs_table(src: Source) -> str:
    from ..data.tables.reader import load_table

    rows = []
    for spec in card_configs():
        try:
            count: object = f"{load_table(spec.name, src).num_rows:,}"
        except MissingFileError:
            count = "not in this revision"
        rows.append([spec.name, spec.split, count, spec.path, spec.description])
    return s.table(("config", "split", "rows", "file", "description"), rows)


def _leaderboard_body(methods: Mapping[str, Mapping[str, Any]]) -> str:
    from .leaderboard import LEGEND, leaderboard_table, standings_from_scores

    standings = [x for method, scores in methods.items() for x in standings_from_scores(method, scores)]
    about = next(iter(methods.values()))["interval_settings"]
    how = (
        f"Intervals: {about['level']:.0%} percentile bootstrap over target configurations ({about['resamples']} "
        f"resamples, seed {about['seed']}); a track with fewer than {about['minimum_units']} targets has none."
    )
    return s.paragraph(LEGEND) + s.from_table(leaderboard_table(standings)) + s.paragraph(how, "note")


def _transfer_body(methods: Mapping[str, Mapping[str, Any]]) -> str:
    from .tables import transfer_table

    intro = (
        "Reference rules" + (" and your predictions (method user)" if USER_METHOD in methods else "") + ", "
        "overall and per track in the documented order. Report within-margin recall and approval precision with "
        "the memory-failure and above-margin approvals, per track."
    )
    matrices = "".join(s.confusion_block(method, scores) for method, scores in methods.items())
    legend = s.paragraph(
        "Confusion matrices: predicted label (rows) against observed label (columns) per scope; "
        "WM within_margin, AM above_margin, MF memory_failure.",
        "note",
    )
    return s.paragraph(intro) + s.from_table(transfer_table(methods)) + legend + matrices
