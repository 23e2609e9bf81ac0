"""The answers to a set of plans (pure over a :class:`~..plan.plans.Plans` and a context): :func:`answer_plans`
assesses every plan together (:func:`~.verdict.assess`), adds the distance to the measured cloud and the scope
flags, and, when first asked, the changes that would make a plan fit and the remedies of its failing floors.
:meth:`Answers.answer` builds one plan's typed :class:`~..answer.Answer` from those arrays; the output room writes
the JSON, the sweep table and the text from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import pyarrow as pa

from ...data.schema.registry import get_spec
from ...errors import InputError
from ...estimation.features import coarse_family
from ..answer import Answer, Change, UserKeys, Wording
from ..plan.hardware import BENCHMARK_HARDWARE, Hardware
from ..plan.knobs import KNOB_BY_NAME
from ..plan.plans import Plans
from . import entries
from .changes import Assessed, ChangeSet, in_user_keys, plain, variants
from .context import Context
from .floors import FLOORS
from .predict import WITHIN, SettingArrays
from .scope import Flag, scope_flags
from .verdict import STATES, Assessment, assess, with_hardware


@dataclass
class Answers:
    """The answers to a set of plans: the assessment's arrays, the distance of every plan to the measured cloud,
    the scope flags, and the verdict's ``wording`` (the output room's, handed down by the api)."""

    plans: Plans
    context: Context
    assessment: Assessment
    distance: np.ndarray
    point: np.ndarray
    flags: list[Flag]
    hardware: Hardware
    nearest: int
    unavailable: Mapping[str, str]  # model id -> why its metadata is missing
    wording: Wording
    _built: dict[int, Answer] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.plans)

    @cached_property
    def changes(self) -> ChangeSet | None:
        """The changes that would make each plan not within margin fit (assessed on first use: a sweep table does
        not need them)."""
        return _changes(self.assessment, self.context)

    @cached_property
    def remedies(self) -> dict[int, list[Change]]:
        """Per plan whose verdict a floor fails, the changes that make its failing floors hold (assessed on first
        use)."""
        return _remedies(self.assessment, self.context)

    def configuration_id(self, i: int) -> str:
        table = self.assessment.table
        if "configuration_id" in table.column_names:
            value = table.column("configuration_id")[i].as_py()
            if value:
                return str(value)
        return f"planned-{i + 1}"

    def row_flags(self, i: int) -> list[str]:
        return self.plans.row_flags(i) + [f.sentence(i) for f in self.flags if f.mask[i]]

    def answer(self, i: int) -> Answer:
        """The typed answer to plan ``i`` (built once)."""
        if i not in self._built:
            self._built[i] = self._answer(i)
        return self._built[i]

    def _answer(self, i: int) -> Answer:
        a, context = self.assessment, self.context
        settings = a.table.slice(i, 1).to_pylist()[0]
        model = settings.get("model_id")
        metadata = dict(context.metadata[model]) if model and a.settings.has_metadata[i] else None
        why = entries.why_unavailable(a, self.flags, i)
        fits = [] if self.changes is None else self.changes.for_row(i)
        held = {c.setting for c in fits}
        draft = Answer(
            configuration_id=self.configuration_id(i),
            origin=self.plans.origins[i],
            model_id=model,
            model_family=coarse_family(model) if model else None,
            verdict=entries.verdict_of(a, i, why),
            memory=entries.memory_of(a, context, i, self.hardware, settings),
            measured=entries.measured_of(a, context, i),
            measured_agree=entries.agree_of(a, i),
            near_matches=entries.near_of(a, context, i),
            floors=entries.floors_of(a, i, settings, metadata),
            changes=(*fits, *(r for r in self.remedies.get(i, []) if r.setting not in held)),
            predictions=entries.predictions_of(a, context, i),
            predictions_unavailable=None if a.predictions.available[i] else why,
            startup_check=entries.startup_of(a, i),
            donor=entries.donor_of(a, context, i),
            nearest_measured=entries.nearest_of(a, context, i, self.nearest),
            distance=entries.distance_of(self.distance[i], context.cloud),
            scope_flags=tuple(self.row_flags(i)),
            settings=settings,
            written={s: self.plans.written[s] for s in self.plans.written},
            metadata=metadata,
        )
        return replace(draft, verdict=replace(draft.verdict, sentence=self.wording(draft)))


def answer_plans(
    plans: Plans,
    context: Context,
    *,
    wording: Wording,
    hardware: Hardware = BENCHMARK_HARDWARE,
    nearest: int = 3,
    unavailable: Mapping[str, str] | None = None,
) -> Answers:
    """Assess every plan, then find distances and scope flags (the changes and remedies when first asked)."""
    if not len(plans):
        raise InputError("no planned configuration given")
    if nearest < 0:
        raise InputError(f"nearest must be 0 or more, got {nearest}")
    table = with_hardware(_settings_only(plans.table), hardware, plans.written)
    assessment = assess(table, context)
    p = assessment.predictions
    distance, point = context.cloud.nearest(p.features)
    distance[~p.available] = np.nan
    outside = p.available & (distance > context.cloud.limit)
    limit = context.cloud.limit
    missing = unavailable or {}
    extra = {
        "hardware_not_measured": (np.full(len(plans), not hardware.is_benchmark), lambda i: str(hardware.flag())),
        "no_donor": (
            p.available & (p.donor < 0),
            lambda i: "no measured configuration with the same workload and level: donor copy gives no prediction",
        ),
        "outside_cloud": (
            outside,
            lambda i: (
                f"outside the measured cloud: standardised distance {distance[i]:.2f} to the nearest measured "
                f"configuration, beyond the largest nearest-neighbour distance among measured configurations "
                f"({limit:.2f})"
            ),
        ),
        "no_metadata": (~assessment.settings.has_metadata, lambda i: _no_metadata(assessment.settings, i, missing)),
    }
    flags = scope_flags(
        assessment.settings, assessment.codes, context.records.index, context.pool_models, context.sizes, extra
    )
    return Answers(plans, context, assessment, distance, point, flags, hardware, nearest, missing, wording)


def _settings_only(table: pa.Table) -> pa.Table:
    known = set(get_spec("configurations").column_names) | set(KNOB_BY_NAME)
    return table.select([n for n in table.column_names if n in known])


def _changes(assessment: Assessment, context: Context) -> ChangeSet | None:
    rows = np.flatnonzero(assessment.state != WITHIN)
    if not len(rows):
        return None
    found = variants(assessment.table, rows, context.records.index)
    if found is None:
        return None
    assessed = assess(found.table, context)
    supported = (assessed.basis == 0) & (assessed.state == WITHIN) & (assessed.matches.within_margin_record >= 0)
    result = Assessed(
        assessed.state,
        supported,
        assessed.matches.within_margin_record,
        assessed.model.peak,
    )
    peak = assessment.model.peak
    return ChangeSet.of(found, result, peak, WITHIN, context.describe_record)


def _remedies(a: Assessment, context: Context) -> dict[int, list[Change]]:
    """The remedies of the failing floors of every plan with a verdict: each candidate assessed like a plan, kept
    when its floor holds and no floor that held fails; one per setting, in floor order, then smallest first."""
    rows = np.flatnonzero(a.floors.failing() & (a.state >= 0))
    if not len(rows):
        return {}
    from .remedies import candidates, changed_table  # only for a plan with a failing floor

    found = candidates(a.settings, a.floors, rows)
    if not len(found):
        return {}
    table = changed_table(a.table, found)
    after = assess(table, context)
    out: dict[int, list[Change]] = {}
    for j, (row, k, setting) in enumerate(zip(found.row.tolist(), found.floor.tolist(), found.setting)):
        fails = [after.floors.known[f][j] and not after.floors.holds[f][j] for f in FLOORS]
        failed = [a.floors.known[f][row] and not a.floors.holds[f][row] for f in FLOORS]
        if fails[k] or any(now and not before for now, before in zip(fails, failed)):
            continue
        listed = out.setdefault(row, [])
        if any(c.setting == setting for c in listed):
            continue
        to = plain(found.value[j], table.schema.field(setting).type)
        before = a.table.column(setting)[row].as_py() if setting in a.table.column_names else None
        state = int(after.state[j])
        peak = after.model.peak[j] - a.model.peak[row]
        keys = in_user_keys(setting, to, table.slice(j, 1).to_pylist()[0])
        listed.append(
            Change(
                setting,
                before,
                to,
                UserKeys.of(keys),
                STATES[state] if state >= 0 else None,
                "floor",
                predicted_peak_change_mib=None if np.isnan(peak) else float(peak),
                floor=FLOORS[k],
            )
        )
    return out


def _no_metadata(s: SettingArrays, i: int, missing: Mapping[str, str]) -> str:
    if s.model[i] < 0:
        return "no model_id given: predictions and the floors that need model metadata are unavailable"
    model = s.models[s.model[i]]
    why = missing.get(model, "not in the release's model metadata")
    return f"no model metadata for {model} ({why}): predictions and the floors that need it are unavailable"
