"""The answers as JSON (the output contract of ``advise --output F.json``), and the one reader of it.

:func:`document` gives what the answers rest on, then one entry per plan under ``configurations``: the typed
:class:`~..answer.Answer`'s ``to_json()``. Each entry has ``verdict`` (``state``, ``basis`` = measured | floor |
predicted, ``near_limit``, ``sentence``), ``device`` and the per-phase model's ``phases``, ``binding_phase``,
``predicted_peak_mib``, ``band_mib`` and ``fits``, ``measured`` (null, or the matched records: table,
``configuration_id``, ``observed_state`` or ``unresolved``, seeds, peaks, partial evidence, processes), ``floors``
(check, required and available MiB or other unit, holds, arithmetic) and ``changes`` (setting, from, to, the keys to
paste, resulting state, basis — measured, predicted, or floor for a change that makes a failing ``floor`` hold —,
supporting measured configuration or null, predicted peak change in MiB), then the near matches, the three
methods' predictions with their track record, the donor, the nearest measured configurations with distances, and
the scope flags. :func:`diagnosis_document` is the JSON of ``advise --log``.

:func:`read_phase_peaks` reads a saved entry's per-phase model back (``device``, ``phases``, ``band_mib``), to match
a failure log against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...errors import InputError, quote
from ..answer import PhasePeak, PhasePeaks, PhaseTerm
from ..assess.answers import Answers
from ..assess.records import DEFINING_SETTINGS
from ..plan.hardware import Hardware

if TYPE_CHECKING:
    from ..diagnose.diagnosis import Diagnosis

STATEMENT = (
    "Measurement first: where the release measured a plan's settings, its verdict is that measurement (basis "
    "measured); else a physical floor that cannot hold makes it a memory failure (basis floor); else it is the label "
    "of the per-phase memory model's predicted peak on the plan's device (basis predicted: predictions, not "
    "measurements), with its error band from "
    "the held-out model families. What the model does not cover (another rollout engine, algorithm or training "
    "backend) gets no verdict. The three reference methods stay beside it with their fold records. Read the scope "
    "flags of every plan."
)


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


def memory_model_summary(answers: Answers) -> dict[str, Any]:
    """What the per-phase model rests on: its in-domain band, nested held-out record, chosen form and the figures
    every plan's band is grown from."""
    memory = answers.context.memory
    return {
        "band_mib": memory.band_mib,
        "held_out_record": memory.fold_summary(answers.context.inputs.pool.rows),
        "form": memory.calibration.form.name,
        "band_figures": memory.band.describe(),
    }


def configuration(answers: Answers, i: int) -> dict[str, Any]:
    """The JSON answer to plan ``i``."""
    return answers.answer(i).to_json()


def diagnosis_document(found: Diagnosis) -> dict[str, Any]:
    """The JSON of a failure log's diagnosis (``advise --log --output F.json``)."""
    return {"statement": STATEMENT, "diagnosis": found.as_dict()}


def read_phase_peaks(entry: Mapping[str, Any]) -> PhasePeaks:
    """The per-phase model of a plan's saved JSON entry (``device`` {name, capacity_mib, margin_mib}, ``phases``
    [{phase, peak_mib, terms: [{term, mib, arithmetic}]}], ``band_mib``; ``binding_phase`` and
    ``predicted_peak_mib`` when given); one line when it is not one."""
    try:
        device = entry["device"]
        phases = tuple(
            PhasePeak(
                str(p["phase"]),
                float(p["peak_mib"]),
                tuple(PhaseTerm(str(t["term"]), float(t["mib"]), str(t.get("arithmetic", ""))) for t in p["terms"]),
            )
            for p in entry["phases"]
        )
        if not phases:
            raise ValueError("no phases")
        hardware = Hardware(int(device["capacity_mib"]), int(device["margin_mib"]), str(device["name"]))
        peak = entry.get("predicted_peak_mib")
        binding = entry.get("binding_phase")
        return PhasePeaks(
            hardware,
            phases,
            None if binding is None else str(binding),
            float(peak) if peak is not None else max((p.peak_mib for p in phases), default=None),
            float(entry.get("band_mib") or 0.0),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"not a per-phase memory model: {quote(str(exc))}") from None
