"""Moving data between pyarrow, numpy and Python without pyarrow's Python converters.

pyarrow imports pandas (about 0.1 s) whenever it converts Python objects or numpy arrays (``pa.array``,
``pa.scalar``, ``Array.to_numpy``). These helpers build arrays from buffers instead, which keeps pandas off the
quick commands (``rlvrambench evaluate``, ``replay``, ``show``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa

from .errors import InputError, quote


def string_array(values: Iterable[str]) -> pa.Array:
    """A string array built from its buffers."""
    encoded = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.large_string(), len(encoded), buffers).cast(pa.string())


def arrow_strings(values: Sequence[str]) -> pa.Array:
    """A string array of ``values`` (each a ``str``), built without pyarrow's Python converters."""
    bad = next((v for v in values if not isinstance(v, str)), None)
    if bad is not None:
        raise InputError(f"expected strings, got {type(bad).__name__} value {quote(bad)}")
    try:
        return string_array(values)
    except UnicodeEncodeError as exc:
        raise InputError(f"a string is not valid Unicode: {quote(exc.object)}") from None


def arrow_ints(values: np.ndarray) -> pa.Array:
    """An integer arrow array sharing the buffer of a numpy array."""
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def numpy_ints(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A numpy view of an integer or boolean arrow array without nulls."""
    array = one_chunk(array)
    if array.null_count:
        raise ValueError("numpy_ints: the array has nulls")
    if pa.types.is_boolean(array.type):
        return numpy_ints(array.cast(pa.int8())).astype(bool)
    dtype = np.dtype(str(array.type))
    if len(array) == 0:
        return np.empty(0, dtype=dtype)
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * dtype.itemsize)


def one_chunk(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``values`` as one array; a single chunk is returned as is (``combine_chunks`` would copy it)."""
    if isinstance(values, pa.Array):
        return values
    return values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()


def compact_codes(codes: np.ndarray, n_values: int) -> np.ndarray:
    """Codes in ``range(n_values)`` in the smallest signed integer type that holds them."""
    for dtype in (np.int8, np.int16, np.int32):
        if n_values <= np.iinfo(dtype).max + 1:
            return codes.astype(dtype, copy=False)
    return codes.astype(np.int64, copy=False)
