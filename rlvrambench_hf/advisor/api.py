"""Where the answers meet a source: plans from a file or mappings, the release's context, models read from the Hub.

:func:`advise` answers a :class:`~.plans.Plans` (what :func:`~.read.read_plans` produces from a user's config);
:func:`advise_planned` reads the plans first if needed and returns the JSON answer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..data.sources.resolve import SourceLike
from ..errors import RLVRAMBenchError, first_line
from .assess.context import Context, load_context
from .assess.verdict import Answers, answer_plans, with_hardware
from .plan.hardware import BENCHMARK_HARDWARE, Hardware
from .plan.plans import Plans

PlannedLike = str | os.PathLike[str] | Sequence[Mapping[str, Any]] | Mapping[str, Any] | Plans | object


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
        plans, context.with_metadata(extra), hardware=hardware, nearest=nearest, unavailable=unavailable
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
    """The JSON answer (see :mod:`.document`) to planned configurations: a :class:`Plans`, or anything
    :func:`~.read.read_plans` reads (a YAML / JSON / CSV file, a list of mappings, a VERL launch script or config
    mapping, a GRPOConfig-like object)."""
    from .output.document import document
    from .read.reader import read_plans

    plans = planned if isinstance(planned, Plans) else read_plans(planned, source=source, revision=revision)
    answers = advise(plans, source, revision, hardware=hardware, model_revision=model_revision, nearest=nearest)
    return document(answers)


def _hub_metadata(
    plans: Plans, context: Context, revision: str | None
) -> tuple[dict[str, Mapping[str, Any]], dict[str, str]]:
    """Metadata of the plans' models outside the release, and why each unreadable one is missing (once the Hub
    proved unreachable, the other models are not asked for)."""
    from ..estimation.hubmeta import HubUnreachable, fetch_model_metadata, unreachable

    if "model_id" not in plans.table.column_names:
        return {}, {}
    import pyarrow.compute as pc

    models = [m for m in pc.unique(plans.table.column("model_id")).drop_null().to_pylist()]
    extra: dict[str, Mapping[str, Any]] = {}
    unavailable: dict[str, str] = {}
    down = False
    for model in models:
        if model in context.metadata:
            continue
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
