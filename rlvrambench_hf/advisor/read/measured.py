"""What the release measured that a plan is read against: its workloads, models and configuration levels.

A *configuration level* (``c0``, ``c1``, ... in ``configuration_level``; the named settings such as ``joint`` or
``safe_margin`` are not levels) stands, within one workload, for one value of every setting the estimators read
(:data:`LEVEL_SETTINGS`: micro-batches, vLLM utilization, offload, lengths, batch, ...). The same level is measured
on several models and GPU counts, so neither is part of it. A plan that gives no level gets the level whose
settings it equals, if there is one; otherwise none, and a scope flag says that no donor can be chosen.

Everything is derived from the ``configurations`` table, and applied to all plans at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...arrow import arrow_ints, numpy_ints, string_array
from ...data.sources.resolve import SourceLike
from ...estimation.features import FEATURE_SETTINGS
from .checks import known_true, scalar

if TYPE_CHECKING:
    from ...data.sources.base import Source

#: The pattern of a level's name (a test index); other ``configuration_level`` values are named settings.
LEVEL_PATTERN = r"^c[0-9]+$"
#: The settings a level fixes: what the estimators read, but the GPU count and the device.
LEVEL_SETTINGS: tuple[str, ...] = tuple(
    s for s in FEATURE_SETTINGS if s not in ("gpu_count", "device_capacity_mib", "margin_limit_mib")
)
_KEYS = ("workload_id", *LEVEL_SETTINGS)


@dataclass(frozen=True)
class Measured:
    """The release's workloads (by id, and their legacy ids), models and levels (one row per workload and level:
    the workload, the values of :data:`LEVEL_SETTINGS` and the level's name; settings that two levels share name
    neither), and each measured model's family as the release names it (``model_family`` of configurations.csv:
    ``qwen25_1p5b`` for Qwen2.5-1.5B-Instruct, no fixed list)."""

    workloads: tuple[str, ...]
    legacy: dict[str, str]
    models: tuple[str, ...]
    levels: pa.Table
    families: dict[str, str] = field(default_factory=dict)  # model id -> the release's model_family

    @classmethod
    def from_configurations(cls, table: pa.Table) -> Measured:
        """From the decoded ``configurations`` table."""
        rows = table.select(["workload_id", "legacy_dataset_id", "model_id", "model_family"]).to_pylist()
        workloads = tuple(sorted({r["workload_id"] for r in rows}))
        legacy = {r["legacy_dataset_id"]: r["workload_id"] for r in rows if r["legacy_dataset_id"] not in workloads}
        is_level = pc.match_substring_regex(table.column("configuration_level"), LEVEL_PATTERN)
        chosen = table.filter(known_true(is_level)).select([*_KEYS, "configuration_level"])
        first: dict[tuple[Any, ...], int] = {}
        names: dict[tuple[Any, ...], set[str]] = {}
        for i, row in enumerate(chosen.to_pylist()):
            key = tuple(row[k] for k in _KEYS)
            first.setdefault(key, i)
            names.setdefault(key, set()).add(row["configuration_level"])
        kept = sorted(first[key] for key, found in names.items() if len(found) == 1)
        levels = chosen.take(arrow_ints(np.array(kept, dtype=np.int64)))
        families = {r["model_id"]: r["model_family"] for r in rows if r["model_family"]}
        return cls(workloads, legacy, tuple(sorted({r["model_id"] for r in rows})), levels, families)

    def workload_id(self, name: str) -> str:
        """A workload id, or the id a legacy dataset id stands for."""
        return self.legacy.get(name, name)

    def infer_levels(self, table: pa.Table) -> pa.Array:
        """Each plan's level: the one it gives, else the measured level whose settings it equals, else null.

        Each key column becomes its index among the levels' values of that column; the indices make one integer
        code per row, looked up among the levels' codes (no per-plan Python, no join)."""
        given = table.column("configuration_level").combine_chunks()
        if given.null_count == 0:
            return given
        plan_codes, level_codes = _codes(table, self.levels), _codes(self.levels, self.levels)
        found = pc.index_in(arrow_ints(plan_codes), value_set=arrow_ints(level_codes))
        inferred = pc.take(self.levels.column("configuration_level"), found).combine_chunks()
        return pc.if_else(pc.is_valid(given), given, inferred)

    def model_id(self, path: str) -> str:
        """A model path as the model it stands for (:func:`~.models.model_of_path`): a local folder named as a
        measured model (``~/models/Qwen2.5-3B-Instruct``) stands for that model; anything else as written, or as
        the Hub id its last two parts make when the folder is not on this machine."""
        from .models import model_of_path

        return model_of_path(path, self.models)[0]

    def scope_flags(self, table: pa.Table) -> list[tuple[str, ...]]:
        """Per plan, the flags of its workload and level (none, unknown, or no level with these settings)."""
        workload = table.column("workload_id").combine_chunks()
        known = known_true(pc.is_in(workload, value_set=string_array(self.workloads)))
        measured, none, empty = ", ".join(self.workloads), scalar(None, pa.string()), scalar("")
        no_workload = pc.if_else(
            pc.is_null(workload),
            scalar("workload not given (name it, e.g. --workload gsm8k): no measured level, no donor"),
            none,
        )
        unknown = pc.if_else(
            pc.and_(pc.is_valid(workload), pc.invert(known)),
            pc.binary_join_element_wise(
                scalar("workload "), workload, scalar(f" was not measured (measured: {measured})"), empty
            ),
            none,
        )
        level = table.column("configuration_level").combine_chunks()
        no_level = pc.if_else(
            pc.and_(known, pc.is_null(level)),
            pc.binary_join_element_wise(
                scalar("configuration level: none (no measured level of "),
                workload,
                scalar(" has these settings): no donor"),
                empty,
            ),
            none,
        )
        return row_flags([no_workload, unknown, no_level])


def _codes(table: pa.Table, levels: pa.Table) -> np.ndarray:
    """One integer per row of ``table`` naming its values of the key columns among those of ``levels`` (-1: a
    value no level has, or a null)."""
    codes = np.zeros(table.num_rows, dtype=np.int64)
    absent = np.zeros(table.num_rows, dtype=bool)
    for name in _KEYS:
        values = pc.unique(levels.column(name).combine_chunks().drop_null())
        index = pc.index_in(table.column(name), value_set=values).combine_chunks().cast(pa.int64())
        absent |= ~numpy_ints(pc.is_valid(index))
        codes = codes * (len(values) + 1) + numpy_ints(pc.fill_null(index, scalar(0)))
    codes[absent] = -1
    return codes


def row_flags(columns: Sequence[pa.Array], fixed: Sequence[str] = ()) -> list[tuple[str, ...]]:
    """Per row, the non-null strings of ``columns`` (one flag each) after the ``fixed`` flags of every row; rows
    with the same flags share one tuple."""
    if not columns:
        return []
    # null_handling="skip" drops rows whose inputs are all null (pyarrow 26): replace and filter instead
    lines = pc.binary_join_element_wise(*columns, scalar("\n"), null_handling="replace", null_replacement="")
    encoded = pc.dictionary_encode(lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines)
    shared = [tuple(fixed) + tuple(t for t in text.split("\n") if t) for text in encoded.dictionary.to_pylist()]
    return [shared[i] for i in numpy_ints(encoded.indices).tolist()]


#: The kind of the advisor's store entries of :class:`Measured`; bump :data:`FORMAT` when what is stored changes in a
#: way the code does not show.
KIND = "measured"
FORMAT = 1


def load_measured(source: SourceLike = None, revision: str | None = None) -> Measured:
    """The release's workloads, models and levels, from its ``configurations`` table: kept in the advisor's store
    (:func:`~..store.load_derived`) while the release's files are those it was read from."""
    from ...data.sources.resolve import open_source
    from ..store import load_derived

    return load_derived(KIND, FORMAT, open_source(source, revision), _measured, Measured, on_success=True)


def _measured(source: Source) -> Measured:
    from ...data.tables.reader import load_table

    return Measured.from_configurations(load_table("configurations", source, decode=True))
