"""What would make it fit: single-setting changes along values the release measured (pure, vectorised over plans).

For every plan that needs one, each changeable setting is moved to each measured value in its direction (a
smaller micro-batch, another utilization, more GPUs, offload on, a shorter response, ...; see :data:`MOVES`; a
memory knob the model reads — layered summon, gradient checkpointing — is turned on), all the variants are
assessed together like plans, and per setting the smallest change whose verdict is
``within_margin`` is kept — the smallest one a measurement supports and, when it is smaller still, the smallest
one the references predict. Changes are ordered by how little they change the run: memory knobs first, then
hardware, then the training itself, and within a tier by the size of the step (``|ln(to / from)|``, 1 for a
switch). When ``max_model_len`` equalled prompt + response, a length change keeps it so (VERL's default).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa

from ..answer import Change, MeasuredRef, UserKeys
from ..plan.arrays import numbers, take, with_validity
from ..plan.knobs import KNOB_BY_NAME
from ..plan.mapping import TRL_MAPPING, VERL_MAPPING, Mapped
from ..plan.trl_mapping import ACCELERATE_PLACES
from .records import MeasuredIndex

#: setting -> (tier, direction): "down", "up", "other" (any other measured value) or "on" (False -> True).
MOVES: dict[str, tuple[int, str]] = {
    "actor_micro_batch": (0, "down"),
    "rollout_logprob_micro_batch": (0, "down"),
    "ref_logprob_micro_batch": (0, "down"),
    "vllm_gpu_memory_utilization": (0, "other"),
    "max_num_seqs": (0, "down"),
    "parameter_offload": (0, "on"),
    "optimizer_offload": (0, "on"),
    "free_cache_engine": (0, "on"),
    "layered_summon": (0, "on"),
    "gradient_checkpointing": (0, "on"),
    # the levers of the stacks the release did not measure (physics only): their values are :data:`CANDIDATES`
    "ref_param_offload": (0, "on"),
    "critic_param_offload": (0, "on"),
    "critic_optimizer_offload": (0, "on"),
    "reward_param_offload": (0, "on"),
    "reward_micro_batch": (0, "down"),
    "reward_vllm_utilization": (0, "down"),
    "zero_stage": (0, "up"),
    "ulysses_sp_size": (0, "up"),
    "gpu_count": (1, "up"),
    "rollout_tp_size": (1, "other"),
    "max_response_length": (2, "down"),
    "max_prompt_length": (2, "down"),
    "rollout_n": (2, "down"),
    "train_batch_size": (2, "down"),
}
LENGTHS = ("max_prompt_length", "max_response_length")
#: Values a lever takes beyond the measured ones (the release measured no ZeRO stage, Ulysses size or more than 4
#: GPUs): sharding more, splitting the tokens, more GPUs.
CANDIDATES: dict[str, tuple[float, ...]] = {
    "zero_stage": (3,),
    "ulysses_sp_size": (2, 4, 8),
    "gpu_count": (8, 16, 32),
    "reward_micro_batch": (1, 2, 4, 8, 16),
    "reward_vllm_utilization": (0.2, 0.3, 0.4, 0.5),
}
#: Micro-batches VERL requires to divide the sequences each GPU trains on (its check of the per-GPU mini-batch).
DIVIDING = ("actor_micro_batch", "rollout_logprob_micro_batch", "ref_logprob_micro_batch")


@dataclass(frozen=True)
class Assessed:
    """What the assessment of variants returns: verdict state and basis codes, the within-margin measured record
    supporting it (-1: none), and the regression's peak (NaN: none)."""

    state: np.ndarray
    measured: np.ndarray
    record: np.ndarray
    peak: np.ndarray


@dataclass(frozen=True)
class Variants:
    """Variant plans with, per variant: the plan it changes, the setting (index into :data:`MOVES`), its cost, the
    part it was made in (``after[part]`` is the new value) and the plan's value before."""

    table: pa.Table
    origin: np.ndarray
    setting: np.ndarray
    cost: np.ndarray
    part: np.ndarray
    before: np.ndarray
    after: list[Any]


def variants(table: pa.Table, rows: np.ndarray, index: MeasuredIndex) -> Variants | None:
    """Every single-setting variant of plans ``rows`` along the measured values (a memory knob: turned on)."""
    parts, origin, setting, cost, before, after = [], [], [], [], [], []
    table = _with_knob_values(table)
    per_gpu = _sequences_per_gpu(table)
    gpus = numbers(table.column("gpu_count"))[0] if "gpu_count" in table.column_names else np.zeros(table.num_rows)
    for k, (name, (tier, direction)) in enumerate(MOVES.items()):
        if name not in table.column_names:
            continue
        current, valid = numbers(table.column(name))
        measured = index.values[name].to_pylist() if name in index.values else []
        values = sorted({*measured, *CANDIDATES.get(name, ())}) or [True]
        for value in values:
            if direction != "on" and not float(value) > 0:  # a sentinel (-1: not set), never a setting to propose
                continue
            fits = _allowed(direction, current[rows], float(value))
            if name in DIVIDING:  # a micro-batch that does not divide the sequences per GPU would not run
                fits &= np.fmod(per_gpu[rows], float(value)) == 0
            if name == "ulysses_sp_size":  # an SP group lies within the GPUs
                fits &= np.fmod(gpus[rows], float(value)) == 0
            chosen = rows[valid[rows] & fits]
            if not len(chosen):
                continue
            step = 1.0 if direction == "on" else np.abs(np.log(float(value) / np.maximum(current[chosen], 1e-12)))
            parts.append(_changed(take(table, chosen), name, value))
            origin.append(chosen)
            setting.append(np.full(len(chosen), k))
            cost.append(tier * 10 + np.broadcast_to(step, chosen.shape))
            before.append(current[chosen])
            after.append(value)
    if not parts:
        return None
    part = np.repeat(np.arange(len(parts)), [len(o) for o in origin])
    return Variants(
        pa.concat_tables(parts),
        np.concatenate(origin),
        np.concatenate(setting),
        np.concatenate(cost),
        part,
        np.concatenate(before),
        after,
    )


def _sequences_per_gpu(table: pa.Table) -> np.ndarray:
    """Sequences each GPU trains on per step (NaN where a setting is not given)."""
    got = [numbers(table.column(n)) if n in table.column_names else (np.zeros(table.num_rows), np.zeros(
        table.num_rows, dtype=bool)) for n in ("train_batch_size", "rollout_n", "gpu_count")]  # fmt: skip
    (batch, b_ok), (n, n_ok), (gpus, g_ok) = got
    ok = b_ok & n_ok & g_ok & (gpus > 0)
    return np.where(ok, batch * n / np.where(ok, gpus, 1.0), np.nan)


def _with_knob_values(table: pa.Table) -> pa.Table:
    """``table`` with each memory knob :data:`MOVES` can turn on given everywhere: where a plan does not say, the
    value the per-phase model takes (VERL's default, or the release's)."""
    import pyarrow.compute as pc

    from ...memory.inputs import KNOB_DEFAULTS

    for name in (n for n in MOVES if n in KNOB_BY_NAME and KNOB_BY_NAME[n].type == pa.bool_()):
        default = pa.scalar(bool(KNOB_DEFAULTS[name][0]))
        given = (
            table.column(name).cast(pa.bool_()) if name in table.column_names else pa.nulls(table.num_rows, pa.bool_())
        )
        filled = pc.fill_null(given, default)
        if name in table.column_names:
            table = table.set_column(table.schema.get_field_index(name), name, filled)
        else:
            table = table.append_column(name, filled)
    return table


def _allowed(direction: str, current: np.ndarray, value: float) -> np.ndarray:
    if direction == "down":
        return value < current
    if direction == "up":
        return value > current
    if direction == "on":
        return cast("np.ndarray", (current == 0) & np.full(current.shape, value == 1))
    return np.asarray(value != current, dtype=bool)


def _changed(table: pa.Table, name: str, value: float) -> pa.Table:
    arrow_type = table.schema.field(name).type
    out = table.set_column(table.schema.get_field_index(name), name, _repeat(arrow_type, value, table.num_rows))
    if name in LENGTHS and "max_model_len" in table.column_names:
        prompt, _ = numbers(table.column("max_prompt_length"))
        response, _ = numbers(table.column("max_response_length"))
        model_len, valid = numbers(table.column("max_model_len"))
        was_sum = valid & (model_len == prompt + response)
        other = response if name == "max_prompt_length" else prompt
        new_len = np.where(was_sum, float(value) + other, model_len).astype(np.int64)
        at = out.schema.get_field_index("max_model_len")
        out = out.set_column(at, "max_model_len", with_validity(pa.int64(), new_len, valid))
    return out


def _repeat(arrow_type: pa.DataType, value: float, n: int) -> pa.Array:
    if arrow_type == pa.bool_():
        return with_validity(arrow_type, np.full(n, bool(value)), None)
    dtype = np.float64 if pa.types.is_floating(arrow_type) else np.int64
    return with_validity(arrow_type, np.full(n, value, dtype=dtype), None)


@dataclass(frozen=True)
class ChangeSet:
    """The variants that reach ``within_margin``, sorted by plan, then cost; ``record`` describes a measured
    record by its index."""

    found: Variants
    assessed: Assessed
    works: np.ndarray  # indices of the working variants, by plan then cost
    starts: np.ndarray  # per plan row: first position in ``works`` (searchsorted over plans)
    peak_before: np.ndarray
    record: Callable[[int], dict[str, Any]]

    @classmethod
    def of(
        cls,
        found: Variants,
        assessed: Assessed,
        peak_before: np.ndarray,
        within: int,
        record: Callable[[int], dict[str, Any]],
    ) -> ChangeSet:
        works = np.flatnonzero(assessed.state == within)
        works = works[np.lexsort((found.cost[works], found.origin[works]))]
        starts = np.searchsorted(found.origin[works], np.arange(len(peak_before) + 1))
        return cls(found, assessed, works, starts, peak_before, record)

    def for_row(self, row: int) -> list[Change]:
        """The changes of plan ``row``: per setting the smallest that works and, if it is only predicted, also the
        smallest one a measurement supports; smallest first."""
        out: list[Change] = []
        measured: dict[int, bool] = {}
        for j in self.works[self.starts[row] : self.starts[row + 1]]:
            setting = int(self.found.setting[j])
            supported = bool(self.assessed.measured[j])
            if setting in measured and (measured[setting] or not supported):
                continue
            measured[setting] = supported
            out.append(self._change(int(j), supported))
        return out

    def best(self) -> tuple[np.ndarray, np.ndarray]:
        """(the smallest working variant of each plan, -1 for none; whether a measurement supports it)."""
        n = len(self.starts) - 1
        has = self.starts[1:] > self.starts[:-1]
        first = np.full(n, -1, dtype=np.int64)
        first[has] = self.works[self.starts[:-1][has]]
        return first, np.where(first >= 0, self.assessed.measured[np.maximum(first, 0)], False)

    def _change(self, j: int, supported: bool) -> Change:
        names = list(MOVES)
        name = names[int(self.found.setting[j])]
        origin = int(self.found.origin[j])
        peak = self.assessed.peak[j] - self.peak_before[origin]
        to = self.found.after[self.found.part[j]]
        return Change(
            name,
            plain(self.found.before[j], self.found.table.schema.field(name).type),
            to,
            UserKeys.of(in_user_keys(name, to, self.found.table.slice(j, 1).to_pylist()[0])),
            "within_margin",
            "measured" if supported else "predicted",
            MeasuredRef.of(self.record(int(self.assessed.record[j]))) if supported else None,
            None if np.isnan(peak) else float(peak),
        )


#: With dynamic batch sizes, the token budget that sets each micro-batch (VERL's keys).
TOKEN_BUDGET_KEYS = {
    "actor_micro_batch": "actor_rollout_ref.actor.ppo_max_token_len_per_gpu",
    "rollout_logprob_micro_batch": "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu",
    "ref_logprob_micro_batch": "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu",
}


def in_user_keys(setting: str, value: object, settings: dict[str, Any]) -> dict[str, list[str]]:
    """The change as the user writes it, from the rows of the mapping table that give ``setting``: VERL overrides
    (``key=value``), TRL arguments (``--key value``) and entries of the accelerate config that ``accelerate launch
    --config_file`` reads (``deepspeed_config.offload_param_device: cpu``); empty where the tool has no such key.
    With dynamic batch sizes a micro-batch is the token budget that holds it (sequences x prompt + response,
    divided by the Ulysses size VERL multiplies it by)."""
    budget = _token_budget(setting, value, settings)
    if budget is not None:
        return {"verl_overrides": [budget], "trl_arguments": [], "accelerate_config": []}
    trl = _written(TRL_MAPPING, setting, value, settings)
    return {
        "verl_overrides": [f"{k}={_text(v)}" for k, v in _written(VERL_MAPPING, setting, value, settings)],
        "trl_arguments": [f"--{k} {_text(v)}" for k, v in trl if k not in ACCELERATE_PLACES],
        "accelerate_config": [f"{ACCELERATE_PLACES[k]}: {_text(v)}" for k, v in trl if k in ACCELERATE_PLACES],
    }


def _token_budget(setting: str, value: object, settings: dict[str, Any]) -> str | None:
    if setting not in TOKEN_BUDGET_KEYS or settings.get("use_dynamic_bsz") is not True:
        return None
    prompt, response = settings.get("max_prompt_length"), settings.get("max_response_length")
    if not isinstance(value, (int, float)) or not isinstance(prompt, int) or not isinstance(response, int):
        return None
    sp = settings.get("ulysses_sp_size") or 1
    tokens = int(value * (prompt + response) // max(int(sp), 1))
    return f"{TOKEN_BUDGET_KEYS[setting]}={tokens}"


def _written(
    mapping: tuple[Mapped, ...], setting: str, value: object, settings: dict[str, Any]
) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for row in mapping:
        if row.setting != setting:
            continue
        try:
            values = row.write(value, settings)
        except (KeyError, TypeError, ValueError):  # the conversion needs a setting the plan does not give
            return []
        for key, written in zip(row.keys, values):
            if written is not None and (key, written) not in out:
                out.append((key, written))
        break  # the first row that gives the setting is how a user sets it
    return out


def _text(value: object) -> str:
    return str(value) if not isinstance(value, float) or not value.is_integer() else f"{value:g}"


def plain(value: float, arrow_type: pa.DataType) -> object:
    """A numpy value as the column's Python type (bool, int or float)."""
    if arrow_type == pa.bool_():
        return bool(value)
    if pa.types.is_integer(arrow_type):
        return int(value)
    return float(value)
