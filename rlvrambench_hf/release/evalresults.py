"""Scores where the Hub shows them: ``.eval_results/*.yaml`` entries of a scored repository, and the
``eval.yaml`` that declares the benchmark's tasks in the dataset repository.

One task per track and reported metric (``gpu_count_transfer-within_margin_recall``, ...): the card asks for
within-margin recall and approval precision beside the memory-failure and above-margin approvals, per track, and
never one pooled number. Entries are huggingface_hub's own :class:`~huggingface_hub.EvalResultEntry`, written by
``eval_result_entries_to_yaml`` and read back by ``parse_eval_result_entries``; each names the dataset revision
the scores were computed at and, in its notes, the package version and the interval when the score file has one.
An ``estimate compare`` report of one estimator gives one record per fold and metric instead
(``held_out_granite33-within_margin_recall``, ...), each naming its held-out family.
Pure apart from :func:`read_eval_results`, which reads a file.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..data.schema.registry import get_spec
from ..errors import InputError, quote
from ..userfile import check_text, parse_structured, user_bytes

if TYPE_CHECKING:  # pragma: no cover
    from huggingface_hub import EvalResultEntry

#: The metrics each track reports on the Hub, in this order.
REPORTED_METRICS: tuple[str, ...] = (
    "within_margin_recall",
    "within_margin_approval_precision",
    "approved_memory_failure",
    "approved_above_margin",
)
EVAL_RESULTS_FOLDER = ".eval_results"
EVAL_RESULTS_FILE = "rlvrambench.yaml"
TASK_CONFIG = "transfer_queries"
_INTERVAL_NOTE = re.compile(r"interval (?P<low>-?[\d.e+-]+) to (?P<high>-?[\d.e+-]+)")


def task_id(track: str, metric: str) -> str:
    """The Hub task id of one track and metric."""
    return f"{track}-{metric}"


def split_task_id(task: str) -> tuple[str, str] | None:
    """(track, metric) of a task id of this benchmark, or None for another benchmark's task."""
    from ..transfer.key import TRACKS

    for track in TRACKS:
        for metric in REPORTED_METRICS:
            if task == task_id(track, metric):
                return track, metric
    return None


def benchmark_tasks() -> list[dict[str, Any]]:
    """The benchmark's tasks as ``eval.yaml`` declares them: one per track and reported metric."""
    from ..transfer.key import TRACKS

    spec = get_spec(TASK_CONFIG)
    return [
        {"id": task_id(track, metric), "config": spec.name, "split": spec.split}
        for track in TRACKS
        for metric in REPORTED_METRICS
    ]


def eval_yaml_text() -> str:
    """The ``eval.yaml`` of a release: the benchmark's name, what it measures and its tasks."""
    import yaml

    data = {
        "name": "RLVRAMBench",
        "description": "Transfer tasks: predict a target configuration's GPU-memory label (within_margin, "
        "above_margin, memory_failure) from matched source measurements. Report each track's within-margin "
        "recall and approval precision beside its memory-failure and above-margin approvals; open descriptive "
        "tasks, not a blind leaderboard.",
        "tasks": benchmark_tasks(),
    }
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110)


@dataclass(frozen=True)
class Export:
    """The entries written from a score file, and the (track, metric) pairs left out because they were null."""

    entries: list[EvalResultEntry]
    left_out: list[str]


def eval_entries(
    scores: object, *, dataset_id: str, dataset_revision: str, version: str, source: str = "score file"
) -> Export:
    """One entry per track of ``scores`` (a transfer score file) and reported metric; a null value is left out
    (and named), never written as 0."""
    if isinstance(scores, Mapping) and "folds" in scores and "per_track" not in scores:
        return estimation_entries(
            scores, dataset_id=dataset_id, dataset_revision=dataset_revision, version=version, source=source
        )
    scores = check_scores(scores, source)
    scopes = [
        (partial(task_id, track), scope, f"rlvrambench-hf {version}; {scope.get('queries')} queries, track {track}")
        for track, scope in scores["per_track"].items()
    ]
    return _export(scopes, scores.get("interval_settings"), dataset_id, dataset_revision, source)


def _export(
    scopes: Sequence[tuple[Callable[[str], str], Mapping[str, Any], str]],
    about: Any,
    dataset_id: str,
    dataset_revision: str,
    source: str,
) -> Export:
    """One entry per scope (the task id of a metric, its scores, its notes) and reported metric, its interval named
    when ``about`` (the interval settings) and the scope have one; a null value is left out (and named)."""
    from huggingface_hub import EvalResultEntry

    entries, left_out = [], []
    for task, scores, notes in scopes:
        for metric in REPORTED_METRICS:
            value = scores.get(metric)
            if value is None:
                left_out.append(task(metric))
                continue
            block: Mapping[str, Any] = scores.get("intervals") or {}
            shown = block and about and metric in block.get("metrics", {})
            interval = "; " + interval_note(block, metric, about) if shown else ""
            entries.append(
                EvalResultEntry(
                    dataset_id=dataset_id,
                    task_id=task(metric),
                    value=value,
                    dataset_revision=dataset_revision,
                    notes=notes + interval,
                )
            )
    if not entries:
        raise InputError(f"{source} has no non-null value of {', '.join(REPORTED_METRICS)} to export")
    return Export(entries, left_out)


def fold_task_id(family: str, metric: str) -> str:
    """The Hub task id of one held-out family of the estimator comparison and one metric."""
    return f"held_out_{family}-{metric}"


def estimation_entries(
    report: Mapping[str, Any], *, dataset_id: str, dataset_revision: str, version: str, source: str = "score file"
) -> Export:
    """One record per fold (naming its held-out family) and reported metric of the one estimator of an
    ``estimate compare`` report; the notes name the estimator, its arguments, the families it was fitted on, the
    interval when the report has one, and that three families cannot support a claim about a fourth."""
    name, folds = _estimator_folds(report, source)
    described = report.get("estimators", {}).get(name) or {}
    arguments = described.get("arguments")
    shown = f" with {', '.join(f'{k}={quote(v)}' for k, v in arguments.items())}" if arguments else ""
    scopes = [
        (
            partial(fold_task_id, family),
            scores,
            f"rlvrambench-hf {version}; estimator {name}{shown}; held-out family {family} "
            f"({scores.get('queries')} configurations), fitted on {', '.join(f for f in folds if f != family)}; "
            "three held-out families cannot support a claim about a fourth",
        )
        for family, scores in folds.items()
    ]
    return _export(scopes, report.get("interval_settings"), dataset_id, dataset_revision, source)


def _estimator_folds(report: Mapping[str, Any], source: str) -> tuple[str, dict[str, Mapping[str, Any]]]:
    """(the report's one estimator, its scores per held-out family), checked as :func:`check_scores` checks a
    transfer score file."""
    from ..estimation.references import BUILT_IN

    folds = report.get("folds")
    if not isinstance(folds, Mapping) or not folds or not all(isinstance(f, Mapping) for f in folds.values()):
        raise InputError(f"{source} is not an estimate compare report (no folds of scores)")
    names: list[str] = []
    for fold in folds.values():
        scores = fold.get("scores")
        if not isinstance(scores, Mapping):
            raise InputError(f"{source}: a fold has no scores mapping")
        names += [m for m in scores if m not in BUILT_IN and m not in names]
    if len(names) != 1:
        found = ", ".join(quote(n) for n in names[:5]) or "none (the references are the release's own)"
        raise InputError(f"{source}: export needs a report of exactly one estimator of yours, found {found}")
    (name,) = names
    out: dict[str, Mapping[str, Any]] = {}
    for family, fold in folds.items():
        scores = fold["scores"].get(name)
        where = f"{source}: fold {quote(family)} estimator {quote(name)}"
        if not isinstance(family, str) or not isinstance(scores, Mapping):
            raise InputError(f"{where} has no scores")
        for metric in REPORTED_METRICS:
            _check_value(scores.get(metric), f"{where} {metric}", metric)
        out[family] = scores
    return name, out


def check_scores(scores: object, source: str) -> Mapping[str, Any]:
    """``scores`` (a transfer score file, read from ``source``) as far as the Hub entries and the leaderboard read
    it, or one line saying what is wrong: ``per_track`` maps known tracks to mappings whose reported metrics are
    null or in range (rates finite within 0-1, counts whole and not negative), the ends of their intervals too,
    and ``interval_settings`` (when there) names the level, resamples and seed."""
    if not isinstance(scores, Mapping) or not isinstance(scores.get("per_track"), Mapping):
        raise InputError(
            f"{source} is not a transfer score file (no per_track scores); give the file that rlvrambench "
            "evaluate --output writes"
        )
    about = scores.get("interval_settings")
    if about is not None and not (
        isinstance(about, Mapping)
        and _is_number(about.get("level"))
        and 0 < about["level"] < 1
        and all(_is_count(about.get(k)) for k in ("resamples", "seed"))
    ):
        raise InputError(f"{source}: interval_settings {quote(about)} is not a level, resamples and seed")
    for track, scope in scores["per_track"].items():
        _check_track(track, scope, f"{source}: per_track {quote(track)}")
    return scores


def _check_track(track: object, scope: object, where: str) -> None:
    """One track's scores of a score file (see :func:`check_scores`)."""
    from ..transfer.key import TRACKS

    if track not in TRACKS:
        raise InputError(f"{where} is not a track ({', '.join(TRACKS)})")
    if not isinstance(scope, Mapping):
        raise InputError(f"{where} is {quote(scope)}, not a mapping of scores")
    block = scope.get("intervals")
    if block is not None and not (
        isinstance(block, Mapping)
        and isinstance(block.get("method"), str)
        and isinstance(block.get("metrics"), Mapping)
        and _is_count(block.get("units"))
        and isinstance(block.get("unit"), str)
    ):
        raise InputError(f"{where}: intervals {quote(block)} is not an interval block (method, unit, units, metrics)")
    for metric in REPORTED_METRICS:
        _check_value(scope.get(metric), f"{where} {metric}", metric)
        ends = block["metrics"].get(metric) if block is not None else None
        if ends is None:
            continue
        if not isinstance(ends, Mapping):
            raise InputError(f"{where} {metric}: the interval {quote(ends)} is not a mapping of low and high")
        low, high = ends.get("low"), ends.get("high")
        _check_value(low, f"{where} {metric} interval", metric)
        _check_value(high, f"{where} {metric} interval", metric)
        if (low, high) != (None, None) and (low is None or high is None or low > high):
            raise InputError(f"{where} {metric}: the interval {quote(ends)} does not run from low to high")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_value(value: object, where: str, metric: str) -> None:
    """A reported metric's value (or an end of its interval): null, a rate within 0-1 or a count."""
    if value is None:
        return
    if metric.startswith("approved_"):
        if not _is_count(value):
            raise InputError(f"{where}: {quote(value)} is not a count (a whole number, 0 or more)")
    elif not (_is_number(value) and 0 <= value <= 1):  # type: ignore[operator]
        raise InputError(f"{where}: {quote(value)} is not a rate (a finite number from 0 to 1)")


def interval_note(block: Mapping[str, Any], metric: str, about: Mapping[str, Any]) -> str:
    """How an entry's notes state its interval (read back by :func:`interval_of`)."""
    ends = block["metrics"][metric]
    if ends["low"] is None:
        return "no interval"
    from ..scoring.compare import number

    unit, low, high = str(block["unit"]).replace("_", " "), number(ends["low"]), number(ends["high"])
    if block["method"] == "percentile_bootstrap":
        return (
            f"{about['level']:.0%} interval {low} to {high} (percentile bootstrap over {block['units']} {unit}s, "
            f"{about['resamples']} resamples, seed {about['seed']})"
        )
    return f"range over {block['units']} {unit}s {low} to {high} (too few for an interval)"


def interval_of(notes: str | None) -> tuple[float, float] | None:
    """The bootstrap interval an entry's notes state (None without one, or where only a range was possible)."""
    match = _INTERVAL_NOTE.search(notes or "")
    return (float(match.group("low")), float(match.group("high"))) if match else None


def eval_results_text(entries: Sequence[EvalResultEntry]) -> str:
    """The YAML of an ``.eval_results`` file (huggingface_hub's own serialisation)."""
    import yaml
    from huggingface_hub import eval_result_entries_to_yaml

    return yaml.safe_dump(eval_result_entries_to_yaml(list(entries)), sort_keys=False, allow_unicode=True)


def read_eval_results(path: str | os.PathLike[str]) -> list[EvalResultEntry]:
    """The entries of an ``.eval_results/*.yaml`` file, parsed by huggingface_hub."""
    from huggingface_hub import parse_eval_result_entries

    file = Path(path)
    label = f"eval results file {quote(str(file))}"
    content = user_bytes(file, label)
    check_text(content, label)
    data = parse_structured(content.decode("utf-8-sig"), label, ".yaml")
    if not isinstance(data, list) or not all(isinstance(item, Mapping) for item in data):
        raise InputError(f"eval results file {file} is not a list of entries")
    try:
        return parse_eval_result_entries(data)
    except (KeyError, TypeError, ValueError):
        raise InputError(f"eval results file {file} has an entry without dataset id, task id or value") from None


def hub_eval_results(repo_id: str, revision: str = "main", repo_type: str = "model") -> list[EvalResultEntry]:
    """The ``.eval_results/*.yaml`` entries of a Hub repository, fetched and cached by huggingface_hub."""
    from huggingface_hub import snapshot_download

    from ..data.sources.huberrors import hub_errors

    with hub_errors(repo_id, revision, repo_type=repo_type):
        folder = snapshot_download(
            repo_id, repo_type=repo_type, revision=revision, allow_patterns=[f"{EVAL_RESULTS_FOLDER}/*.yaml"]
        )
    files = sorted((Path(folder) / EVAL_RESULTS_FOLDER).glob("*.yaml"))
    if not files:
        raise InputError(f"{repo_type} repository {repo_id}@{revision} has no {EVAL_RESULTS_FOLDER}/*.yaml")
    return [entry for file in files for entry in read_eval_results(file)]
