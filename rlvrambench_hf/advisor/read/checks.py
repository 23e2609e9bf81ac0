"""Every setting of a plan checked before use: type, finiteness, range and consistency, named as the user wrote it.

Types come from the registry (the ``configurations`` columns); this module adds what the registry does not say,
the range each setting must lie in (:data:`RANGES`). Two ways in, one set of rules:

* :func:`typed_from_text` types a table of text cells (a CSV), vectorised with pyarrow compute;
* :func:`typed_from_values` types Python values (YAML, JSON, a VERL config, a TRL config), where a string in a
  number field is refused rather than parsed.

Both end in :func:`check_ranges` on the typed table. Each failure is one :class:`~rlvrambench_hf.errors.InputError`
line: where (the file, the row or key, the setting as written), the value (``repr``, bounded) and what is wrong,
with the count of other rows that fail the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...arrow import arrow_ints, string_array
from ...data.schema.kinds import BOOL, FLOAT64, INT64, STRING
from ...data.schema.spec import Column
from ...errors import InputError


class Where:
    """How errors name a setting of a row: ``origin(row)`` ("plans.csv row 3", "run.sh line 12"), each setting
    as the user wrote it (``written``: "column 'rollout_n'", "actor_rollout_ref.rollout.n") and, where its value came
    from the environment, that variable (``hidden(setting, row)``: named in errors, its value never printed)."""

    def __init__(
        self,
        origin: Callable[[int], str],
        written: Mapping[str, str],
        hidden: Callable[[str, int], str | None] | None = None,
    ) -> None:
        self.origin, self.written, self.hidden = origin, written, hidden

    def value(self, setting: str, row: int, value: object) -> object:
        """``value`` as an error may show it: a value from the environment is replaced by its variable's name."""
        name = self.hidden(setting, row) if self.hidden else None
        return _Named(name) if name else value

    def name(self, setting: str) -> str:
        return self.written.get(setting, setting)

    def __call__(self, setting: str, row: int) -> str:
        return f"{self.origin(row)}: {self.name(setting)}"


INT64_MAX = 2**63 - 1
#: A count: an integer above 0.
COUNT = "a positive count"
#: The vLLM memory fraction: strictly between 0 and 1.
FRACTION = "a fraction strictly between 0 and 1"
#: A sample limit: -1 (none) or a positive count.
LIMIT = "-1 (no limit) or a positive count"
#: Not negative.
NON_NEGATIVE = "0 or more"

#: The range of each numeric setting (a setting not named here is checked for its type only).
RANGES: dict[str, str] = {
    **dict.fromkeys(
        """gpu_count rollout_tp_size actor_micro_batch rollout_logprob_micro_batch ref_logprob_micro_batch
        max_prompt_length max_response_length max_model_len max_num_seqs rollout_n train_batch_size
        total_training_steps val_max_samples device_capacity_mib margin_limit_mib gpu_monitor_interval_ms
        max_actor_ckpt_to_keep""".split(),
        COUNT,
    ),
    "vllm_gpu_memory_utilization": FRACTION,
    "train_max_samples": LIMIT,
    # the knobs (:mod:`..plan.knobs`): a parallel size or budget below 1 is none VERL, vLLM or accelerate runs
    **dict.fromkeys(("nnodes", "ulysses_sp_size", "max_token_len_per_gpu", "max_num_batched_tokens"), COUNT),
    "lora_rank": NON_NEGATIVE,
    "zero_stage": "a ZeRO stage (0, 1, 2 or 3)",
    "base_quant_bits": "4 or 8 bits",
}
_INTEGER = r"^[+-]?[0-9]+$"
_NUMBER = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$"
#: Longest value an error message quotes.
QUOTED = 60


def scalar(value: int | float | str | bool | None, type: pa.DataType | None = None) -> pa.Scalar:
    """An arrow scalar made from its buffers: pyarrow's Python converters (``pa.scalar``, and compute functions
    given Python values) import pandas, a second and 50 MiB that a sweep of plans does not need."""
    if value is None:
        return pa.nulls(1, type or pa.null())[0]
    if isinstance(value, bool):
        return pa.Array.from_buffers(pa.bool_(), 1, [None, pa.py_buffer(bytes([int(value)]))])[0]
    if isinstance(value, str):
        return string_array([value])[0]
    data = np.array([value], dtype=np.int64 if isinstance(value, int) else np.float64)
    return pa.Array.from_buffers(pa.from_numpy_dtype(data.dtype), 1, [None, pa.py_buffer(data)])[0]


def known_true(mask: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``mask`` with nulls as false (``fill_null(mask, False)`` without a Python scalar)."""
    mask = mask.combine_chunks() if isinstance(mask, pa.ChunkedArray) else mask
    return pc.and_kleene(mask, pc.is_valid(mask))


_ZERO, _ONE, _MINUS_ONE = scalar(0), scalar(1), scalar(-1)
_ALLOWED = {
    "a ZeRO stage (0, 1, 2 or 3)": arrow_ints(np.array([0, 1, 2, 3], dtype=np.int64)),
    "4 or 8 bits": arrow_ints(np.array([4, 8], dtype=np.int64)),
}
_ZERO_F, _ONE_F, _EMPTY = scalar(0.0), scalar(1.0), scalar("")
_TRUE_SET, _FALSE_SET = string_array(("true", "1")), string_array(("false", "0"))


class _Named:
    """A value from the environment as an error shows it: by its variable."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"the value of ${self.name} (from the environment)"


def quoted(value: object) -> str:
    """``repr(value)``, cut to :data:`QUOTED` characters."""
    text = repr(value)
    return text if len(text) <= QUOTED else text[: QUOTED - 4] + "...'"


def fail(where: str, value: object, what: str, others: int = 0) -> InputError:
    """The one-line error about ``value`` at ``where``; ``others`` more values fail the same way."""
    more = f" ({others} more row{'s' if others > 1 else ''} like it)" if others else ""
    return InputError(f"{where}: {quoted(value)} is {what}{more}")


def typed_from_text(raw: pa.Table, columns: Sequence[Column], where: Where) -> pa.Table:
    """Text cells (blank: not given) as a table of ``columns``' types; an unfit cell is a one-line error."""
    arrays = []
    for column in columns:
        text = raw.column(column.name).combine_chunks() if column.name in raw.column_names else None
        if text is None or (any(column.type is k for k in _TYPED) and _blank(text)):  # nulls, as the casts make
            arrays.append(pa.nulls(raw.num_rows, column.arrow_type))
            continue
        trimmed = pc.utf8_trim_whitespace(text)
        text = pc.if_else(pc.equal(trimmed, _EMPTY), scalar(None, pa.string()), trimmed)
        arrays.append(_typed_text(text, column, where))
    return pa.Table.from_arrays(arrays, schema=pa.schema([pa.field(c.name, c.arrow_type) for c in columns]))


def _blank(text: pa.Array) -> bool:
    """Whether every cell is null or empty, read from the buffers (no character at all; a plan read from a launch
    file leaves a third of the settings' columns so)."""
    if text.null_count == len(text):
        return True
    if not pa.types.is_string(text.type):
        return False
    data = text.buffers()[2]
    return data is None or data.size == 0


def _typed_text(text: pa.Array, column: Column, where: Where) -> pa.Array:
    """One column of trimmed text (blank: null) typed: cast at once, and only when the cast refuses a cell, find
    the first unfit one."""
    kind = column.type
    if kind is INT64:
        try:
            return pc.cast(text, pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            _refuse(pc.invert(pc.match_substring_regex(text, _INTEGER)), text, column.name, where, "not an integer")
            digits = pc.utf8_ltrim(pc.utf8_ltrim(text, "+-"), "0")
            length = pc.utf8_length(digits)
            beyond = pc.or_(pc.greater(length, 19), pc.and_(pc.equal(length, 19), pc.greater(digits, str(INT64_MAX))))
            _refuse(beyond, text, column.name, where, "an integer beyond int64")
            raise InputError(f"{where(column.name, 0)}: a value cannot be read as an integer") from None
    if kind is FLOAT64:
        try:
            values = pc.cast(text, pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            _refuse(pc.invert(pc.match_substring_regex(text, _NUMBER)), text, column.name, where, "not a number")
            raise InputError(f"{where(column.name, 0)}: a value cannot be read as a number") from None
        _refuse(pc.invert(pc.is_finite(values)), text, column.name, where, "not a finite number")
        return values
    if kind is BOOL:
        lower = pc.utf8_lower(text)
        truth = pc.is_in(lower, value_set=_TRUE_SET)
        unfit = pc.and_(pc.is_valid(text), pc.invert(pc.or_(truth, pc.is_in(lower, value_set=_FALSE_SET))))
        _refuse(unfit, text, column.name, where, "not a boolean (True or False)")
        return pc.if_else(pc.is_valid(text), truth, scalar(None, pa.bool_()))
    if kind is STRING:
        return text
    raise InputError(f"{where(column.name, 0)}: a {kind.name} setting cannot be planned")


#: The kinds a setting is typed as (any other is refused, given or not).
_TYPED = (INT64, FLOAT64, BOOL, STRING)


def _refuse(bad: pa.Array, values: pa.Array, setting: str, where: Where, what: str) -> None:
    """A one-line error on the first row where ``bad`` is true (nulls are never bad)."""
    bad = known_true(bad)
    count = pc.sum(bad).as_py() or 0
    if count:
        row = pc.index(bad, True).as_py()
        raise fail(where(setting, row), where.value(setting, row, values[row].as_py()), what, count - 1)


def typed_from_values(records: Sequence[Mapping[str, object]], columns: Sequence[Column], where: Where) -> pa.Table:
    """Python values (absent or None: not given) as a table of ``columns``' types; a value of the wrong type (a
    string in a number field, a float where a count goes, a number beyond int64) is a one-line error. Checked values
    are typed through their text, as a CSV's cells (no pyarrow Python converter, which would import pandas)."""
    from ...data.tables.reader import text_cell

    text = {}
    for column in columns:
        values = [r.get(column.name) for r in records]
        for row, value in enumerate(values):
            problem = type_problem(value, column)
            if problem:
                raise fail(where(column.name, row), where.value(column.name, row, value), problem)
        text[column.name] = string_array([text_cell(v) for v in values])
    return typed_from_text(pa.table(text), columns, where)


def type_problem(value: object, column: Column) -> str | None:
    """What is wrong with ``value`` as a value of ``column`` (None: nothing)."""
    import math

    kind = column.type
    if value is None:
        return None
    if kind is INT64:
        if isinstance(value, bool) or not isinstance(value, int):
            return "not an integer"
        return "an integer beyond int64" if abs(value) > INT64_MAX else None
    if kind is FLOAT64:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "not a number"
        if isinstance(value, int) and abs(value) > INT64_MAX:
            return "a number beyond int64"
        return None if math.isfinite(value) else "not a finite number"
    if kind is BOOL:
        return None if isinstance(value, bool) else "not a boolean (true or false)"
    if kind is STRING:
        return None if isinstance(value, str) else "not a string"
    return f"a {kind.name} setting, which cannot be planned"


def check_ranges(table: pa.Table, where: Where) -> None:
    """Ranges of :data:`RANGES` and the consistency of the parallel layout, vectorised over the rows."""
    for name, rule in RANGES.items():
        if name not in table.column_names:
            continue
        values = table.column(name)
        if rule == COUNT:
            bad = pc.less_equal(values, _ZERO)
        elif rule == FRACTION:
            bad = pc.or_(pc.less_equal(values, _ZERO_F), pc.greater_equal(values, _ONE_F))
        elif rule == LIMIT:
            bad = pc.and_(pc.less_equal(values, _ZERO), pc.not_equal(values, _MINUS_ONE))
        elif rule in _ALLOWED:
            bad = pc.and_kleene(
                pc.is_valid(values), pc.invert(pc.is_in(values, value_set=_ALLOWED[rule]))
            )  # null: not given
        else:
            bad = pc.less(values, _ZERO)
        _refuse(bad, values.combine_chunks(), name, where, f"not {rule}")
    _check_divides(table, "gpu_count", "rollout_tp_size", where)
    if {"device_capacity_mib", "margin_limit_mib"} <= set(table.column_names):
        capacity, margin = table.column("device_capacity_mib"), table.column("margin_limit_mib")
        _refuse(pc.greater(margin, capacity), margin.combine_chunks(), "margin_limit_mib", where,
                "above device_capacity_mib")  # fmt: skip


def _check_divides(table: pa.Table, whole: str, part: str, where: Where) -> None:
    if not {whole, part} <= set(table.column_names):
        return
    a, b = table.column(whole).combine_chunks(), table.column(part).combine_chunks()
    bad = known_true(pc.not_equal(pc.subtract(a, pc.multiply(pc.divide(a, b), b)), _ZERO))
    count = pc.sum(bad).as_py() or 0
    if count:
        row = pc.index(bad, True).as_py()
        more = f" ({count - 1} more row{'s' if count > 2 else ''} like it)" if count > 1 else ""
        shown = [quoted(where.value(n, row, v[row].as_py())) for n, v in ((whole, a), (part, b))]
        raise InputError(
            f"{where.origin(row)}: {where.name(whole)} = {shown[0]} is not divisible by {where.name(part)} = "
            f"{shown[1]}{more}"
        )
