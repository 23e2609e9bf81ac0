"""What makes a failing floor hold: per plan whose verdict a floor fails, the single-setting changes that make that
floor hold without making another fail, solved from the floor's own arithmetic (pure over the plans' arrays).

* ``generation_weights`` (vLLM's bf16 weights within its budget): a larger utilization, in steps of 0.05; more
  rollout tensor parallelism (a divisor of the GPUs);
* ``actor_shards_at_startup`` (the actor's shards beside vLLM's budget): parameter offload; a smaller utilization;
  more GPUs (a multiple of the tensor parallelism that divides the batch);
* ``kv_cache_one_sequence`` (one sequence's KV cache in the budget less the weights): a larger utilization; more
  tensor parallelism; a shorter ``max_model_len`` that still holds prompt + response;
* ``sequence_length``: ``max_model_len`` = prompt + response; ``batch_divides_gpus``: the next train batch that
  divides; ``tensor_parallel_divides_gpus``: the largest smaller divisor of the GPUs; ``micro_batch_fits_per_gpu_
  batch``: the largest micro-batch dividing the sequences per GPU.

Each candidate is assessed like a plan (:func:`~.verdict.assess`): it is kept when its floor holds and no floor
that held fails, with the verdict it would get and the model's peak change. The plan may need more than one
change: a remedy's own verdict says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..plan.arrays import take, with_validity
from .changes import MOVES
from .floors import FLOORS, Floors
from .predict import SettingArrays

STEP = 0.05
#: The largest utilization offered (vLLM needs some memory outside its budget).
TOP_UTILIZATION = 0.95
Solver = Callable[[SettingArrays, Floors, int], Iterator[tuple[str, float]]]


@dataclass(frozen=True)
class Candidates:
    """Remedy candidates: the plan row, the floor it targets (index into FLOORS), the setting and the new value."""

    row: np.ndarray
    floor: np.ndarray
    setting: tuple[str, ...]
    value: np.ndarray

    def __len__(self) -> int:
        return len(self.row)


def candidates(s: SettingArrays, found: Floors, rows: np.ndarray) -> Candidates:
    """Every remedy candidate of the failing floors of plans ``rows`` (floor order, then the smallest change)."""
    row, floor, setting, value = [], [], [], []
    for i in rows.tolist():
        for k, name in enumerate(FLOORS):
            if not (found.known[name][i] and not found.holds[name][i]):
                continue
            options = sorted(SOLVERS[name](s, found, i), key=lambda o: _cost(s, i, *o))
            for name_of, to in options:
                row.append(i)
                floor.append(k)
                setting.append(name_of)
                value.append(to)
    return Candidates(
        np.array(row, dtype=np.int64), np.array(floor, dtype=np.int64), tuple(setting), np.array(value, dtype=float)
    )


def _cost(s: SettingArrays, i: int, setting: str, to: float) -> float:
    tier = MOVES.get(setting, (2, ""))[0]
    before = s[setting][i] if setting in s.values else 0.0
    step = 1.0 if setting == "parameter_offload" else abs(math.log(max(to, 1e-12) / max(before, 1e-12)))
    return tier * 10 + step


def changed_table(table: pa.Table, c: Candidates) -> pa.Table:
    """The candidates as plans: each plan's row with its one setting changed (several columns per setting are
    changed part by part)."""
    parts = []
    for name in sorted(set(c.setting)):
        picked = np.array([n == name for n in c.setting], dtype=bool)
        part = take(table, c.row[picked])
        arrow_type = part.schema.field(name).type if name in part.column_names else _TYPES[name]
        column = _column(arrow_type, c.value[picked])
        if name in part.column_names:
            part = part.set_column(part.schema.get_field_index(name), name, column)
        else:
            part = part.append_column(name, column)
        parts.append((np.flatnonzero(picked), part))
    order = np.concatenate([p for p, _ in parts])
    merged = pa.concat_tables([t for _, t in parts], promote_options="default")
    return take(merged, np.argsort(order, kind="stable"))


_TYPES = {"max_model_len": pa.int64(), "parameter_offload": pa.bool_()}


def _column(arrow_type: pa.DataType, values: np.ndarray) -> pa.Array:
    if arrow_type == pa.bool_():
        return with_validity(arrow_type, values > 0, None)
    dtype = np.float64 if pa.types.is_floating(arrow_type) else np.int64
    return with_validity(arrow_type, values.astype(dtype), None)


# ---- the solvers, one per floor (values for plan i; each yields (setting, new value)) --------------------------


def _up(value: float) -> float:
    return round(math.ceil(round(value / STEP, 6)) * STEP, 2)


def _down(value: float) -> float:
    return round(math.floor(round(value / STEP, 6)) * STEP, 2)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0] if n > 0 else []


def _gpus(s: SettingArrays, i: int) -> int:
    return int(s["gpu_count"][i]) if s.valid["gpu_count"][i] else 0


def _utilization(s: SettingArrays, i: int) -> float:
    return float(s["vllm_gpu_memory_utilization"][i])


def _generation_weights(s: SettingArrays, f: Floors, i: int) -> Iterator[tuple[str, float]]:
    weights, budget = f.required["generation_weights"][i], f.available["generation_weights"][i]
    u = _up(weights / s["device_capacity_mib"][i])
    if u <= TOP_UTILIZATION:
        yield "vllm_gpu_memory_utilization", u
    t, g = s["rollout_tp_size"][i], _gpus(s, i)
    more = [d for d in _divisors(g) if d > t and weights * t / d <= budget]
    if more:
        yield "rollout_tp_size", float(more[0])


def _actor_shards(s: SettingArrays, f: Floors, i: int) -> Iterator[tuple[str, float]]:
    shards, c, u = f.required["actor_shards_at_startup"][i], s["device_capacity_mib"][i], _utilization(s, i)
    if s["parameter_offload"][i] <= 0:
        yield "parameter_offload", 1.0
    lower = _down((c - shards) / c)
    if 0 < lower < u:
        yield "vllm_gpu_memory_utilization", lower
    g, t = int(s["gpu_count"][i]), max(int(s["rollout_tp_size"][i]), 1)
    sequences = s["train_batch_size"][i] * s["rollout_n"][i]
    if s["parameter_offload"][i] <= 0 and g > 0:
        for more in range(g + 1, 8 * g + 1):
            if more % t == 0 and sequences % more == 0 and shards * g / more <= c - u * c:
                yield "gpu_count", float(more)
                break


def _kv_cache(s: SettingArrays, f: Floors, i: int) -> Iterator[tuple[str, float]]:
    name = "kv_cache_one_sequence"
    kv, avail, c, u = f.required[name][i], f.available[name][i], s["device_capacity_mib"][i], _utilization(s, i)
    weights = u * c - avail
    higher = _up((kv + weights) / c)
    if higher <= TOP_UTILIZATION:
        yield "vllm_gpu_memory_utilization", higher
    t, g = max(s["rollout_tp_size"][i], 1.0), _gpus(s, i)
    more = [d for d in _divisors(g) if d > t and kv * t / d <= u * c - weights * t / d]
    if more:
        yield "rollout_tp_size", float(more[0])
    length = s["max_model_len"][i] if s.valid["max_model_len"][i] else s.architecture.context[i]
    needed = s["max_prompt_length"][i] + s["max_response_length"][i]
    if avail > 0 and np.isfinite(length) and length > 0:
        shorter = math.floor(avail / (kv / length))
        if needed <= shorter < length:
            yield "max_model_len", float(shorter)


def _sequence_length(s: SettingArrays, f: Floors, i: int) -> Iterator[tuple[str, float]]:
    yield "max_model_len", float(f.required["sequence_length"][i])


def _batch_divides(s: SettingArrays, f: Floors, i: int) -> Iterator[tuple[str, float]]:
    batch, n, g = int(s["train_batch_size"][i]), int(s["rollout_n"][i]), int(s["gpu_count"][i])
    step = g // math.gcd(n, g)  # the train batches whose sequences divide evenly are the multiples of this
    yield "train_batch_size", float((batch // step + 1) * step)


def _tensor_parallel(s: SettingArrays, f: Floors, i: int) -> Iterator[tuple[str, float]]:
    t, g = int(s["rollout_tp_size"][i]), int(s["gpu_count"][i])
    smaller = [d for d in _divisors(g) if d < t]
    if smaller:
        yield "rollout_tp_size", float(smaller[-1])


def _micro_batch(s: SettingArrays, f: Floors, i: int) -> Iterator[tuple[str, float]]:
    per_gpu = f.available["micro_batch_fits_per_gpu_batch"][i]
    if per_gpu >= 1:
        yield "actor_micro_batch", float(math.floor(per_gpu))


SOLVERS: dict[str, Solver] = {
    "generation_weights": _generation_weights,
    "actor_shards_at_startup": _actor_shards,
    "sequence_length": _sequence_length,
    "batch_divides_gpus": _batch_divides,
    "tensor_parallel_divides_gpus": _tensor_parallel,
    "micro_batch_fits_per_gpu_batch": _micro_batch,
    "kv_cache_one_sequence": _kv_cache,
}
