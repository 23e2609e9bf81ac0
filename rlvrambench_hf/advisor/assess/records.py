"""Every measured record of the release, indexed by the settings that define a configuration (pure over tables).

The tables are the registry entries marked :class:`~rlvrambench_hf.data.schema.spec.MeasuredRecords` (the 212
configurations, the larger-model and expanded-host follow-ups, the admission candidates, and any table marked
later). A configuration is defined by :data:`DEFINING_SETTINGS`, decided from the data: the 212 configurations
hold 134 distinct tuples of these settings, and every tuple measured more than once (boundary, batch-reservation,
instrumentation, state-release, sampling-calibration, horizon and temporal studies repeat each other) carries one
repeated label. The settings left out are the ones those repeats varied without changing the label: the training
horizon, the instrumentation (sampling interval, allocator tracing), the logging and checkpoint controls, the
sample limits, and the study, condition and level names. The algorithm and the adaptation are the same in every
record (GRPO with LoRA, :data:`~rlvrambench_hf.data.schema.pins.RELEASE_STACK`), so a plan of another algorithm or
of full fine-tuning matches no record: the release never measured one.

Settings are coded per column against the values the release measured (``pyarrow.compute.index_in``), and each
table's records are keyed by a mixed-radix integer of their codes, so that a lookup is a ``searchsorted`` over
plans. A table that does not record a setting (the admission candidates do not record the log-prob micro-batches,
for instance) is matched on the settings it records, and its records say which ones they do not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...data.schema.pins import OUTCOME_LABELS, RELEASE_STACK
from ...data.schema.registry import REGISTRY, get_spec
from ...data.schema.spec import ConfigSpec, MeasuredRecords
from ...errors import SchemaError
from ..plan.arrays import codes_of, strings, take, valid_mask

#: The settings that define a configuration (columns of ``configurations``); see the module docstring.
DEFINING_SETTINGS: tuple[str, ...] = (
    "model_id",
    "workload_id",
    "gpu_count",
    "rollout_tp_size",
    "actor_micro_batch",
    "rollout_logprob_micro_batch",
    "ref_logprob_micro_batch",
    "vllm_gpu_memory_utilization",
    "parameter_offload",
    "optimizer_offload",
    "free_cache_engine",
    "max_prompt_length",
    "max_response_length",
    "max_model_len",
    "max_num_seqs",
    "rollout_n",
    "train_batch_size",
    "device_capacity_mib",
    "algorithm",
    "adaptation",
)
SETTINGS_TABLE = "configurations"
#: Code of a value the release never measured: it matches nothing.
UNKNOWN = -1
#: Code of a setting a plan does not give (null): it is not compared.
NOT_GIVEN = -2


@dataclass(frozen=True)
class MeasuredTable:
    """The records of one marked table: their settings (one row each, null where not recorded), the defining
    settings the table records, each record's answer (a JSON-ready mapping) and its resolved label index (-1 for
    ``unresolved`` / ``not_repeated``)."""

    name: str
    settings: pa.Table
    recorded: tuple[str, ...]
    records: tuple[dict[str, Any], ...]
    resolved: np.ndarray


@dataclass(frozen=True)
class Codes:
    """Settings coded against the measured values: ``codes[setting]`` (int64; :data:`UNKNOWN` for a value never
    measured, :data:`NOT_GIVEN` for a null)."""

    codes: Mapping[str, np.ndarray]
    rows: int

    def key(self, settings: Sequence[str], radix: Mapping[str, int], skip: str | None = None) -> np.ndarray:
        """One int64 per row naming its values of ``settings`` (``skip`` left out); -1 where a value is unknown or
        not given."""
        key = np.zeros(self.rows, dtype=np.int64)
        unknown = np.zeros(self.rows, dtype=bool)
        for name in settings:
            if name == skip:
                continue
            code = self.codes[name]
            unknown |= code < 0
            key = key * radix[name] + np.maximum(code, 0)
        key[unknown] = -1
        return key


@dataclass(frozen=True)
class MeasuredIndex:
    """All measured records, with the measured values of each defining setting (sorted; the vocabulary)."""

    tables: tuple[MeasuredTable, ...]
    values: Mapping[str, pa.Array]

    @property
    def radix(self) -> dict[str, int]:
        return {name: len(values) + 1 for name, values in self.values.items()}

    def codes(self, settings: pa.Table) -> Codes:
        """``settings`` (columns of ``configurations``; a missing column is null) coded against the vocabulary."""
        out = {}
        for name, vocabulary in self.values.items():
            column = settings.column(name) if name in settings.column_names else pa.nulls(settings.num_rows)
            column = column.cast(vocabulary.type) if column.type != vocabulary.type else column
            found = codes_of(pc.index_in(column, value_set=vocabulary), UNKNOWN)
            found[~valid_mask(column)] = NOT_GIVEN
            out[name] = found
        return Codes(out, settings.num_rows)

    def record_count(self) -> int:
        return sum(len(t.records) for t in self.tables)


def build_index(tables: Mapping[str, pa.Table]) -> MeasuredIndex:
    """The index of every marked registry table, from decoded tables by config name (each marked table, the
    tables its marker names, and ``configurations``)."""
    measured = []
    for spec in REGISTRY.values():
        if spec.measured is not None:
            measured.append(_measured_table(spec, spec.measured, tables))
    values = {}
    for name in DEFINING_SETTINGS:
        arrow_type = get_spec(SETTINGS_TABLE).column(name).arrow_type
        parts = [t.settings.column(name).cast(arrow_type) for t in measured]
        joined = pa.chunked_array([c for part in parts for c in part.chunks], type=arrow_type)
        unique = pc.unique(joined).drop_null()
        values[name] = unique.take(pc.array_sort_indices(unique))
    return MeasuredIndex(tuple(measured), values)


def tables_needed() -> list[str]:
    """The config names :func:`build_index` reads."""
    names = [SETTINGS_TABLE]
    for spec in REGISTRY.values():
        marker = spec.measured
        if marker is None:
            continue
        names.append(spec.name)
        names += [n for n in (marker.settings_from, marker.runs.table if marker.runs else None) if n]
    return list(dict.fromkeys(names))


def _measured_table(spec: ConfigSpec, marker: MeasuredRecords, tables: Mapping[str, pa.Table]) -> MeasuredTable:
    here = tables[spec.name]
    keys = here.column(spec.keys[0]).to_pylist()
    base = here
    if marker.settings_from:
        there = tables[marker.settings_from]
        position = {k: i for i, k in enumerate(there.column(get_spec(marker.settings_from).keys[0]).to_pylist())}
        missing = [k for k in keys if k not in position]
        if missing:
            raise SchemaError(f"{spec.name}: {len(missing)} record(s) without settings in {marker.settings_from}")
        base = take(there, np.array([position[k] for k in keys], dtype=np.int64))
    columns, recorded = {}, []
    for name in DEFINING_SETTINGS:
        arrow_type = get_spec(SETTINGS_TABLE).column(name).arrow_type
        column = _setting_column(name, spec, marker, here, base, tables)
        if column is None:
            columns[name] = pa.nulls(here.num_rows, arrow_type)
            continue
        recorded.append(name)
        columns[name] = column.cast(arrow_type)
    settings = pa.Table.from_arrays(list(columns.values()), names=list(columns))
    unrecorded = [n for n in DEFINING_SETTINGS if n not in recorded]
    runs = _runs_by_record(marker, tables)
    records, resolved = [], []
    for row, key in enumerate(keys):
        label = here.column(marker.label)[row].as_py()
        records.append(_record(spec, marker, here, row, label, unrecorded, runs.get(key, [])))
        resolved.append(OUTCOME_LABELS.index(label) if label in OUTCOME_LABELS else -1)
    return MeasuredTable(spec.name, settings, tuple(recorded), tuple(records), np.array(resolved, dtype=np.int64))


def _setting_column(
    name: str, spec: ConfigSpec, marker: MeasuredRecords, here: pa.Table, base: pa.Table, tables: Mapping[str, Any]
) -> pa.ChunkedArray | None:
    if name in marker.renamed:
        return here.column(marker.renamed[name])
    if name in marker.through:
        column, settings_column = marker.through[name]
        configurations = tables[SETTINGS_TABLE]
        pairs = set(zip(configurations.column(settings_column).to_pylist(), configurations.column(name).to_pylist()))
        mapping = dict(pairs)
        if len(mapping) != len(pairs):
            raise SchemaError(f"{spec.name}: {column} does not name one {name} in {SETTINGS_TABLE}.{settings_column}")
        return pa.chunked_array([strings([mapping.get(v) for v in here.column(column).to_pylist()])])
    if name in base.column_names:
        return base.column(name)
    if name in RELEASE_STACK:  # not recorded, but the whole release ran it
        return pa.chunked_array([strings([RELEASE_STACK[name]] * here.num_rows)])  # from buffers: no pandas
    return None


def _runs_by_record(marker: MeasuredRecords, tables: Mapping[str, pa.Table]) -> dict[str, list[dict[str, Any]]]:
    runs = marker.runs
    if runs is None:
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for row in tables[runs.table].to_pylist():
        if runs.where is not None and row[runs.where[0]] != runs.where[1]:
            continue
        run = {"seed": row[runs.seed], "state": row[runs.state], "peak_mib": row[runs.peak]}
        if runs.stage:
            run["stage"] = row[runs.stage]
        out.setdefault(row[runs.on], []).append(run)
    for items in out.values():
        items.sort(key=lambda r: (r["seed"] is None, r["seed"]))
    return out


def _record(
    spec: ConfigSpec,
    marker: MeasuredRecords,
    here: pa.Table,
    row: int,
    label: str,
    unrecorded: Sequence[str],
    runs: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    """The answer one record gives: table, id, label, seeds and peaks, partial evidence, the processes."""
    if runs:
        seeds = sorted({r["seed"] for r in runs if r["seed"] is not None})
        peaks = [r["peak_mib"] for r in runs if r["peak_mib"] is not None]
    else:
        listed = here.column(marker.seeds)[row].as_py() if marker.seeds else None
        seeds = sorted(int(s) for s in listed or [])
        peaks = []
    peak = here.column(marker.peak)[row].as_py()
    record = {
        "table": spec.name,
        "configuration_id": here.column(spec.keys[0])[row].as_py(),
        "observed_state": label,
        "eligible_seeds": seeds,
        "completed_peaks_mib": peaks if runs else ([peak] if peak is not None else []),
        "max_completed_peak_mib": peak,
        "evidence": {name: here.column(name)[row].as_py() for name in marker.evidence},
    }
    if runs:
        record["runs"] = [dict(r) for r in runs]
    if unrecorded:
        record["unrecorded_settings"] = list(unrecorded)
    return record
