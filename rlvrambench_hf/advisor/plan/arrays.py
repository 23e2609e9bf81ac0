"""Arrow columns to numpy and back through their buffers (pure).

pyarrow's Python converters (``pa.array`` of a list, ``to_numpy``, Python scalars in compute calls) import pandas,
which would cost a sweep more than answering it; these helpers read and build the buffers directly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from ...arrow import one_chunk, string_array


def valid_mask(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """True where ``array`` holds a value."""
    array = one_chunk(array)
    n = len(array)
    bitmap = array.buffers()[0]
    if array.null_count == 0 or bitmap is None:
        return np.ones(n, dtype=bool) if array.type != pa.null() else np.zeros(n, dtype=bool)
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
    return bits[array.offset : array.offset + n].astype(bool)


def numbers(array: pa.Array | pa.ChunkedArray, dtype: type = np.float64) -> tuple[np.ndarray, np.ndarray]:
    """(values as ``dtype``, valid mask) of an integer, float or boolean column; nulls are 0 in the values."""
    array = one_chunk(array)
    valid = valid_mask(array)
    n = len(array)
    if array.type == pa.null() or n == 0:
        return np.zeros(n, dtype=dtype), valid
    if pa.types.is_boolean(array.type):
        bits = np.unpackbits(np.frombuffer(array.buffers()[1], dtype=np.uint8), bitorder="little")
        values: np.ndarray = bits[array.offset : array.offset + n].astype(dtype)
    else:
        if pa.types.is_floating(array.type):
            native = np.dtype(np.float64 if array.type == pa.float64() else np.float32)
        else:
            native = np.dtype(str(array.type))
        raw = np.frombuffer(array.buffers()[1], dtype=native, count=n, offset=array.offset * native.itemsize)
        values = raw.astype(dtype)
    values[~valid] = 0
    return values, valid


def with_validity(array_type: pa.DataType, values: np.ndarray, valid: np.ndarray | None) -> pa.Array:
    """An arrow array of ``values`` (numpy, contiguous) with nulls where ``valid`` is False."""
    values = np.ascontiguousarray(values)
    n = len(values)
    bitmap = None
    if valid is not None and not valid.all():
        bitmap = pa.py_buffer(np.packbits(valid.astype(np.uint8), bitorder="little"))
    if array_type == pa.bool_():
        data = pa.py_buffer(np.packbits(values.astype(np.uint8), bitorder="little"))
        return pa.Array.from_buffers(pa.bool_(), n, [bitmap, data])
    return pa.Array.from_buffers(array_type, n, [bitmap, pa.py_buffer(values)])


def floats(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    return with_validity(pa.float64(), np.asarray(values, dtype=np.float64), valid)


def ints(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    return with_validity(pa.int64(), np.asarray(values, dtype=np.int64), valid)


def bools(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    return with_validity(pa.bool_(), np.asarray(values, dtype=bool), valid)


def strings(values: Sequence[str | None]) -> pa.Array:
    """A string array (None is null)."""
    valid = np.array([v is not None for v in values], dtype=bool)
    array = string_array([v if v is not None else "" for v in values])
    if valid.all():
        return array
    return pa.Array.from_buffers(
        pa.string(), len(values), [pa.py_buffer(np.packbits(valid, bitorder="little")), *array.buffers()[1:]]
    )


def take(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """Rows of ``table`` by position."""
    return table.take(ints(np.asarray(rows, dtype=np.int64)))


def codes_of(found: pa.Array | pa.ChunkedArray, missing: int = -1) -> np.ndarray:
    """``pyarrow.compute.index_in`` results as int64, ``missing`` where null."""
    values, valid = numbers(found, np.int64)
    values[~valid] = missing
    return values
