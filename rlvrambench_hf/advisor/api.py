"""The composer: a source's plans are read (:mod:`.read`), assessed against the release (:mod:`.assess`) into typed
answers (:mod:`.answer`) whose verdicts the output room words (:mod:`.output`); a failure log is diagnosed
(:mod:`.diagnose`) and, with the plans of its launch file, made specific to the answer to the first of them.

:func:`advise` answers a :class:`~.plan.plans.Plans` (what :func:`~.read.reader.read_plans` produces from a user's
config); :func:`advise_planned` reads the plans first if needed and returns the JSON answer;
:func:`explain_failure` answers a failure log, with the launch file's plans when given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..data.sources.resolve import SourceLike
from ..errors import InputError, RLVRAMBenchError, first_line
from .answer import PhasePeaks
from .assess.answers import Answers, answer_plans
from .assess.context import Context, load_context
from .assess.verdict import with_hardware
from .output.wording import sentence
from .plan.hardware import BENCHMARK_HARDWARE, Hardware
from .plan.plans import Plans

if TYPE_CHECKING:  # the log diagnosis is imported when a log is explained: answering plans does not need it
    from .diagnose.diagnosis import Diagnosis
    from .diagnose.logs import LogText

PlannedLike = str | os.PathLike[str] | Sequence[Mapping[str, Any]] | Mapping[str, Any] | Plans | object
#: Where the plan's device came from when it was given (else: the log's device).
GIVEN_DEVICE = "the device given (--gpu or --device-capacity-mib)"
#: The note of a diagnosis whose launch file could not be read or answered.
UNREAD = "the launch file could not be read ({why}): the fixes are the log's and the documented ones, not in your keys"


def advise(
    plans: Plans,
    source: SourceLike = None,
    revision: str | None = None,
    *,
    hardware: Hardware = BENCHMARK_HARDWARE,
    model_revision: str | None = None,
    nearest: int = 3,
    context: Context | None = None,
) -> Answers:
    """The answers to ``plans``. A model outside the release's metadata is read from its Hub repository
    (config.json and safetensors headers only); when it cannot be read (offline, no access), its plans still get
    their measured records and the floors that need no metadata, and say why their predictions are unavailable."""
    with_hardware(plans.table, hardware, plans.written)  # refuse another device before any work
    context = context or load_context(source, revision)
    extra, unavailable = _hub_metadata(plans, context, model_revision)
    return answer_plans(
        plans,
        context.with_metadata(extra),
        wording=sentence,
        hardware=hardware,
        nearest=nearest,
        unavailable=unavailable,
    )


def advise_planned(
    planned: PlannedLike,
    source: SourceLike = None,
    revision: str | None = None,
    *,
    hardware: Hardware = BENCHMARK_HARDWARE,
    model_revision: str | None = None,
    nearest: int = 3,
) -> dict[str, Any]:
    """The JSON answer (see :mod:`.output.document`) to planned configurations: a :class:`Plans`, or anything
    :func:`~.read.reader.read_plans` reads (a YAML / JSON / CSV file, a list of mappings, a VERL launch script or
    config mapping, a GRPOConfig-like object)."""
    from .output.document import document
    from .read.reader import read_plans

    plans = planned if isinstance(planned, Plans) else read_plans(planned, source=source, revision=revision)
    answers = advise(plans, source, revision, hardware=hardware, model_revision=model_revision, nearest=nearest)
    return document(answers)


def explain_failure(
    log: str | os.PathLike[str] | LogText,
    source: SourceLike = None,
    revision: str | None = None,
    *,
    plans: Plans | None = None,
    hardware: Hardware | None = None,
    phase_model: PhasePeaks | Mapping[str, Any] | None = None,
    model_revision: str | None = None,
) -> Diagnosis:
    """Why did the run of ``log`` (a path, ``-`` for standard input, or a read log) fail? With ``plans`` (what
    :func:`~.read.reader.read_plans` read from the launch file) the diagnosis is the answer to its first plan, on
    ``hardware`` (by default the device the log reports: the release's A100 when it names none). ``phase_model``
    replaces the plan's own per-phase model: a :class:`~.answer.PhasePeaks`, or a saved answer's entry (read by
    :func:`~.output.document.read_phase_peaks`). A plan the advisor refuses on that device leaves the log's
    diagnosis, saying why (:func:`plan_unread`)."""
    from .diagnose.diagnosis import diagnose_text
    from .diagnose.explain import LOG_DEVICE, explain, log_hardware
    from .diagnose.logs import LogText, read_log
    from .output.document import read_phase_peaks

    text = log if isinstance(log, LogText) else read_log(log)
    found = diagnose_text(text)
    if plans is None or found.failure_class is None:
        return explain(found, source, revision)
    peaks = phase_model if phase_model is None or isinstance(phase_model, PhasePeaks) else read_phase_peaks(phase_model)
    device = hardware or log_hardware(found)
    try:
        answer = advise(plans, source, revision, hardware=device, model_revision=model_revision).answer(0)
    except InputError as exc:  # the plan is refused on this device: the log's diagnosis stands
        return plan_unread(explain(found, source, revision), first_line(exc))
    given = LOG_DEVICE if hardware is None else GIVEN_DEVICE
    return explain(
        found, source, revision, answer=answer, plans_in_file=len(plans), device_from=given, phase_model=peaks
    )


def plan_unread(found: Diagnosis, why: str) -> Diagnosis:
    """``found`` (a log's diagnosis without its plan) saying that its launch file could not be read, and why."""
    return replace(found, note=UNREAD.format(why=why))


def _hub_metadata(
    plans: Plans, context: Context, revision: str | None
) -> tuple[dict[str, Mapping[str, Any]], dict[str, str]]:
    """Metadata of the plans' models outside the release, and why each unreadable one is missing (once the Hub
    proved unreachable, the other models are not asked for)."""
    if "model_id" not in plans.table.column_names:
        return {}, {}
    import pyarrow.compute as pc

    models = [m for m in pc.unique(plans.table.column("model_id")).drop_null().to_pylist() if m not in context.metadata]
    extra: dict[str, Mapping[str, Any]] = {}
    unavailable: dict[str, str] = {}
    if not models:  # every model is the release's: the Hub's reader is not imported
        return extra, unavailable
    from ..estimation.hubmeta import HubUnreachable, fetch_model_metadata, unreachable

    down = False
    for model in models:
        try:
            if down:
                raise unreachable(model, revision)
            extra[model] = fetch_model_metadata(model, revision)
        except HubUnreachable as exc:
            down = True
            unavailable[model] = first_line(exc)
        except RLVRAMBenchError as exc:
            unavailable[model] = first_line(exc)
    return extra, unavailable
