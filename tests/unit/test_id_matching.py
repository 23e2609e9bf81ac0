"""Fixed-width id matching by sorted hashes: exact positions for a permutation, None (the exact path) for anything
else."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from rlvrambench_hf.scoring.idmatch import FixedWidthIndex, FixedWidthStrings

pytestmark = pytest.mark.unit

IDS = [f"query-{i:016x}" for i in range(0, 4000, 7)]


def test_a_fixed_width_view_reads_values_in_place():
    strings = FixedWidthStrings.of(pa.array(["abc", "def", "ghi"]).slice(1))
    assert strings is not None and (strings.width, strings.length) == (3, 2)
    assert [bytes(r) for r in strings.records()] == [b"def", b"ghi"]
    assert strings.column(0).tolist() == [ord("d"), ord("g")]


@pytest.mark.parametrize(
    "values",
    [pa.array(["ab", "abc"]), pa.array(["ab", None]), pa.array([], pa.string()), pa.array(["", ""]), pa.array([1, 2])],
    ids=["widths", "null", "empty", "zero-width", "not-strings"],
)
def test_no_fixed_width_view_of_other_arrays(values):
    assert FixedWidthStrings.of(values) is None


@pytest.mark.parametrize("width", [3, 8, 13, 22])
def test_equal_values_have_equal_hashes_whatever_the_width(width):
    values = [f"{i:0{width}d}" for i in (1, 2, 1, 3)]
    hashes = FixedWidthStrings.of(pa.array(values)).hashes()
    assert hashes[0] == hashes[2] and len(set(hashes.tolist())) == 3


def test_positions_of_a_permutation():
    index = FixedWidthIndex.build(pa.array(IDS))
    order = np.random.default_rng(3).permutation(len(IDS))
    shuffled = pa.array([IDS[i] for i in order])
    assert index.positions_of(shuffled).tolist() == order.tolist()
    assert index.positions_of(pa.array(IDS)).tolist() == list(range(len(IDS)))


@pytest.mark.parametrize(
    "change",
    [
        lambda ids: ids[:-1] + [ids[0]],  # one repeated, one missing
        lambda ids: ids[:-1] + ["query-ffffffffffffffff"],  # one unexpected
        lambda ids: ids[:-1],  # one fewer
        lambda ids: [" " + ids[0][1:]] + ids[1:],  # a leading space (the exact path strips it)
        lambda ids: [ids[0] + "x"] + ids[1:],  # another width
    ],
    ids=["repeated", "unexpected", "fewer", "space", "width"],
)
def test_anything_but_the_indexed_ids_goes_to_the_exact_path(change):
    index = FixedWidthIndex.build(pa.array(IDS))
    assert index.positions_of(pa.array(change(list(IDS)))) is None


def test_ties_of_truncated_hashes_are_matched_by_their_bytes(monkeypatch):
    def weak(self: FixedWidthStrings) -> np.ndarray:  # a hash of the last byte only: ten values, many ties
        return self.column(self.width - 1).astype(np.uint64) << np.uint64(56)

    monkeypatch.setattr(FixedWidthStrings, "hashes", weak)
    ids = [f"{i:04d}" for i in range(300)]
    index = FixedWidthIndex.build(pa.array(ids))
    assert len(index.ties) == len(ids)
    order = np.random.default_rng(5).permutation(len(ids))
    assert index.positions_of(pa.array([ids[i] for i in order])).tolist() == order.tolist()
    assert index.positions_of(pa.array(ids[:-1] + ["0000"])) is None


def test_no_index_of_ids_of_different_widths():
    assert FixedWidthIndex.build(pa.array(["a", "bb"])) is None
