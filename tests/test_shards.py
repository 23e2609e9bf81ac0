"""Streams that split across ranks: every streaming config has several shards (row ranges of its file), so that
``split_dataset_by_node`` gives each rank whole shards of its own; rows, order and types are those of the
non-streaming split and of what plain ``datasets`` reads from a release built by ``rlvrambench release build``."""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest
from datasets.distributed import split_dataset_by_node

from rlvrambench_hf import load_dataset
from rlvrambench_hf.data.builder import SHARDS, row_ranges
from rlvrambench_hf.data.schema.registry import card_configs
from rlvrambench_hf.release.build import build_release

AVAILABLE = [s for s in card_configs() if s.name != "configuration_feasibility"]


@pytest.fixture(scope="module")
def built(snapshot, tmp_path_factory) -> Path:
    """A release built from the snapshot: its Parquet files, read by plain ``datasets``, are the reference."""
    return build_release(tmp_path_factory.mktemp("built") / "release", "1.0.0", snapshot).folder


def test_row_ranges_cover_the_rows_once_in_order():
    for rows in (0, 1, 5, 23, 24, 25, 400, 3434):
        ranges = row_ranges(rows)
        assert [i for i, _, _ in ranges] == list(range(len(ranges)))
        assert len(ranges) == max(1, min(SHARDS, rows))
        assert ranges[0][1] == 0 and ranges[-1][2] == rows
        assert all(a[2] == b[1] for a, b in zip(ranges, ranges[1:]))
        sizes = [stop - start for _, start, stop in ranges]
        assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("spec", AVAILABLE, ids=[s.name for s in AVAILABLE])
def test_streaming_shards_are_disjoint_row_ranges_per_rank(snapshot, built, tmp_path, spec):
    prepared = load_dataset(spec.name, spec.split, source=snapshot, cache_dir=str(tmp_path))
    stream = load_dataset(spec.name, spec.split, source=snapshot, streaming=True)
    plain = datasets.load_dataset(str(built), spec.name, split=spec.split, cache_dir=str(tmp_path / "plain"))
    rows = prepared.to_list()
    assert stream.features == prepared.features == plain.features
    assert list(stream) == rows == plain.to_list()  # same rows, same order, same types
    ranges = row_ranges(len(rows))
    assert stream.num_shards == len(ranges) > 1
    for world_size in (2, 3):
        if len(ranges) % world_size:
            continue
        for rank in range(world_size):
            mine = list(split_dataset_by_node(stream, rank=rank, world_size=world_size))
            # whole shards (rank, rank + world_size, ...), not every world_size-th row of every shard
            expected = [row for shard, start, stop in ranges if shard % world_size == rank for row in rows[start:stop]]
            assert mine == expected, (spec.name, world_size, rank)
