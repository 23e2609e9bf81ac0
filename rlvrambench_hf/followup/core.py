"""Scoring of the frozen estimator panels: the larger-model study and its expanded-host follow-up.

Each study is a table of planned configurations with a repeated label that may be ``unresolved`` and three
method predictions sealed before execution (donor copy, component regression, logistic classification). An
unresolved target is neither a correct prediction nor a safe approval, so every method gets two views side by
side: approvals over the full planned panel (scored and unscored, with the known failure evidence of the
unscored ones) and label and peak metrics over the resolved subset only, with the fields of the estimator
comparison's fold scores (:func:`rlvrambench_hf.scoring.estimators.estimator_scores`: the label metrics,
``queries``, ``distinct_target_configurations``, the peak-error statistics and ``startup_guard_changed_states``).

This module is the pure core (:func:`score_panel`); :mod:`.api` reads a user's predictions file and loads a
study from a source.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..data.schema.pins import DEVICE_CAPACITY_MIB, MARGIN_LIMIT_MIB, OUTCOME_LABELS, UNRESOLVED
from ..errors import InputError, quote, summary
from ..scoring.estimators import estimator_scores, peak_error_statistics, state_from_peak

#: Study name (command-line spelling) → config holding it.
STUDIES: dict[str, str] = {
    "larger_model": "larger_model_configurations",
    "expanded_host": "expanded_host_configurations",
}
#: The frozen methods, by the prefix of their prediction columns.
FROZEN_METHODS: tuple[str, ...] = ("donor_copy", "component_regression", "logistic")
#: The frozen method whose label a startup check may override: its guard changed a label exactly when the label
#: differs from the one its own peak implies.
GUARDED_METHOD = "component_regression"
#: Key under which a user's predictions are scored.
USER_METHOD = "user"
APPROVAL = "within_margin"
METRIC_SCOPE = (
    "Label and peak metrics cover only the resolved configurations; approvals cover the full planned panel. "
    "An unresolved target is neither a correct prediction nor a safe approval: read unscored approvals beside "
    "every resolved-subset score."
)
PREDICTION_COLUMNS = ("configuration_id", "predicted_state")
PEAK_COLUMN = "predicted_peak_mib"


@dataclass(frozen=True)
class MethodPredictions:
    """One method's predictions: a label per configuration id, optionally a peak in MiB (None: no peak), and
    whether a startup guard changed the label (absent: no guard)."""

    states: Mapping[str, str]
    peaks_mib: Mapping[str, float | None] = field(default_factory=dict)
    guard_changed: Mapping[str, bool] = field(default_factory=dict)


def study_config(study: str) -> str:
    """The config name of ``study`` (``larger_model`` or ``expanded_host``; the config name is accepted too)."""
    if study in STUDIES:
        return STUDIES[study]
    if study in STUDIES.values():
        return study
    raise InputError(f"unknown study {quote(study)}; choose one of: {', '.join(STUDIES)}")


def frozen_predictions(rows: Sequence[Mapping[str, Any]]) -> dict[str, MethodPredictions]:
    """The three frozen methods' predictions from a study's own ``<method>_predicted_*`` columns."""
    methods = {
        method: MethodPredictions(
            states={r["configuration_id"]: r[f"{method}_predicted_state"] for r in rows},
            peaks_mib={r["configuration_id"]: r[f"{method}_predicted_peak_mib"] for r in rows},
        )
        for method in FROZEN_METHODS
    }
    guarded = methods[GUARDED_METHOD]
    changed = {
        cid: peak is not None and guarded.states[cid] != state_from_peak(peak, DEVICE_CAPACITY_MIB, MARGIN_LIMIT_MIB)
        for cid, peak in guarded.peaks_mib.items()
    }
    methods[GUARDED_METHOD] = MethodPredictions(guarded.states, guarded.peaks_mib, changed)
    return methods


def score_panel(rows: Sequence[Mapping[str, Any]], methods: Mapping[str, MethodPredictions]) -> dict[str, Any]:
    """Score each method on a study's rows (decoded labels), in the published evaluation file's structure.

    ``rows`` need ``configuration_id``, ``observed_state``, ``known_memory_failure``, ``known_margin_exceedance``
    and ``completed_peak_mib``; every method must predict exactly the rows' configuration ids.
    """
    ids = [r["configuration_id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise InputError("study table has duplicate configuration ids")
    resolved = [r for r in rows if r["observed_state"] != UNRESOLVED]
    unresolved = [r for r in rows if r["observed_state"] == UNRESOLVED]
    approvals: dict[str, dict[str, Any]] = {}
    metrics: dict[str, dict[str, Any]] = {}
    for name, prediction in methods.items():
        _check_coverage(prediction.states, ids, f"method {name}")
        approvals[name] = panel_approvals(rows, prediction)
        metrics[name] = resolved_metrics(resolved, prediction)
    return {
        "planned_configurations": len(rows),
        "resolved_configurations": len(resolved),
        "unresolved_configurations": len(unresolved),
        "resolved_ids": _ids(resolved),
        "unresolved_ids": _ids(unresolved),
        "full_panel_coverage": len(resolved) / len(rows) if rows else None,
        "metric_scope": METRIC_SCOPE,
        "approvals": approvals,
        "resolved_subset_metrics": metrics,
    }


def panel_approvals(rows: Sequence[Mapping[str, Any]], prediction: MethodPredictions) -> dict[str, Any]:
    """A method's approvals over planned ``rows`` (repeats count again): scored and unscored, with the known
    failure evidence against the unscored ones."""
    approved = [r for r in rows if prediction.states[r["configuration_id"]] == APPROVAL]
    unscored = [r for r in approved if r["observed_state"] == UNRESOLVED]
    return {
        "full_panel_approved_configurations": len(approved),
        "full_panel_approved_ids": _ids(approved),
        "scored_approved_configurations": len(approved) - len(unscored),
        "unscored_approved_configurations": len(unscored),
        "unscored_approved_ids": _ids(unscored),
        "unscored_approvals_with_known_failure": sum(bool(r["known_memory_failure"]) for r in unscored),
        "unscored_approvals_with_known_margin_exceedance": sum(bool(r["known_margin_exceedance"]) for r in unscored),
    }


def resolved_metrics(resolved: Sequence[Mapping[str, Any]], prediction: MethodPredictions) -> dict[str, Any]:
    """A method's label and peak metrics over ``resolved`` rows (the estimator comparison's fields)."""
    ids = [r["configuration_id"] for r in resolved]
    return estimator_scores(
        ids,
        [prediction.states[i] for i in ids],
        [r["observed_state"] for r in resolved],
        predicted_peaks_mib=[prediction.peaks_mib.get(i) for i in ids],
        observed_peaks_mib=[r["completed_peak_mib"] for r in resolved],
        guard_changed=[prediction.guard_changed.get(i) for i in ids],
    )


def peak_metrics(resolved: Sequence[Mapping[str, Any]], peaks_mib: Mapping[str, float | None]) -> dict[str, Any]:
    """Peak-estimate errors over resolved targets (see :func:`~rlvrambench_hf.scoring.estimators.peak_error_statistics`:
    the coverage is the number of targets with both a predicted and a completed peak, 0 when none)."""
    return peak_error_statistics(
        [peaks_mib.get(r["configuration_id"]) for r in resolved], [r["completed_peak_mib"] for r in resolved]
    )


def validate_predictions(
    rows: Sequence[Mapping[str, str]], configuration_ids: Sequence[str], *, name: str = "predictions"
) -> MethodPredictions:
    """Check prediction rows (``configuration_id``, ``predicted_state``, optional ``predicted_peak_mib``)."""
    blank_ids = sum(1 for row in rows if not row["configuration_id"])
    if blank_ids:
        raise InputError(f"predictions {name}: {blank_ids} row(s) have an empty configuration_id")
    states: dict[str, str] = {}
    peaks: dict[str, float | None] = {}
    duplicates, bad_labels, bad_peaks = [], [], []
    for row in rows:
        cid = row["configuration_id"]
        if cid in states:
            duplicates.append(cid)
            continue
        states[cid] = row["predicted_state"]
        if states[cid] not in OUTCOME_LABELS:
            bad_labels.append(f"{quote(cid)}={quote(states[cid])}")
        if PEAK_COLUMN in row:
            try:
                peaks[cid] = _peak(row[PEAK_COLUMN])
            except ValueError:
                bad_peaks.append(f"{quote(cid)}={quote(row[PEAK_COLUMN])}")
    if duplicates:
        raise InputError(
            f"predictions {name}: {len(duplicates)} duplicate configuration id(s), "
            f"e.g. {_examples(sorted(set(duplicates)))}"
        )
    _check_coverage(states, configuration_ids, f"predictions {name}")
    if bad_labels:
        raise InputError(
            f"predictions {name}: {len(bad_labels)} invalid predicted_state value(s), e.g. "
            f"{_examples(bad_labels, quoted=False)}; allowed: {', '.join(OUTCOME_LABELS)}"
        )
    if bad_peaks:
        raise InputError(
            f"predictions {name}: {len(bad_peaks)} invalid {PEAK_COLUMN} value(s), e.g. "
            f"{_examples(bad_peaks, quoted=False)}; expected a finite non-negative number of MiB or a blank"
        )
    return MethodPredictions(states=states, peaks_mib=peaks)


def _peak(text: str) -> float | None:
    """A blank (None) or a finite non-negative number of MiB; anything else raises :class:`ValueError`."""
    if text == "":
        return None
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(text)
    return value


def _check_coverage(states: Mapping[str, str], ids: Sequence[str], what: str) -> None:
    expected = set(ids)
    missing = sorted(expected - set(states))
    unknown = sorted(set(states) - expected)
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing configuration id(s), e.g. {_examples(missing)}")
    if unknown:
        problems.append(f"{len(unknown)} unknown configuration id(s), e.g. {_examples(unknown)}")
    if problems:
        raise InputError(
            f"{what}: must cover exactly the study's {len(expected)} configurations: " + "; ".join(problems)
        )


def _ids(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return sorted(r["configuration_id"] for r in rows)


def _examples(items: Sequence[object], *, quoted: bool = True) -> str:
    """The first few items (quoted ids, or phrases already quoted) and how many more."""
    return summary(items, quoted=quoted)
