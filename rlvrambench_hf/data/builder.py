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

A stream yields rows at plain ``datasets``' own speed. ``datasets`` wraps the examples iterable of a builder whose
features are known in a ``FormattedExamplesIterable``, because the builder's ``ArrowExamplesIterable`` does not say
that its tables already have them; that wrapper then formats one row per Arrow table (its ``__iter__`` reads the
one-row batches of the ``RebatchedArrowExamplesIterable`` that ``IterableDataset.__iter__`` asks for), several
times slower than plain CSV streaming, whose features are unknown and so never wrapped. :class:`TypedTables`
declares the features its tables carry, so the stream takes plain streaming's path: rows formatted ten at a time,
resumable from ``state_dict()`` row by row, shards kept by ``split_dataset_by_node`` and DataLoader workers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import datasets
import numpy as np
import pyarrow as pa
from datasets.builder import Key
from datasets.iterable_dataset import ArrowExamplesIterable

from ..errors import IntegrityError
from .schema.pins import HOMEPAGE, LICENSE
from .schema.registry import DEFAULT_CONFIG, REGISTRY, get_spec
from .sources.base import sha256_file
from .sources.resolve import SourceLike, open_source
from .tables.reader import config_file, read_typed_file

#: Rows per Arrow batch when generating.
BATCH_ROWS = 256
#: Shards per split (fewer for a table with fewer rows): divisible by 2, 3, 4, 6, 8 and 12, so that
#: ``split_dataset_by_node`` hands each of that many ranks whole shards.
SHARDS = 24
_VERSION = datasets.Version("1.0.0")


@dataclass
class RLVRAMBenchConfig(datasets.BuilderConfig):  # type: ignore[misc]  # datasets ships no type information
    """A registry entry plus the identity of what it was prepared from: the source, its commit (None for a folder)
    and the SHA-256 of the config's verified file, so that the prepared cache is keyed by content."""

    source: str | None = None
    revision: str | None = None
    data_sha256: str | None = None


class RLVRAMBench(datasets.ArrowBasedBuilder):  # type: ignore[misc]  # datasets ships no type information
    """Typed RLVRAMBench tables, one config per registry entry.

    ``source`` and ``revision`` name the release (:data:`~.sources.resolve.SourceLike`; an opened Source is used as
    is). It is resolved, and the config's file fetched and verified, once, when the builder is made."""

    BUILDER_CONFIG_CLASS = RLVRAMBenchConfig
    BUILDER_CONFIGS = [
        RLVRAMBenchConfig(name=spec.name, version=_VERSION, description=spec.description) for spec in REGISTRY.values()
    ]
    DEFAULT_CONFIG_NAME = DEFAULT_CONFIG

    def __init__(
        self, *, config_name: str | None = None, source: SourceLike = None, revision: str | None = None, **kwargs: Any
    ) -> None:
        spec = get_spec(config_name or DEFAULT_CONFIG)
        self.release = open_source(source, revision)
        self.data_file = config_file(self.release, spec)
        identity = self.release.identity
        super().__init__(
            config_name=spec.name,
            source=identity["source"],
            revision=identity["commit"],
            data_sha256=sha256_file(self.data_file),
            **kwargs,
        )

    def _info(self) -> datasets.DatasetInfo:
        spec = get_spec(self.config.name)
        return datasets.DatasetInfo(
            description=spec.description, features=spec.features, homepage=HOMEPAGE, license=LICENSE
        )

    def _split_generators(self, dl_manager: datasets.DownloadManager) -> list[datasets.SplitGenerator]:
        spec = get_spec(self.config.name)
        path = dl_manager.download(str(self.data_file))  # already verified and local: recorded, not fetched
        if sha256_file(path) != self.config.data_sha256:
            raise IntegrityError(f"{spec.path} changed since this builder was made; make it again")
        shards = row_ranges(_typed_table(path, spec.name).num_rows)
        return [datasets.SplitGenerator(name=spec.split, gen_kwargs={"path": path, "shards": shards})]

    def _generate_shards(self, path: str, shards: list[tuple[int, int, int]]) -> Iterator[dict[str, object]]:
        for _, start, stop in shards:
            yield {"path": path, "rows": (start, stop)}

    def _get_examples_iterable_for_split(self, split_generator: datasets.SplitGenerator) -> TypedTables:
        """The split's tables for streaming, declared as typed with the config's features (see the module)."""
        return TypedTables(self._generate_tables, split_generator.gen_kwargs, self.info.features)

    def _generate_tables(self, path: str, shards: list[tuple[int, int, int]]) -> Iterator[tuple[Key, pa.Table]]:
        table = _typed_table(path, self.config.name)
        for shard, start, stop in shards:
            for index, begin in enumerate(range(start, max(stop, start + 1), BATCH_ROWS)):
                yield Key(shard, index), table.slice(begin, min(BATCH_ROWS, stop - begin))


class TypedTables(ArrowExamplesIterable):  # type: ignore[misc]  # datasets ships no type information
    """The builder's Arrow tables, declared as already having ``features`` (the typed reader gives them the
    registry's Arrow schema, which is that of its features), so that ``datasets`` formats them as it formats plain
    streaming, without a per-row wrapper. Shuffled, sharded or resharded, it stays typed."""

    def __init__(
        self,
        generate_tables: Callable[..., Iterator[tuple[Key, pa.Table]]],
        gen_kwargs: dict[str, Any],
        features: datasets.Features,
    ) -> None:
        super().__init__(generate_tables, gen_kwargs)
        self.typed_features = features

    @property
    def features(self) -> datasets.Features:
        return self.typed_features

    @property
    def is_typed(self) -> bool:
        return True

    def shuffle_data_sources(self, generator: np.random.Generator) -> TypedTables:
        return self.like(super().shuffle_data_sources(generator))

    def shard_data_sources(self, num_shards: int, index: int, contiguous: bool = True) -> TypedTables:
        return self.like(super().shard_data_sources(num_shards, index, contiguous=contiguous))

    def reshard_data_sources(self) -> TypedTables:
        return self.like(super().reshard_data_sources())

    def like(self, other: ArrowExamplesIterable) -> TypedTables:
        """``other`` (this iterable's shards, reordered or selected) with this iterable's features."""
        return TypedTables(other.generate_tables_fn, other.kwargs, self.typed_features)


def _typed_table(path: str, config: str) -> pa.Table:
    """The typed table of a file, read once per process however many shards are generated from it (while the
    file's modification time and size stay the same)."""
    stat = os.stat(path)
    return _read_once(path, config, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=2)
def _read_once(path: str, config: str, _mtime_ns: int, _size: int) -> pa.Table:
    return read_typed_file(path, get_spec(config))  # the registry's Arrow schema: that of its features


def row_ranges(num_rows: int, shards: int = SHARDS) -> list[tuple[int, int, int]]:
    """``(shard, start, stop)`` of ``shards`` consecutive row ranges of near-equal size covering ``num_rows`` rows
    (one shard per row when there are fewer rows; one empty shard for an empty table)."""
    count = max(1, min(shards, num_rows))
    bounds = [num_rows * i // count for i in range(count + 1)]
    return [(i, bounds[i], bounds[i + 1]) for i in range(count)]


def builder_for(
    config: str, source: SourceLike = None, revision: str | None = None, cache_dir: str | None = None
) -> RLVRAMBench:
    """A builder for ``config`` whose cache is keyed by the verified content of its file."""
    return RLVRAMBench(config_name=config, source=source, revision=revision, cache_dir=cache_dir)
