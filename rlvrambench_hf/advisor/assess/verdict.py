"""The verdict of every plan: measured > floor > the per-phase model (pure over a plan table and a context).

:func:`assess` is vectorised over plans: the measured records each plan matches, its physical floors, the
per-phase memory model's peaks and the three references' predictions, and from them the verdict. What the model
does not cover (another engine, algorithm or backend, dynamic batch sizes, sequence parallelism) withholds the
verdict; a run that carries more than the modelled one (full fine-tuning, another algorithm) is at least what its
modelled part or its measured GRPO+LoRA twin is. Otherwise: the measurement where one exists (its repeated label,
the most severe when records disagree, or ``unresolved``), else ``memory_failure`` when a floor cannot hold, else
the label of the model's predicted peak against the margin and the capacity. The references stay beside it.
:mod:`.answers` builds the answers from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...data.schema.pins import OUTCOME_LABELS, RELEASE_STACK, UNRESOLVED
from ...errors import InputError
from ...memory.architecture import Architecture
from ...memory.extrapolation import PlanBand, near_limit, plan_band
from ...memory.inputs import PlanInputs
from ...memory.phases import PhaseModel, phases
from ...memory.stack import CRITIC_FREE, Stack
from ..answer import FLOOR, MEASURED, PREDICTED
from ..plan.arrays import numbers, with_validity
from ..plan.hardware import BENCHMARK_HARDWARE, HARDWARE_SETTINGS, Hardware
from ..plan.knobs import KNOB_BY_NAME
from .context import Context
from .floors import Floors, floors
from .lookup import Carried, Matches, carried, exact_matches
from .predict import ABOVE, FAILURE, WITHIN, Predictions, SettingArrays, memory_inputs, predict
from .records import Codes

#: Verdict states: the three labels, then unresolved (a measurement without a repeated label); -1: nothing known.
STATES: tuple[str, ...] = (*OUTCOME_LABELS, UNRESOLVED)
UNRESOLVED_STATE = 3
BASES: tuple[str, ...] = (MEASURED, FLOOR, PREDICTED)


@dataclass(frozen=True)
class Assessment:
    """Plans assessed together: settings, codes, measured matches, floors, predictions, verdict state and basis."""

    table: pa.Table
    settings: SettingArrays
    codes: Codes
    matches: Matches
    floors: Floors
    predictions: Predictions
    state: np.ndarray
    basis: np.ndarray  # index into BASES
    model: PhaseModel
    model_state: np.ndarray  # label index of the per-phase model's peak (-1: none)
    not_modelled: dict[str, np.ndarray]  # reason -> rows the model does not cover for that reason
    near_limit: np.ndarray
    band: PlanBand  # each plan's error band and its parts
    carried: Carried  # the release's measurements carried to the plans' device

    def not_modelled_reasons(self, i: int) -> list[str]:
        return [reason for reason, mask in self.not_modelled.items() if mask[i]]

    @property
    def covered(self) -> np.ndarray:
        """Plans the per-phase model covers (no reason withholds its peaks)."""
        uncovered: np.ndarray = np.logical_or.reduce([*self.not_modelled.values(), np.zeros(self.state.shape, bool)])
        return ~uncovered


def with_hardware(table: pa.Table, hardware: Hardware, written: Mapping[str, str] | None = None) -> pa.Table:
    """``table`` with the device filled in where a plan does not give it; a plan that names another device than
    ``hardware`` is refused unless ``hardware`` is that device."""
    for name in HARDWARE_SETTINGS:
        wanted = getattr(hardware, name)
        if name in table.column_names:
            values, valid = numbers(table.column(name), np.int64)
            differs = valid & (values != wanted)
            if differs.any():
                i = int(np.flatnonzero(differs)[0])
                where = (written or {}).get(name, name).replace("{row}", str(i + 1))
                raise InputError(
                    f"planned configuration {i + 1}: {where}={int(values[i])} is not the benchmark's "
                    f"{getattr(BENCHMARK_HARDWARE, name)}; give the device explicitly (--device-capacity-mib) "
                    "to get flagged predictions for other hardware"
                )
            table = table.drop_columns([name])
        column = with_validity(pa.int64(), np.full(table.num_rows, wanted, dtype=np.int64), None)
        table = table.append_column(name, column)
    return table


def assess(table: pa.Table, context: Context) -> Assessment:
    """Measured matches, floors, the per-phase model and the verdict of every plan of ``table`` (hardware filled
    in): what the model does not cover withholds the verdict first; then measured > floor > model."""
    settings = SettingArrays.of(table, context.metadata)
    codes = context.records.index.codes(table)
    matches = exact_matches(context.records, codes)
    x, arch = memory_inputs(table, settings)
    model = phases(x, arch, context.memory.calibration)
    found_floors = floors(settings)
    predictions = predict(settings, context.fitted, context.parameters)
    uncovered = not_modelled(table, codes)
    n = table.num_rows
    any_reason = np.logical_or.reduce([*uncovered.values(), np.zeros(n, bool)])
    strict = np.logical_or.reduce([m for r, m in uncovered.items() if r not in ADDITIVE] + [np.zeros(n, bool)])
    # a stack the release did not measure (full fine-tuning, a critic, DeepSpeed, SGLang, ...) is never answered by
    # the GRPO+LoRA records whose settings it shares: they lack its terms
    stack = Stack.of(x, arch)
    carry = carried_to_device(table, settings, codes, matches, context)
    failing = found_floors.failing()
    exact = (matches.count > 0) & ~any_reason & stack.measured
    measured = exact | (carry.found & ~any_reason & ~failing & stack.measured)
    measured_state = np.where(
        matches.count > 0, np.where(matches.resolved > 0, matches.worst, UNRESOLVED_STATE), carry.state
    )
    peak, capacity, margin = model.peak, x["device_capacity_mib"], settings["margin_limit_mib"]
    model_state = np.where(
        np.isnan(peak), -1, np.where(peak > capacity, FAILURE, np.where(peak > margin, ABOVE, WITHIN))
    )
    band = plan_band_of(model, x, arch, settings, context)
    near = near_limit(peak, band.mib, margin, capacity)
    state = np.where(measured, measured_state, np.where(failing, FAILURE, model_state))
    # the GRPO+LoRA twin's measurement bounds a run that carries more (full fine-tuning, a critic, a reference)
    more = (any_reason & ~strict) | ((stack.full | stack.critic) & ~stack.server & ~stack.unpaged)
    if more.any():
        state = np.where(more, np.maximum(state, _twin_state(table, context)), state)
    # a run of an unknown algorithm fails where the modelled part alone fails or exceeds the margin; anything else
    # the model does not cover gets no verdict
    state = np.where(strict | (any_reason & (state < ABOVE)), -1, state)
    basis = np.where(measured, 0, np.where(failing, 1, 2))
    return Assessment(
        table, settings, codes, matches, found_floors, predictions, state, basis, model, model_state, uncovered, near,
        band, carry,
    )  # fmt: skip


def carried_to_device(
    table: pa.Table, settings: SettingArrays, codes: Codes, exact: Matches, context: Context
) -> Carried:
    """The release's measurements of the plans' settings, made on its device, carried to each plan's device
    (:func:`.lookup.carried`): a plan on a device of another capacity keeps what the release measured. Plans all on
    the release's device carry nothing: their own records (``exact``, coded as ``codes``) are their measurement."""
    release = BENCHMARK_HARDWARE.device_capacity_mib
    n = table.num_rows
    elsewhere = (settings["device_capacity_mib"] != release) | (
        settings["margin_limit_mib"] != BENCHMARK_HARDWARE.margin_limit_mib
    )
    if not elsewhere.any():
        return Carried(np.zeros(n, dtype=bool), np.full(n, -1), np.full(n, np.nan), codes)
    on_release = table
    for name in HARDWARE_SETTINGS:
        column = with_validity(pa.int64(), np.full(n, getattr(BENCHMARK_HARDWARE, name)), None)
        on_release = _with_column(on_release, name, column)
    u = np.where(settings.valid["vllm_gpu_memory_utilization"], settings["vllm_gpu_memory_utilization"], np.nan)
    return carried(
        context.records,
        context.records.index.codes(on_release),
        exact,
        u,
        settings["device_capacity_mib"],
        settings["margin_limit_mib"],
        release,
    )


def _with_column(table: pa.Table, name: str, column: pa.Array) -> pa.Table:
    """``table`` with its column ``name`` replaced by ``column`` (cast to the column's type), or added."""
    if name not in table.column_names:
        return table.append_column(name, column)
    return table.set_column(table.schema.get_field_index(name), name, column.cast(table.schema.field(name).type))


def plan_band_of(
    model: PhaseModel, x: PlanInputs, arch: Architecture, settings: SettingArrays, context: Context
) -> PlanBand:
    """Each plan's error band: the held-out in-domain band, grown where the plan extrapolates from what the
    release measured (another model, size, token count, device, or a run longer than one step)."""
    ids = [settings.models[m] if m >= 0 else None for m in settings.model]
    return plan_band(model, x, arch, ids, context.memory.band)


#: Reasons of runs that hold at least what the model counts (so a failure of the modelled part stands).
OTHER_STACK = (
    "not modelled: another algorithm or adaptation than the model's (critic-free estimators, GAE with its critic; "
    "LoRA or full fine-tuning)"
)
ADDITIVE: frozenset[str] = frozenset({OTHER_STACK})
#: Knob values the model covers (a column absent or null: the release's value); the stack's terms are physics where
#: the release measured none (:mod:`rlvrambench_hf.memory.stack`).
COVERED: dict[str, tuple[object, ...]] = {
    "rollout_engine": ("vllm", "sglang", "hf"),
    "vllm_mode": ("colocate", "server"),
    "strategy": ("fsdp", "fsdp2", "deepspeed", "ddp", "megatron"),
    "advantage_estimator": (*sorted(CRITIC_FREE), "gae"),
    "actor_param_dtype": ("fp32", "float32", "bf16", "bfloat16", "fp16"),
}


def not_modelled(table: pa.Table, codes: Codes) -> dict[str, np.ndarray]:
    """Per reason, the plans the per-phase model does not cover (another engine, estimator or backend);
    for them no verdict is given, not even a measured one."""
    out: dict[str, np.ndarray] = {}
    n = table.num_rows
    for name, covered in COVERED.items():
        if name not in table.column_names:
            continue
        values = table.column(name).to_pylist()
        for value in sorted({v for v in values if v is not None and v not in covered}, key=str):
            mask = np.array([v == value for v in values], dtype=bool).reshape(n)
            shown = covered if len(covered) < 6 else (*covered[:5], "...")
            out[f"not modelled: {name}={value} ({KNOB_BY_NAME[name].meaning}; the model covers {shown})"] = mask
    for reason, mask in _other_models(table).items():
        if mask.any():
            out[reason] = mask
    stack = other_stack(table)
    if stack.any():
        out[OTHER_STACK] = stack
    return out


def _twin_state(table: pa.Table, context: Context) -> np.ndarray:
    """The measured label (-1: none) of each plan's GRPO+LoRA twin: the same settings in the release's stack."""
    twin = table
    for name, value in RELEASE_STACK.items():
        twin = _with_column(twin, name, pa.array([value] * table.num_rows, pa.string()))
    found = exact_matches(context.records, context.records.index.codes(twin))
    return np.where(found.resolved > 0, found.worst, -1)


#: A model-based reward the terms cannot size (its phase is physics: :class:`~rlvrambench_hf.memory.arithmetic.Reward`).
REWARD_MODEL = (
    "not modelled: reward_model.model.path names a reward model without shipped config.json facts (its size sets "
    "the reward phase)"
)
REWARD_MICRO = (
    "not modelled: a FSDP reward model without reward_model.micro_batch_size_per_gpu (or use_dynamic_bsz with "
    "forward_max_token_len_per_gpu): its forward's tokens are not known"
)
OTHER_CRITIC = (
    "not modelled: critic.model.path names another model than the actor's (the critic's terms are sized as the "
    "actor's model)"
)


def _other_models(table: pa.Table) -> dict[str, np.ndarray]:
    """Plans with a model-based reward the terms cannot size, and GAE plans whose critic is another model than the
    actor."""
    n = table.num_rows

    def column(name: str) -> list[object]:
        return table.column(name).to_pylist() if name in table.column_names else [None] * n

    reward = [v is True for v in column("reward_model")]
    unsized = [r and p is None for r, p in zip(reward, column("reward_params"))]
    fsdp = [r and loop is not True for r, loop in zip(reward, column("reward_loop"))]
    budgets = zip(column("reward_dynamic_bsz"), column("reward_max_token_len"))
    dynamic = [d is True and t is not None for d, t in budgets]
    no_micro = [f and m is None and not d for f, m, d in zip(fsdp, column("reward_micro_batch"), dynamic)]
    gae = [str(e).lower() == "gae" for e in column("advantage_estimator")]
    critic = [g and c is True for g, c in zip(gae, column("critic_other_model"))]
    return {
        REWARD_MODEL: np.array(unsized, dtype=bool).reshape(n),
        REWARD_MICRO: np.array(no_micro, dtype=bool).reshape(n),
        OTHER_CRITIC: np.array(critic, dtype=bool).reshape(n),
    }


def other_stack(table: pa.Table) -> np.ndarray:
    """Plans of an algorithm or adaptation the model has no terms for (an estimator VERL does not name, an
    adaptation other than LoRA or none)."""
    n = table.num_rows
    out = np.zeros(n, dtype=bool)
    known = {str(e).upper() for e in COVERED["advantage_estimator"]}
    for name, allowed in (("algorithm", known), ("adaptation", {"LORA", "NONE"})):
        if name in table.column_names:
            values = table.column(name).to_pylist()
            out |= np.array([v is not None and str(v).upper() not in allowed for v in values], dtype=bool).reshape(n)
    return out
