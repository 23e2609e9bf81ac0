"""What the release measured that a plan is read against: its workloads, models and configuration levels.

A *configuration level* (``c0``, ``c1``, ... in ``configuration_level``; the named settings such as ``joint`` or
``safe_margin`` are not levels) stands, within one workload, for one value of every setting the estimators read
(:data:`LEVEL_SETTINGS`: micro-batches, vLLM utilization, offload, lengths, batch, ...). The same level is measured
on several models and GPU counts, so neither is part of it. A plan that gives no level gets the level whose
settings it equals, if there is one; otherwise none, and a scope flag says that no donor can be chosen.

Everything is derived from the ``configurations`` table, and applied to all plans at once (one join).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..data.sources.resolve import SourceLike
from ..estimation.features import FEATURE_SETTINGS

#: The pattern of a level's name (a test index); other ``configuration_level`` values are named settings.
LEVEL_PATTERN = r"^c[0-9]+$"
#: The settings a level fixes: what the estimators read, but the GPU count and the device.
LEVEL_SETTINGS: tuple[str, ...] = tuple(
    s for s in FEATURE_SETTINGS if s not in ("gpu_count", "device_capacity_mib", "margin_limit_mib")
)
_KEYS = ("workload_id", *LEVEL_SETTINGS)
_ROW = "__plan_row"


@dataclass(frozen=True)
class Measured:
    """The release's workloads (by id, and their legacy ids), models and levels (one row per workload and level:
    the workload, the values of :data:`LEVEL_SETTINGS` and the level's name; settings that two levels share name
    neither)."""

    workloads: tuple[str, ...]
    legacy: dict[str, str]
    models: tuple[str, ...]
    levels: pa.Table

    @classmethod
    def from_configurations(cls, table: pa.Table) -> Measured:
        """From the decoded ``configurations`` table."""
        rows = table.select(["workload_id", "legacy_dataset_id", "model_id"]).to_pylist()
        workloads = tuple(sorted({r["workload_id"] for r in rows}))
        legacy = {r["legacy_dataset_id"]: r["workload_id"] for r in rows if r["legacy_dataset_id"] not in workloads}
        is_level = pc.match_substring_regex(table.column("configuration_level"), LEVEL_PATTERN)
        chosen = table.filter(pc.fill_null(is_level, False)).select([*_KEYS, "configuration_level"])
        grouped = chosen.group_by(list(_KEYS)).aggregate(
            [("configuration_level", "count_distinct"), ("configuration_level", "min")]
        )
        unambiguous = grouped.filter(pc.equal(grouped.column("configuration_level_count_distinct"), 1))
        levels = unambiguous.select(list(_KEYS)).append_column(
            "configuration_level", unambiguous.column("configuration_level_min")
        )
        return cls(workloads, legacy, tuple(sorted({r["model_id"] for r in rows})), levels)

    def workload_id(self, name: str) -> str:
        """A workload id, or the id a legacy dataset id stands for."""
        return self.legacy.get(name, name)

    def infer_levels(self, table: pa.Table) -> pa.Array:
        """Each plan's level: the one it gives, else the measured level whose settings it equals, else null (one
        hash join of the plans with the levels on :data:`LEVEL_SETTINGS` and the workload)."""
        given = table.column("configuration_level").combine_chunks()
        if given.null_count == 0:
            return given
        order = pa.array(np.arange(table.num_rows, dtype=np.int64))
        plans = table.select(list(_KEYS)).append_column(_ROW, order)
        joined = plans.join(self.levels, keys=list(_KEYS), join_type="left outer").sort_by(_ROW)
        inferred = joined.column("configuration_level").combine_chunks()
        return pc.if_else(pc.is_valid(given), given, inferred)

    def model_id(self, path: str) -> str:
        """A model path as a Hub id: a local folder named as a measured model (``~/models/Qwen2.5-3B-Instruct``)
        stands for that model; anything else is kept as written."""
        if path in self.models:
            return path
        name = path.rstrip("/").rsplit("/", 1)[-1].lower()
        matches = [m for m in self.models if m.rsplit("/", 1)[-1].lower() == name]
        local = path.startswith(("/", "~", ".", "$")) or path.count("/") != 1
        return matches[0] if local and len(matches) == 1 else path

    def scope_flags(self, table: pa.Table) -> list[tuple[str, ...]]:
        """Per plan, the flags of its workload and level (none, unknown, or no level with these settings)."""
        workload = table.column("workload_id").combine_chunks()
        known = pc.is_in(workload, value_set=pa.array(self.workloads, pa.string()))
        measured = ", ".join(self.workloads)
        no_workload = pc.if_else(
            pc.is_null(workload),
            pa.scalar("workload not given (name it, e.g. --workload gsm8k): no measured level, no donor"),
            pa.scalar(None, pa.string()),
        )
        unknown = pc.if_else(
            pc.and_(pc.is_valid(workload), pc.invert(pc.fill_null(known, False))),
            pc.binary_join_element_wise("workload ", workload, f" was not measured (measured: {measured})", ""),
            pa.scalar(None, pa.string()),
        )
        level = table.column("configuration_level").combine_chunks()
        no_level = pc.if_else(
            pc.and_(pc.fill_null(known, False), pc.is_null(level)),
            pc.binary_join_element_wise(
                "configuration level: none (no measured level of ", workload, " has these settings): no donor", ""
            ),
            pa.scalar(None, pa.string()),
        )
        return row_flags([no_workload, unknown, no_level])


def row_flags(columns: Sequence[pa.Array], fixed: Sequence[str] = ()) -> list[tuple[str, ...]]:
    """Per row, the non-null strings of ``columns`` (one flag each) after the ``fixed`` flags of every row; rows
    with the same flags share one tuple."""
    if not columns:
        return []
    # null_handling="skip" drops rows whose inputs are all null (pyarrow 26): replace and filter instead
    lines = pc.binary_join_element_wise(*columns, "\n", null_handling="replace", null_replacement="")
    encoded = pc.dictionary_encode(lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines)
    shared = [tuple(fixed) + tuple(t for t in text.split("\n") if t) for text in encoded.dictionary.to_pylist()]
    return [shared[i] for i in encoded.indices.to_numpy(zero_copy_only=False).tolist()]


def load_measured(source: SourceLike = None, revision: str | None = None) -> Measured:
    """The release's workloads, models and levels, from its ``configurations`` table."""
    from ..data.tables.reader import load_table

    return Measured.from_configurations(load_table("configurations", source, revision, decode=True))
