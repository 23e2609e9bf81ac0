"""The hidden side of the transfer tasks: a scoring key of the selected queries.

A :class:`ScoringKey` holds, as aligned numpy/pyarrow arrays, each selected query's target label (from the
``outcomes`` table), its task, track, target and source, and the source's cost. It does not depend on the
predictions, so it is built once per source and track (:func:`scoring_key`) and reused.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..arrow import arrow_strings, compact_codes, numpy_ints, one_chunk
from ..errors import SchemaError, UnknownConfigError, quote, summary
from ..scoring.idmatch import FixedWidthIndex
from ..scoring.labels import encode_labels, label_array

#: Version of the transfer protocol the score files and task inputs follow.
PROTOCOL_VERSION = "1.1"
#: The four tracks, in the documented order.
TRACKS: tuple[str, ...] = ("model_transfer", "workload_transfer", "gpu_count_transfer", "horizon_transfer")
#: The name that selects every track.
ALL_TRACKS = "all"
PREDICTION_COLUMNS = ("query_id", "predicted_state")


def check_track(track: str | None) -> str:
    """``track`` normalised: None and ``"all"`` select every track; an unknown name is a one-line error."""
    if track is None or track == ALL_TRACKS:
        return ALL_TRACKS
    if track not in TRACKS:
        raise UnknownConfigError(f"unknown track {quote(track)}; tracks: {', '.join(TRACKS)} (or {ALL_TRACKS})")
    return track


def _encode(values: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Dictionary codes (numpy, the smallest integer type that holds them) and the dictionary of a string
    column."""
    encoded = one_chunk(pc.dictionary_encode(values))
    return compact_codes(numpy_ints(encoded.indices), len(encoded.dictionary)), encoded.dictionary


@dataclass(frozen=True, eq=False)
class ScoringKey:
    """The hidden labels of a set of queries, as aligned arrays (one entry per query, in query-table order)."""

    query_ids: pa.Array
    track: str  # the selected track, or "all"
    task_ids: pa.Array  # dictionary of task ids
    task_of: np.ndarray  # task code of each query
    task_track: list[str]  # track name of each task
    target_of: np.ndarray  # target configuration code of each query
    source_of: np.ndarray  # source configuration code of each query
    source_eligible: np.ndarray  # eligible processes of each source code
    source_attempts: np.ndarray  # recorded attempts of each source code
    observed: np.ndarray  # label code (int8) of each query's target

    def __len__(self) -> int:
        return len(self.query_ids)

    @cached_property
    def task_order(self) -> list[int]:
        """Task codes sorted by task id."""
        return sorted(range(len(self.task_ids)), key=self.task_ids.to_pylist().__getitem__)

    @cached_property
    def cell_base(self) -> np.ndarray:
        """``task * 9 + observed``: adding ``predicted * 3`` gives each query's cell of the per-task confusion
        matrices."""
        return compact_codes(self.task_of.astype(np.int64) * 9 + self.observed, len(self.task_ids) * 9)

    @cached_property
    def tracks(self) -> list[str]:
        """The tracks present, in :data:`TRACKS` order."""
        present = set(self.task_track)
        return [t for t in TRACKS if t in present] + sorted(present - set(TRACKS))

    @cached_property
    def track_of_task(self) -> np.ndarray:
        index = {t: i for i, t in enumerate(self.tracks)}
        return np.array([index[t] for t in self.task_track], dtype=np.int64)

    @cached_property
    def id_index(self) -> FixedWidthIndex | None:
        """The sort-based index of the query ids for :func:`align_predictions` (None when the ids differ in
        byte length; alignment then uses arrow's ``index_in``)."""
        return FixedWidthIndex.build(self.query_ids)

    @cached_property
    def scope_counts(self) -> dict[str, dict[str, np.ndarray]]:
        """Per scope level ("task", "track", "overall"): queries, distinct targets and deduplicated source costs.

        These do not depend on the predictions, so they are computed once per key."""
        n_tasks, n_tracks = len(self.task_ids), len(self.tracks)
        # tasks nest in tracks, tracks in the whole: each level deduplicates the pairs of the level below
        parent: dict[str, np.ndarray | None] = {
            "task": None,
            "track": self.track_of_task,
            "overall": np.zeros(n_tracks, dtype=np.int64),
        }
        sizes = {"task": n_tasks, "track": n_tracks, "overall": 1}
        queries = np.bincount(self.task_of, minlength=n_tasks)
        targets = _distinct_pairs(self.task_of, self.target_of)
        sources = _distinct_pairs(self.task_of, self.source_of)
        out = {}
        for level, n_scopes in sizes.items():
            up = parent[level]
            if up is not None:
                queries = np.bincount(up, weights=queries, minlength=n_scopes).astype(np.int64)
                targets = _distinct_pairs(up[targets[0]], targets[1])
                sources = _distinct_pairs(up[sources[0]], sources[1])
            out[level] = {
                "queries": queries,
                "distinct_target_configurations": np.bincount(targets[0], minlength=n_scopes),
                "distinct_source_configurations": np.bincount(sources[0], minlength=n_scopes),
                "eligible_source_processes": _sum_by(sources[0], self.source_eligible[sources[1]], n_scopes),
                "recorded_source_attempts": _sum_by(sources[0], self.source_attempts[sources[1]], n_scopes),
            }
        return out


def _distinct_pairs(scope: np.ndarray, entity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (scope, entity) pairs, as two aligned arrays (sort based: numpy's hash-based unique is
    several times slower on millions of rows)."""
    n_entities = int(entity.max()) + 1 if len(entity) else 1
    pairs = np.sort(scope.astype(np.int64) * n_entities + entity)
    if len(pairs):
        pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))]
    return pairs // n_entities, pairs % n_entities


def _sum_by(scope: np.ndarray, values: np.ndarray, n_scopes: int) -> np.ndarray:
    return np.bincount(scope, weights=values, minlength=n_scopes).round().astype(np.int64)


def _strictly_increasing(values: pa.Array) -> bool:
    """True when ``values`` is sorted without repeats (then it is unique without hashing)."""
    return len(values) < 2 or pc.all(pc.less(values.slice(0, len(values) - 1), values.slice(1))).as_py()


def scoring_key(queries: pa.Table, outcomes: pa.Table, track: str | None = None) -> ScoringKey:
    """The scoring key of the selected queries: their target's repeated label (from ``outcomes``, decoded) and
    the cost of their source. Targets must have one of the three labels."""
    track = check_track(track)
    queries = select_track(queries, track)
    query_ids = one_chunk(queries.column("query_id"))
    if not _strictly_increasing(query_ids) and pc.count_distinct(query_ids).as_py() != len(query_ids):
        raise SchemaError("transfer_queries: query_id is not unique")
    task_of, task_ids = _encode(queries.column("task_id"))
    track_of, track_names = _encode(queries.column("track"))
    task_track: list[str | None] = [None] * len(task_ids)
    tasks, tracks = _distinct_pairs(task_of, track_of)
    for t, k in zip(tasks.tolist(), tracks.tolist()):
        if task_track[t] is not None:
            raise SchemaError(f"transfer_queries: task {task_ids[t].as_py()} spans more than one track")
        task_track[t] = track_names[k].as_py()
    target_of, target_ids = _encode(queries.column("target_configuration_id"))
    source_of, source_ids = _encode(queries.column("source_configuration_id"))
    target_state = lookup(target_ids, outcomes, "observed_state", "target configurations")
    unlabelled = pc.invert(pc.is_in(target_state, value_set=label_array()))
    if pc.any(unlabelled).as_py():
        bad = pc.filter(target_ids, unlabelled).slice(0, 3).to_pylist()
        raise SchemaError(f"target configurations without a three-state label (e.g. {summary(bad)})")
    observed_per_target = encode_labels(target_state, "target labels")
    return ScoringKey(
        query_ids=query_ids,
        track=track,
        task_ids=task_ids,
        task_of=task_of,
        task_track=cast(list[str], task_track),  # every task got its track above
        target_of=target_of,
        source_of=source_of,
        source_eligible=numpy_ints(lookup(source_ids, outcomes, "eligible_processes", "source configurations")),
        source_attempts=numpy_ints(lookup(source_ids, outcomes, "recorded_attempts", "source configurations")),
        observed=observed_per_target[target_of],
    )


def select_track(queries: pa.Table, track: str) -> pa.Table:
    """The queries of ``track`` (all of them for ``"all"``)."""
    if track == ALL_TRACKS:
        return queries
    return queries.filter(pc.equal(queries.column("track"), arrow_strings([track])[0]))


def lookup(keys: pa.Array, table: pa.Table, column: str, what: str) -> pa.Array:
    """``table[column]`` at the configuration of each key; every key must be present."""
    position = pc.index_in(keys, value_set=table.column("configuration_id"))
    if position.null_count:
        missing = pc.filter(keys, pc.is_null(position)).slice(0, 3).to_pylist()
        raise SchemaError(f"{position.null_count} {what} have no row in outcomes (e.g. {summary(missing)})")
    return pc.take(table.column(column), position).combine_chunks()
