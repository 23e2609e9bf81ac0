"""Will my run fit? Plans read from a user's own config (:mod:`.plans`), answered measurement first.

:func:`read_plans` reads a plan in the dataset's vocabulary (:mod:`.planned`), a VERL config or launch script
(:mod:`.verl`, :mod:`.launch`) or a TRL GRPOConfig (:mod:`.trl`) through the one mapping table (:mod:`.mapping`),
checks every setting (:mod:`.checks`) and reads it against the release's workloads and levels (:mod:`.measured`).

The answer to a plan: the release's measured records of its settings (:mod:`.records`, :mod:`.lookup`), its
physical floors (:mod:`.floors`), the three reference methods' predictions with their track record
(:mod:`.predict`, :mod:`.fitted`), the single-setting changes that would make it fit (:mod:`.changes`) and its
distance to the measured cloud (:mod:`.trust`); :mod:`.answer` decides the verdict (measured > floor > predicted),
:mod:`.document` writes the JSON, :mod:`.sweep` the one-row-per-plan table. :mod:`.api` meets a source.

Why did my run run out of memory? :func:`explain_failure` reads a failure log (:mod:`.logs`, its figures in
:mod:`.logfigures`, its phase in :mod:`.logphase`), diagnoses it in the release's taxonomy (:mod:`.diagnosis`, the
documented fixes in :mod:`.oomfixes`), adds the release's failures of that kind (:mod:`.failures`) and, with the
launch file's plans, the advisor's answer and a per-phase model's match (:mod:`.oom`, :mod:`.phasematch`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on first use: answering a plan does not import the log diagnosis, and the reverse
    from .api import advise, advise_planned
    from .diagnose.diagnosis import Diagnosis, diagnose_text
    from .diagnose.explain import explain_failure
    from .diagnose.logs import read_log
    from .diagnose.phasematch import PhaseModel
    from .output.document import STATEMENT
    from .plan.hardware import BENCHMARK_HARDWARE, Hardware
    from .plan.mapping import TRL_MAPPING, TRL_SCOPE, VERL_MAPPING, VERL_SCOPE
    from .plan.plans import Plans
    from .read.reader import read_plans

#: Where each public name lives (imported when first asked for, PEP 562).
_LAZY = {
    "advise": ".api",
    "advise_planned": ".api",
    "Diagnosis": ".diagnose.diagnosis",
    "diagnose_text": ".diagnose.diagnosis",
    "explain_failure": ".diagnose.explain",
    "read_log": ".diagnose.logs",
    "PhaseModel": ".diagnose.phasematch",
    "STATEMENT": ".output.document",
    "BENCHMARK_HARDWARE": ".plan.hardware",
    "Hardware": ".plan.hardware",
    "TRL_MAPPING": ".plan.mapping",
    "TRL_SCOPE": ".plan.mapping",
    "VERL_MAPPING": ".plan.mapping",
    "VERL_SCOPE": ".plan.mapping",
    "Plans": ".plan.plans",
    "read_plans": ".read.reader",
}


def __getattr__(name: str) -> Any:
    """The public names of :data:`_LAZY`, imported when first asked for."""
    if name not in _LAZY:
        raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "BENCHMARK_HARDWARE",
    "Diagnosis",
    "STATEMENT",
    "TRL_MAPPING",
    "TRL_SCOPE",
    "VERL_MAPPING",
    "VERL_SCOPE",
    "Hardware",
    "PhaseModel",
    "Plans",
    "advise",
    "advise_planned",
    "diagnose_text",
    "explain_failure",
    "read_log",
    "read_plans",
]
