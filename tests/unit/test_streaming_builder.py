"""The datasets builder on the mini release: prepared and streamed splits with the rows, order and types of the
typed table, row-range shards for ranks and workers, resumable streams, and batches formatted as plain streaming
formats them (never one row at a time)."""

from __future__ import annotations

import math

import datasets
import pytest
from datasets.distributed import split_dataset_by_node

from rlvrambench_hf import load_dataset, load_table
from rlvrambench_hf.data.builder import SHARDS, RLVRAMBench, builder_for, row_ranges
from rlvrambench_hf.data.schema.registry import get_spec
from rlvrambench_hf.errors import IntegrityError, UnknownConfigError

pytestmark = pytest.mark.unit

CONFIG, SPLIT = "stage_measurements", "measured"


@pytest.fixture(scope="module")
def rows(shared_mini):
    return load_table(CONFIG, shared_mini.root).to_pylist()  # labels as class indices, as datasets gives them


def stream(mini, config: str = CONFIG):
    return load_dataset(config, get_spec(config).split, source=mini.root, streaming=True)


@pytest.mark.parametrize("config", ["stage_measurements", "eligible_runs", "admission_attempts", "model_metadata"])
def test_prepared_and_streamed_splits_equal_the_typed_table(shared_mini, tmp_path, config):
    spec = get_spec(config)
    prepared = load_dataset(config, spec.split, source=shared_mini.root, cache_dir=str(tmp_path))
    typed = load_table(config, shared_mini.root).to_pylist()
    assert prepared.to_list() == typed and prepared.features == spec.features
    streamed = stream(shared_mini, config)
    assert streamed.features == prepared.features
    assert list(streamed) == typed


def test_shards_are_row_ranges_and_split_whole_across_ranks(shared_mini, rows):
    ranges = row_ranges(len(rows))
    streamed = stream(shared_mini)
    assert streamed.num_shards == len(ranges) == SHARDS < len(rows)
    for world_size in (2, 3, 4, 6):
        seen = []
        for rank in range(world_size):
            mine = list(split_dataset_by_node(streamed, rank=rank, world_size=world_size))
            assert mine == [r for shard, start, stop in ranges if shard % world_size == rank for r in rows[start:stop]]
            seen += mine
        assert sorted(map(repr, seen)) == sorted(map(repr, rows))  # disjoint and complete


def test_shuffled_and_batched_streams_keep_their_types(shared_mini, rows):
    shuffled = list(stream(shared_mini).shuffle(seed=3, buffer_size=16))
    assert shuffled != rows and sorted(map(repr, shuffled)) == sorted(map(repr, rows))
    batches = list(stream(shared_mini).iter(batch_size=40))
    assert [len(b["run_id"]) for b in batches] == [40, 40, len(rows) - 80]
    arrow = next(iter(stream(shared_mini).with_format("arrow").iter(batch_size=5)))
    assert arrow.schema.field("observed_peak_mib").type == "double" and arrow.num_rows == 5


def test_a_stream_resumes_from_its_state_row_by_row(shared_mini, rows):
    first = stream(shared_mini)
    iterator = iter(first)
    taken = [next(iterator) for _ in range(37)]
    again = stream(shared_mini)
    again.load_state_dict(first.state_dict())
    assert taken + list(again) == rows


def test_the_stream_formats_whole_batches_not_one_row_at_a_time(shared_mini, rows, monkeypatch):
    from datasets.formatting import PythonFormatter

    calls = []
    original = PythonFormatter.format_batch

    def counting(self, pa_table):
        calls.append(len(pa_table))
        return original(self, pa_table)

    monkeypatch.setattr(PythonFormatter, "format_batch", counting)
    assert list(stream(shared_mini)) == rows
    per_shard = max(stop - start for _, start, stop in row_ranges(len(rows)))
    assert len(calls) <= SHARDS * math.ceil(per_shard / 10) < len(rows)  # ten rows at a time, as plain CSV streaming
    assert sum(calls) == len(rows)


def test_shards_of_a_stream_stay_typed(shared_mini):
    typed = stream(shared_mini, "recorded_attempts")
    shard = split_dataset_by_node(typed, rank=1, world_size=2)
    row = next(iter(shard))
    assert isinstance(row["eligible"], bool) and isinstance(row["recorded_outcome"], int)
    assert shard.features == get_spec("recorded_attempts").features


@pytest.mark.parametrize(
    ("rows_", "shards"), [(0, 1), (1, 1), (5, 5), (23, 23), (24, 24), (25, 24), (102, 24), (3434, 24)]
)
def test_row_ranges_cover_the_rows_once_in_order(rows_, shards):
    ranges = row_ranges(rows_)
    assert len(ranges) == shards and [i for i, _, _ in ranges] == list(range(shards))
    assert ranges[0][1] == 0 and ranges[-1][2] == rows_
    assert all(a[2] == b[1] for a, b in zip(ranges, ranges[1:]))
    sizes = [stop - start for _, start, stop in ranges]
    assert max(sizes) - min(sizes) <= 1


def test_the_builder_is_keyed_by_content_and_refuses_a_changed_file(mini, tmp_path):
    builder = builder_for("transfer_queries", mini.root, cache_dir=str(tmp_path))
    assert isinstance(builder, RLVRAMBench) and builder.config.data_sha256
    assert builder.info.features == get_spec("transfer_queries").features
    builder.download_and_prepare()
    path = mini.path("transfer_queries")
    path.write_text(path.read_text().replace("query-5", "query-9"))
    with pytest.raises(IntegrityError, match="changed since this builder was made"):
        builder.as_streaming_dataset(split="evaluation")


def test_a_split_the_config_does_not_have(shared_mini):
    with pytest.raises(
        UnknownConfigError, match="config transfer_queries has no split 'train'; its split is 'evaluation'"
    ):
        load_dataset("transfer_queries", "train", source=shared_mini.root)


def test_without_a_split_the_result_is_a_dict_of_its_one_split(shared_mini, tmp_path):
    result = load_dataset("transfer_queries", source=shared_mini.root, cache_dir=str(tmp_path))
    assert isinstance(result, datasets.DatasetDict) and list(result) == ["evaluation"]
    assert result["evaluation"].num_rows == 5
