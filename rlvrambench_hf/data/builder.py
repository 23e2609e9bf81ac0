"""The ``datasets`` builder: one BuilderConfig per registry entry, reading through the typed reader.

Used the standard way (``download_and_prepare()``, ``as_dataset()``, ``as_streaming_dataset()``) with the
Hugging Face datasets cache::

    builder = RLVRAMBench(config_name="eligible_runs", source="kobzaond/RLVRAMBench", revision="main")
    builder.download_and_prepare()
    runs = builder.as_dataset(split="measured")

The config carries the SHA-256 of the data file it was prepared from (:func:`builder_for` fills it in), so
the prepared cache is keyed by content: a pinned revision always gets its own rows, offline too.

Each split is cut into several shards, consecutive row ranges of its file (:func:`row_ranges`), so that
``datasets.distributed.split_dataset_by_node`` and DataLoader workers give each rank whole shards of its own instead
of every rank reading every row; the rows, their order and their types are those of the non-streaming split.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

import datasets
import pyarrow as pa
from datasets.builder import Key

from .registry import DEFAULT_CONFIG, REGISTRY, get_spec
from .sources import Source, open_source, sha256_file
from .tables import config_file, read_typed_file

#: Rows per Arrow batch when generating.
BATCH_ROWS = 256
#: Shards per split (fewer for a table with fewer rows): divisible by 2, 3, 4, 6, 8 and 12, so that
#: ``split_dataset_by_node`` hands each of that many ranks whole shards.
SHARDS = 24
_VERSION = datasets.Version("1.0.0")


@dataclass
class RLVRAMBenchConfig(datasets.BuilderConfig):
    """A registry entry plus where to read it from: ``source`` (repo id or folder) and ``revision``."""

    source: str | None = None
    revision: str | None = None
    data_sha256: str | None = None


class RLVRAMBench(datasets.ArrowBasedBuilder):
    """Typed RLVRAMBench tables, one config per registry entry."""

    BUILDER_CONFIG_CLASS = RLVRAMBenchConfig
    BUILDER_CONFIGS = [
        RLVRAMBenchConfig(name=spec.name, version=_VERSION, description=spec.description) for spec in REGISTRY.values()
    ]
    DEFAULT_CONFIG_NAME = DEFAULT_CONFIG

    def _info(self) -> datasets.DatasetInfo:
        spec = get_spec(self.config.name)
        return datasets.DatasetInfo(
            description=spec.description,
            features=spec.features,
            homepage="https://huggingface.co/datasets/kobzaond/RLVRAMBench",
            license="mit",
        )

    def _split_generators(self, dl_manager) -> list[datasets.SplitGenerator]:
        spec = get_spec(self.config.name)
        source = open_source(self.config.source, self.config.revision)
        path = config_file(source, spec)
        if self.config.data_sha256 and sha256_file(path) != self.config.data_sha256:
            from ..errors import IntegrityError

            raise IntegrityError(f"{spec.path} changed since this builder was configured; create it again")
        shards = row_ranges(_typed_table(str(path), spec.name).num_rows)
        return [datasets.SplitGenerator(name=spec.split, gen_kwargs={"path": str(path), "shards": shards})]

    def _generate_shards(self, path: str, shards: list[tuple[int, int, int]]):
        for _, start, stop in shards:
            yield {"path": path, "rows": (start, stop)}

    def _generate_tables(self, path: str, shards: list[tuple[int, int, int]]):
        table = _typed_table(path, self.config.name)
        for shard, start, stop in shards:
            for index, begin in enumerate(range(start, max(stop, start + 1), BATCH_ROWS)):
                yield Key(shard, index), table.slice(begin, min(BATCH_ROWS, stop - begin))


def _typed_table(path: str, config: str) -> pa.Table:
    """The typed table of a file, read once per process however many shards are generated from it (while the
    file's modification time and size stay the same)."""
    stat = os.stat(path)
    return _read_once(path, config, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=2)
def _read_once(path: str, config: str, _mtime_ns: int, _size: int) -> pa.Table:
    return read_typed_file(path, get_spec(config))


def row_ranges(num_rows: int, shards: int = SHARDS) -> list[tuple[int, int, int]]:
    """``(shard, start, stop)`` of ``shards`` consecutive row ranges of near-equal size covering ``num_rows`` rows
    (one shard per row when there are fewer rows; one empty shard for an empty table)."""
    count = max(1, min(shards, num_rows))
    bounds = [num_rows * i // count for i in range(count + 1)]
    return [(i, bounds[i], bounds[i + 1]) for i in range(count)]


def builder_for(
    config: str,
    source: str | os.PathLike | Source | None = None,
    revision: str | None = None,
    cache_dir: str | None = None,
) -> RLVRAMBench:
    """A builder for ``config`` whose cache is keyed by the verified content of its file."""
    spec = get_spec(config)
    src = open_source(source, revision)
    path = config_file(src, spec)
    identity = src.identity
    return RLVRAMBench(
        config_name=spec.name,
        cache_dir=cache_dir,
        source=identity["source"],
        revision=identity["commit"],
        data_sha256=sha256_file(path),
    )
