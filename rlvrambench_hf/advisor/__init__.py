"""Will my run fit? Plans read from a user's own config, answered measurement first; and why did my run run out of
memory?

The advisor is a house of rooms, each importing only the ones below it: :mod:`.store` (what is kept between runs,
keyed by the files it was derived from) < :mod:`.plan` (the vocabulary every side shares: plans, hardware, knobs,
the VERL / TRL ↔ dataset mapping) < :mod:`.read` (a user's file → validated plans: the dataset's vocabulary, VERL
configs and launch scripts, TRL configs and scripts) < :mod:`.answer` (the typed answer to one plan and its JSON) <
:mod:`.assess` (plans × the release → answers: measured records, floors, the per-phase memory model, the references,
changes, trust, scope) < :mod:`.diagnose` (a failure log → a diagnosis in the release's taxonomy, made specific by
an answer) < :mod:`.output` (the JSON document and its reader, the one-row-per-plan table, the one verdict wording)
< :mod:`.api` (the composer) and this face.

:func:`advise` answers :class:`Plans` (what :func:`read_plans` reads) with :class:`Answer` s; the verdict is the
measurement, else a floor that cannot hold, else the per-phase model's label (:class:`PhaseModel`, the memory
model's own class). :func:`explain_failure` diagnoses a failure log, with the launch file's plans when given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

if TYPE_CHECKING:  # imported on first use: answering a plan does not import the log diagnosis, and the reverse
    from ..memory.phases import PhaseModel
    from .answer import Answer, PhasePeaks
    from .api import advise, advise_planned, explain_failure
    from .diagnose.diagnosis import Diagnosis, diagnose_text
    from .diagnose.logs import read_log
    from .output.document import STATEMENT, read_phase_peaks
    from .plan.hardware import BENCHMARK_HARDWARE, Hardware
    from .plan.mapping import TRL_MAPPING, TRL_SCOPE, VERL_MAPPING, VERL_SCOPE
    from .plan.plans import Plans
    from .read.reader import read_plans

#: Where each public name lives (imported when first asked for, PEP 562).
_LAZY = {
    "PhaseModel": "..memory.phases",
    "Answer": ".answer",
    "PhasePeaks": ".answer",
    "advise": ".api",
    "advise_planned": ".api",
    "explain_failure": ".api",
    "Diagnosis": ".diagnose.diagnosis",
    "diagnose_text": ".diagnose.diagnosis",
    "read_log": ".diagnose.logs",
    "STATEMENT": ".output.document",
    "read_phase_peaks": ".output.document",
    "BENCHMARK_HARDWARE": ".plan.hardware",
    "Hardware": ".plan.hardware",
    "TRL_MAPPING": ".plan.mapping",
    "TRL_SCOPE": ".plan.mapping",
    "VERL_MAPPING": ".plan.mapping",
    "VERL_SCOPE": ".plan.mapping",
    "Plans": ".plan.plans",
    "read_plans": ".read.reader",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


__all__ = [
    "BENCHMARK_HARDWARE",
    "STATEMENT",
    "TRL_MAPPING",
    "TRL_SCOPE",
    "VERL_MAPPING",
    "VERL_SCOPE",
    "Answer",
    "Diagnosis",
    "Hardware",
    "PhaseModel",
    "PhasePeaks",
    "Plans",
    "advise",
    "advise_planned",
    "diagnose_text",
    "explain_failure",
    "read_log",
    "read_phase_peaks",
    "read_plans",
]
