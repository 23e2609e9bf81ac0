"""The answers as JSON: one entry per plan under ``configurations`` (the output contract of ``estimate advise``).

Each entry has ``verdict`` (``state``, ``basis`` = measured | floor | predicted, ``sentence``), ``measured`` (null,
or the matched records: table, ``configuration_id``, ``observed_state`` or ``unresolved``, seeds, peaks, partial
evidence, processes), ``floors`` (check, required and available MiB or other unit, holds, arithmetic) and
``changes`` (setting, from, to, resulting state, basis, supporting measured configuration or null, predicted peak
change in MiB), then the near matches, the three methods' predictions with their track record, the donor, the
nearest measured configurations with distances, and the scope flags.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...estimation.features import coarse_family
from ...estimation.references import METHODS
from ..assess.floors import arithmetic
from ..assess.lookup import matched_records, near_matches
from ..assess.records import DEFINING_SETTINGS
from ..assess.verdict import BASES, STATES, UNRESOLVED_STATE, Answers
from .memoryblock import MISSING_TERMS, memory_block, memory_model_summary, predicted_sentence

STATEMENT = (
    "Measurement first: where the release measured a plan's settings, its verdict is that measurement (basis "
    "measured); else a physical floor that cannot hold makes it a memory failure (basis floor); else it is the label "
    "of the per-phase memory model's predicted peak on the plan's device (basis predicted: predictions, not "
    "measurements), with its error band from "
    "the held-out model families. What the model does not cover (another rollout engine, algorithm or training "
    "backend) gets no verdict. The three reference methods stay beside it with their fold records. Read the scope "
    "flags of every plan."
)
PHASE_NAMES = ("initializing", "rollout", "reference_logprob", "actor_update", "weight_sync")


def document(answers: Answers) -> dict[str, Any]:
    """The whole answer: what it rests on, then one entry per plan."""
    context = answers.context
    tables: dict[str, int] = {}
    for record in context.records.records:
        tables[record["table"]] = tables.get(record["table"], 0) + 1
    return {
        "statement": STATEMENT,
        "hardware": {
            "device_capacity_mib": answers.hardware.device_capacity_mib,
            "margin_limit_mib": answers.hardware.margin_limit_mib,
            "benchmark_hardware": answers.hardware.is_benchmark,
        },
        "measured_records": tables,
        "defining_settings": list(DEFINING_SETTINGS),
        "fitted_on_configurations": len(context.fitted.training.rows),
        "measured_cloud": context.cloud.summary(),
        "memory_model": memory_model_summary(answers),
        "configurations": [configuration(answers, i) for i in range(len(answers))],
    }


def configuration(answers: Answers, i: int) -> dict[str, Any]:
    """The answer to plan ``i``."""
    a = answers.assessment
    settings = {k: v for k, v in a.table.slice(i, 1).to_pylist()[0].items()}
    model = settings.get("model_id")
    measured = matched_records(answers.context.records, a.codes, i) if a.matches.count[i] else None
    floors = a.floors.entries(i)
    metadata = dict(answers.context.metadata[model]) if model and a.settings.has_metadata[i] else None
    for entry in floors:
        entry["arithmetic"] = arithmetic(entry, settings, metadata)
    predictions = _predictions(answers, i)
    entry = {
        "configuration_id": answers.configuration_id(i),
        "origin": answers.plans.origins[i],
        "model_id": model,
        "model_family": coarse_family(model) if model else None,
        "verdict": verdict(answers, i, measured, floors, predictions),
        "device": answers.hardware.describe(),
        **memory_block(answers, i),
        "measured": measured,
        "measured_agree": _agree(answers, i),
        "near_matches": near_matches(answers.context.records, a.codes, i, a.table),
        "floors": floors,
        "changes": answers.changes.for_row(i) if answers.changes is not None else [],
        "predictions": predictions,
        "predictions_unavailable": None if a.predictions.available[i] else _why_unavailable(answers, i),
        "startup_check": _startup(answers, i),
        "donor": _donor(answers, i),
        "nearest_measured": _nearest(answers, i),
        "distance": _distance(answers, i),
        "scope_flags": answers.row_flags(i),
        "settings": settings,
    }
    return entry


def verdict(
    answers: Answers,
    i: int,
    measured: list[dict[str, Any]] | None,
    floors: list[dict[str, Any]],
    predictions: Mapping[str, Any] | None,
) -> dict[str, Any]:
    a = answers.assessment
    state = int(a.state[i])
    basis = BASES[int(a.basis[i])]
    name = STATES[state] if state >= 0 else None
    device = answers.hardware
    seen = "measured" if device.measured else "not measured"
    head = f"on {device.device_name} ({device.device_capacity_mib:,} MiB, {seen} by the release): "
    reasons = a.not_modelled_reasons(i)
    if reasons and state < 0:
        return {
            "state": None,
            "basis": None,
            "near_limit": False,
            "sentence": f"{head}no verdict: {'; '.join(reasons)}",
        }
    if reasons:
        peak = a.model.peak[i]
        part = f"{peak:,.0f} MiB" if not np.isnan(peak) else "a floor that cannot hold"
        missing = "; ".join(MISSING_TERMS[r] for r in reasons if r in MISSING_TERMS)
        sentence = (
            f"at least {name}: {'; '.join(reasons)}; the GRPO+LoRA part alone (modelled: {part}, a lower bound "
            f"without {missing}; or its measured twin) reaches that, and this run carries more"
        )
        return {"state": name, "basis": basis, "near_limit": False, "sentence": head + sentence}
    near = bool(a.near_limit[i]) and basis == "predicted"
    if basis == "predicted" and a.model_state[i] >= 0:
        return {"state": name, "basis": basis, "near_limit": near, "sentence": head + predicted_sentence(answers, i)}
    out = _verdict_text(answers, i, measured, floors, name, basis)
    return {**out, "near_limit": False, "sentence": head + out["sentence"]}


def _verdict_text(
    answers: Answers,
    i: int,
    measured: list[dict[str, Any]] | None,
    floors: list[dict[str, Any]],
    name: str | None,
    basis: str,
) -> dict[str, Any]:
    if basis == "measured":
        sentence = _measured_sentence(answers, i, measured or [], name)
    elif basis == "floor":
        failed = [f for f in floors if f["holds"] is False]
        sentence = "cannot run: " + "; ".join(f"{f['check']}: {f['arithmetic']}" for f in failed)
    else:
        sentence = (
            "nothing known: no measured record matches and the per-phase model has no peak "
            f"({_why_unavailable(answers, i)})"
        )
    return {"state": name if basis != "predicted" else None, "basis": basis, "sentence": sentence}


def _measured_sentence(answers: Answers, i: int, measured: list[dict[str, Any]], name: str | None) -> str:
    ids = ", ".join(f"{r['table']} {r['configuration_id']} ({r['observed_state']})" for r in measured)
    agree = _agree(answers, i)
    head = f"measured {name}" if name != STATES[UNRESOLVED_STATE] else "measured, label unresolved"
    text = f"{head}: {len(measured)} record(s) of the release match ({ids})"
    if agree is False:
        text += "; their repeated labels disagree, the most severe is given"
    unresolved = [r for r in measured if r["observed_state"] == STATES[UNRESOLVED_STATE]]
    for r in unresolved:
        text += f"; {r['configuration_id']}: {_evidence_text(r)}"
    p = answers.assessment.predictions
    if p.available[i] and name in STATES[:3]:
        differ = [m for m in METHODS if p.state[m][i] >= 0 and STATES[int(p.state[m][i])] != name]
        if differ:
            text += "; the references disagree with it: " + ", ".join(
                f"{m} predicts {STATES[int(p.state[m][i])]}" for m in differ
            )
    return text


def _evidence_text(record: Mapping[str, Any]) -> str:
    e = record.get("evidence", {})
    seeds = record.get("eligible_seeds") or []
    parts = [f"{len(seeds)} eligible seed(s) {seeds}" if seeds else "no eligible seed"]
    if e.get("known_memory_failure"):
        parts.append("a known memory failure")
    if e.get("known_margin_exceedance"):
        parts.append("a known margin exceedance")
    stages = sorted({r.get("stage") for r in record.get("runs", []) if r.get("stage")})
    if stages:
        parts.append("stages " + ", ".join(stages))
    return ", ".join(parts)


def _agree(answers: Answers, i: int) -> bool | None:
    m = answers.assessment.matches
    if not m.resolved[i]:
        return None
    return bool(m.worst[i] == m.best[i])


def _predictions(answers: Answers, i: int) -> dict[str, Any] | None:
    p = answers.assessment.predictions
    if not p.available[i]:
        return None
    pool = answers.context.fitted.training.rows
    out = {}
    for method in METHODS:
        state, peak = int(p.state[method][i]), float(p.peak[method][i])
        entry: dict[str, Any] = {
            "predicted_state": STATES[state] if state >= 0 else None,
            "predicted_peak_mib": None if np.isnan(peak) else peak,
        }
        if method == "component_regression":
            entry["peak_only_predicted_state"] = STATES[int(p.peak_only[i])]
            entry["startup_guard_changed_state"] = bool(p.peak_only[i] != p.state[method][i])
        if method == "donor_copy":
            entry["donor_configuration_id"] = pool[int(p.donor[i])]["configuration_id"] if p.donor[i] >= 0 else None
        entry["track_record"] = answers.context.track_record.get(method)
        out[method] = entry
    return out


def _why_unavailable(answers: Answers, i: int) -> str:
    s = answers.assessment.settings
    if not s.has_metadata[i]:
        for flag in answers.flags:
            if flag.code == "no_metadata" and flag.mask[i]:
                return flag.sentence(i)
    missing = [n for n, v in s.valid.items() if not v[i] and n != "margin_limit_mib"]
    if missing:
        return "settings not given: " + ", ".join(missing)
    return "the settings give no defined features (zero GPUs, a utilization outside (0, 1), or an uneven batch)"


def _startup(answers: Answers, i: int) -> dict[str, Any] | None:
    p = answers.assessment.predictions
    if not p.available[i]:
        return None
    if not p.startup_applies[i]:
        return {"applicable": False, "budget_plus_actor_mib": None, "predicted_startup_budget_failure": None}
    return {
        "applicable": True,
        "budget_plus_actor_mib": float(p.startup_mib[i]),
        "predicted_startup_budget_failure": bool(p.startup_fails[i]),
    }


def _donor(answers: Answers, i: int) -> dict[str, Any] | None:
    p = answers.assessment.predictions
    if p.donor[i] < 0:
        return None
    row = answers.context.fitted.training.rows[int(p.donor[i])]
    keys = ("configuration_id", "model_id", "workload_id", "configuration_level", "gpu_count", "observed_state")
    return {
        **{k: row[k] for k in keys},
        "max_completed_run_peak_mib": row["max_completed_run_peak_mib"],
        "eligible_processes": row["eligible_processes"],
        "gpu_count_matches": bool(p.donor_gpu_matches[i]),
    }


def _nearest(answers: Answers, i: int) -> list[dict[str, Any]]:
    p = answers.assessment.predictions
    if not p.available[i] or not answers.nearest:
        return []
    out = []
    for record, distance in answers.context.cloud.nearest_records(p.features[i], answers.nearest):
        out.append({**answers.context.describe_record(record), "distance": distance})
    return out


def _distance(answers: Answers, i: int) -> dict[str, Any] | None:
    if np.isnan(answers.distance[i]):
        return None
    cloud = answers.context.cloud
    return {
        "nearest": float(answers.distance[i]),
        "cloud_nearest_neighbour_median": cloud.summary()["nearest_neighbour_median"],
        "cloud_nearest_neighbour_max": cloud.limit,
        "outside_cloud": bool(answers.distance[i] > cloud.limit),
    }
