"""Matching fixed-width string ids by sorting hashes, for scoring millions of predictions in any order.

pyarrow's string hashing (index_in, dictionary_encode, joins) takes about 4-6 s to match 10 M ids in another
order. Ids of one byte length (the release's are "query-" + 16 hex digits) are instead read as 8-byte words
straight from the arrow buffers, hashed with numpy and matched by sorting the hashes; every match is then
verified byte by byte, so anything unexpected (a wrong, missing or repeated id, or a hash collision) only sends
the rows to the exact path, which reports the problems exactly as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..arrow import compact_codes

_BLOCK = 1 << 20
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class FixedWidthStrings:
    """A string array whose values all have ``width`` bytes: value ``i`` is ``data[start + i*width :][:width]``."""

    data: pa.Buffer
    start: int
    width: int
    length: int

    @classmethod
    def of(cls, values: pa.Array) -> FixedWidthStrings | None:
        """The fixed-width view of a string array, or None when it has nulls or values of different lengths."""
        n = len(values)
        if (
            n == 0
            or values.null_count
            or not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type))
        ):
            return None
        offset_type = np.int32 if pa.types.is_string(values.type) else np.int64
        offsets = np.frombuffer(
            values.buffers()[1], dtype=offset_type, count=n + 1, offset=values.offset * np.dtype(offset_type).itemsize
        )
        start, total = int(offsets[0]), int(offsets[-1]) - int(offsets[0])
        width = total // n
        if width == 0 or width * n != total:
            return None
        for begin in range(0, n, _BLOCK):  # in blocks: no n-sized temporary
            if (np.diff(offsets[begin : begin + _BLOCK + 1]) != width).any():
                return None
        return cls(values.buffers()[2], start, width, n)

    def column(self, byte: int, dtype: type = np.uint8, begin: int = 0, end: int | None = None) -> np.ndarray:
        """A strided (copy-free) view of the ``dtype`` item at byte ``byte`` of values ``begin:end``."""
        end = self.length if end is None else min(end, self.length)
        return np.ndarray(
            (end - begin,),
            dtype=np.dtype(dtype).newbyteorder("<"),
            buffer=self.data,
            offset=self.start + begin * self.width + byte,
            strides=(self.width,),
        )

    def words(self, begin: int = 0, end: int | None = None) -> list[np.ndarray]:
        """The values ``begin:end`` as uint64 words that together hold every byte (the last one may overlap)."""
        if self.width < 8:
            word = np.zeros(len(self.column(0, np.uint8, begin, end)), dtype=np.uint64)
            for byte in range(self.width):
                word |= self.column(byte, np.uint8, begin, end).astype(np.uint64) << np.uint64(8 * byte)
            return [word]
        starts = list(range(0, self.width - 7, 8))
        if self.width % 8:
            starts.append(self.width - 8)
        return [self.column(byte, np.uint64, begin, end) for byte in starts]

    def hashes(self) -> np.ndarray:
        """A 64-bit hash of each value (equal values, equal hashes)."""
        out = np.empty(self.length, dtype=np.uint64)
        for begin in range(0, self.length, _BLOCK):
            words = self.words(begin, begin + _BLOCK)
            h = words[0] * _MULTIPLIER
            h ^= h >> np.uint64(29)
            for word in words[1:]:
                h = (h ^ word) * _MULTIPLIER
                h ^= h >> np.uint64(29)
            out[begin : begin + len(h)] = h
        return out

    def records(self) -> np.ndarray:
        """The values as one contiguous array of ``width``-byte records (a copy-free view)."""
        return np.ndarray((self.length,), dtype=f"V{self.width}", buffer=self.data, offset=self.start)

    def has_surrounding_whitespace(self) -> bool:
        """True when a value starts or ends with a space or a tab."""
        return any(((c == 32) | (c == 9)).any() for c in (self.column(0), self.column(self.width - 1)))


@dataclass(frozen=True)
class FixedWidthIndex:
    """A sort-based index of distinct fixed-width ids.

    Each id's hash, with its low ``row_bits`` bits replaced by the id's position, sorts the ids by hash (one
    numpy sort, no argsort); ids whose truncated hashes tie are matched by their bytes."""

    ids: FixedWidthStrings
    row_bits: int
    sorted_hashes: np.ndarray  # truncated hashes (low row_bits bits cleared), ascending
    positions: np.ndarray  # position of the id of each sorted hash
    ties: np.ndarray  # indices into sorted_hashes whose truncated hash is not unique

    @classmethod
    def build(cls, ids: pa.Array) -> FixedWidthIndex | None:
        """The index of ``ids`` (distinct values), or None when they are not all of one byte length."""
        strings = FixedWidthStrings.of(ids)
        if strings is None:
            return None
        row_bits = max(1, (strings.length - 1).bit_length())
        packed = _hashes_with_rows(strings, row_bits)
        row_mask = np.uint64((1 << row_bits) - 1)
        positions = compact_codes(packed & row_mask, strings.length)
        packed &= ~row_mask
        repeated = np.flatnonzero(packed[1:] == packed[:-1])
        ties = np.unique(np.concatenate([repeated, repeated + 1]))
        return cls(strings, row_bits, packed, positions, ties)

    def positions_of(self, values: pa.Array) -> np.ndarray | None:
        """The position in the index of each of ``values`` when they are exactly the indexed ids, each once and
        without surrounding spaces or tabs; None otherwise (the caller then takes the exact path)."""
        strings = FixedWidthStrings.of(values)
        if (
            strings is None
            or strings.length != self.ids.length
            or strings.width != self.ids.width
            or strings.has_surrounding_whitespace()
        ):
            return None
        packed = _hashes_with_rows(strings, self.row_bits)
        row_mask = np.uint64((1 << self.row_bits) - 1)
        positions = np.empty(strings.length, dtype=self.positions.dtype)
        for begin in range(0, strings.length, _BLOCK):  # in blocks: no n-sized temporary
            block = packed[begin : begin + _BLOCK]
            if not np.array_equal(block & ~row_mask, self.sorted_hashes[begin : begin + _BLOCK]):
                return None  # not the same multiset of hashes: some id is missing, repeated or unexpected
            positions[(block & row_mask).astype(np.intp)] = self.positions[begin : begin + _BLOCK]
        if len(self.ties):  # equal truncated hashes pair up arbitrarily: match those few ids by their bytes
            given, indexed = strings.records(), self.ids.records()
            key_positions = self.positions[self.ties]
            by_bytes = dict(zip(indexed[key_positions].tolist(), key_positions.tolist()))
            for row in (packed[self.ties] & row_mask).tolist():
                position = by_bytes.pop(given[row].tobytes(), None)
                if position is None:
                    return None
                positions[row] = position
        del packed
        given, indexed = strings.records(), self.ids.records()
        for begin in range(0, strings.length, _BLOCK):  # equal hashes are no proof: compare every byte
            if not np.array_equal(given[begin : begin + _BLOCK], indexed[positions[begin : begin + _BLOCK]]):
                return None
        return positions


def _hashes_with_rows(strings: FixedWidthStrings, row_bits: int) -> np.ndarray:
    """The hashes of ``strings`` with their low ``row_bits`` bits replaced by the row number, sorted."""
    packed = strings.hashes()
    packed &= ~np.uint64((1 << row_bits) - 1)
    for begin in range(0, len(packed), _BLOCK):
        packed[begin : begin + _BLOCK] |= np.arange(begin, min(begin + _BLOCK, len(packed)), dtype=np.uint64)
    packed.sort()
    return packed
