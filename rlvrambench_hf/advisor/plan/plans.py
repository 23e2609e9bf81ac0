"""Planned runs in the dataset's vocabulary: the one shape every reader of plans produces and the advisor reads.

A :class:`Plans` holds one row per planned run, as columns named and typed as the registry types the settings of
``benchmark/configurations.csv`` (``model_id``, ``workload_id``, ``gpu_count``, ``rollout_tp_size``,
``actor_micro_batch``, ``vllm_gpu_memory_utilization``, ``max_response_length``, ...). A setting the plan does not
give is null. Beside the table: where each plan came from, how the user wrote each setting (so that an error names
``actor_rollout_ref.rollout.n`` or ``column rollout_n, row 3`` rather than an internal name), and the scope flags
the config itself raises (a LoRA rank or estimator the measurements do not cover, another execution stack, an
unknown workload, ...).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast, overload

import pyarrow as pa

#: The registry entry whose columns a plan's table has.
SETTINGS_CONFIG = "configurations"


@dataclass(frozen=True)
class Plans:
    """Planned runs: ``table`` (one row per plan, settings columns in the registry's types, null where not given),
    ``origins`` (one label per row: ``plans.csv row 3``, ``run.sh``), ``written`` (setting name → how the user
    wrote it; ``{row}`` in it is replaced by the row's number), ``flags`` (per row, the scope flags the config
    raises) and ``sources`` (per row, where each setting's value comes from: ``run.sh line 12``, ``VERL's default
    (verl/trainer/config/_generated_ppo_trainer.yaml)``, ``TRL's default``, ``given setting``; empty for plans in
    the dataset's vocabulary, whose origin says it) and ``notes`` (per row, what reading its launch file says beyond
    each setting's source: the tool version read for, the script's arguments, the keys the answer does not read).
    Columns beyond the registry's are knobs (:mod:`.knobs`)."""

    table: pa.Table
    origins: Sequence[str]
    written: Mapping[str, str] = field(default_factory=dict)
    flags: Sequence[Sequence[str]] = ()
    sources: Sequence[Mapping[str, str]] = ()
    notes: Sequence[Sequence[str]] = ()

    def __post_init__(self) -> None:
        if len(self.origins) != self.table.num_rows:
            raise ValueError(f"{len(self.origins)} origins for {self.table.num_rows} plans")
        if self.flags and len(self.flags) != self.table.num_rows:
            raise ValueError(f"{len(self.flags)} flag lists for {self.table.num_rows} plans")
        if self.sources and len(self.sources) != self.table.num_rows:
            raise ValueError(f"{len(self.sources)} source maps for {self.table.num_rows} plans")
        if self.notes and len(self.notes) != self.table.num_rows:
            raise ValueError(f"{len(self.notes)} note lists for {self.table.num_rows} plans")

    def __len__(self) -> int:
        return cast("int", self.table.num_rows)

    def as_written(self, setting: str, row: int) -> str:
        """How the user wrote ``setting`` of plan ``row`` (0-based), for one-line errors."""
        text = self.written.get(setting, setting)
        return f"{text.replace('{row}', str(row + 1))} ({self.origins[row]})"

    def source(self, setting: str, row: int) -> str:
        """Where plan ``row``'s value of ``setting`` comes from (its origin when not recorded)."""
        found = self.sources[row].get(setting) if self.sources else None
        return found or self.origins[row]

    def row_flags(self, row: int) -> list[str]:
        return list(self.flags[row]) if self.flags else []

    def row_notes(self, row: int) -> list[str]:
        """What reading plan ``row``'s launch file says beyond each setting's source (its ``read:`` lines)."""
        return list(self.notes[row]) if self.notes else []

    def settings(self, row: int) -> dict[str, object]:
        """The settings plan ``row`` gives (null ones left out), as Python values."""
        return {k: v for k, v in self.table.slice(row, 1).to_pylist()[0].items() if v is not None}


class RowLabels(Sequence[str]):
    """``{prefix} row {n}`` for rows 1..``count``, made when asked (a CSV of 100,000 plans keeps no 100,000
    strings)."""

    def __init__(self, prefix: str, count: int) -> None:
        self.prefix, self.size = prefix, count

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.size))]
        if not -self.size <= index < self.size:
            raise IndexError(index)
        return f"{self.prefix} row {index % self.size + 1}"

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(self.size))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RowLabels) and (self.prefix, self.size) == (other.prefix, other.size)

    def __hash__(self) -> int:
        return hash((self.prefix, self.size))
