"""What a table of the release is: its columns, keys and relations to other tables (the registry's classes).

:mod:`.registry` holds the entries; this module holds the shapes they take. A :class:`ConfigSpec` says where a
table lives, what it means, how every column is typed, which columns key its rows, which columns point into
another table (:class:`ForeignKey`), which columns repeat another table's values (:class:`Copy`) and, for tables of
measured records, where their settings, labels, peaks and runs are (:class:`MeasuredRecords`).
Verification and diffs read the relations instead of spelling out joins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import pyarrow as pa

from ...errors import UnknownConfigError, quote
from .columns import LABEL_DESCRIPTIONS, VOCABULARY
from .kinds import KINDS, LABEL, Kind
from .pins import OUTCOME_LABELS

if TYPE_CHECKING:  # pragma: no cover
    import datasets

#: File layouts the typed reader knows: a CSV file; a JSON object mapping each key to one record; a JSON list of
#: records (the file itself, or the member :attr:`ConfigSpec.member` of the file's object); a JSON object that is
#: one record (its members that other entries read as lists of records are not columns of it).
CSV, JSON_MAPPING, JSON_RECORDS, JSON_OBJECT = "csv", "json_mapping", "json_records", "json_object"
JSON_LAYOUTS = (JSON_MAPPING, JSON_RECORDS, JSON_OBJECT)
#: How a column names a member of a nested JSON object: ``outer.inner`` (pyarrow's flattened field names).
NESTED = "."


@dataclass(frozen=True)
class Column:
    """One column: its name, kind (a name of :data:`~.kinds.KINDS`), meaning and, for labels, the class names."""

    name: str
    kind: str
    description: str
    labels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"column {self.name}: unknown kind {quote(self.kind)}")
        if (KINDS[self.kind] is LABEL) != bool(self.labels):
            raise ValueError(f"column {self.name}: labels are given exactly for label columns")

    @property
    def type(self) -> Kind:
        """What the column's kind is in Arrow, ``datasets``, Croissant, text and previews."""
        return KINDS[self.kind]

    @property
    def arrow_type(self) -> pa.DataType:
        return self.type.arrow_type


def columns(names: str, **labels: tuple[str, ...]) -> tuple[Column, ...]:
    """Columns in file order; ``labels`` gives the extra class names of each label column."""
    out = []
    for name in names.split():
        if name in LABEL_DESCRIPTIONS:
            extra = labels.get(name, ())
            out.append(Column(name, "label", LABEL_DESCRIPTIONS[name], OUTCOME_LABELS + tuple(extra)))
        else:
            kind, description = VOCABULARY[name]
            out.append(Column(name, kind, description))
    unused = set(labels) - {c.name for c in out}
    if unused:
        raise ValueError(f"label overrides for absent columns {sorted(unused)}")
    return tuple(out)


@dataclass(frozen=True)
class ForeignKey:
    """``columns`` of this table name a row of ``table`` by its ``references`` columns (its key by default).

    Rows with a null in ``columns`` point nowhere and are skipped, unless ``where`` names a bool column: then the
    rows where it is true must point somewhere and the others must be null. ``exactly_one`` asks that each row
    match exactly one row of ``table`` (for references that are not its key)."""

    columns: tuple[str, ...]
    table: str
    references: tuple[str, ...] = ()
    where: str | None = None
    exactly_one: bool = False


@dataclass(frozen=True)
class Copy:
    """Columns of this table that repeat ``table``'s values for the row ``on`` finds there: ``columns`` maps each
    column here to its name there, and ``on`` the columns here to ``table``'s key columns."""

    table: str
    columns: Mapping[str, str]
    on: tuple[str, ...] = ("configuration_id",)


def same_names(names: str) -> dict[str, str]:
    """A :attr:`Copy.columns` mapping of columns that have the same name in both tables."""
    return {name: name for name in names.split()}


@dataclass(frozen=True)
class MeasuredRuns:
    """The processes behind each measured record: ``table`` rows whose ``on`` column names the record's key, the
    ``seed``, ``state`` and ``peak`` columns of each, and optionally its last ``stage`` and a ``where`` filter
    (column, value) that keeps the eligible ones."""

    table: str
    on: str
    seed: str
    state: str
    peak: str
    stage: str | None = None
    where: tuple[str, object] | None = None


@dataclass(frozen=True)
class MeasuredRecords:
    """Marks a table whose rows are measured records of configurations, and says where their parts are.

    ``label`` is the repeated label column and ``peak`` the largest completed peak. The settings (named as the
    columns of ``configurations``) are the columns of the same names, or of ``settings_from``'s row with the same
    key; ``renamed`` maps a setting to the column here that holds it under another name, and ``through`` a setting
    to a column here whose values are a ``configurations`` column's (``{"model_id": ("model_family",
    "model_family")}``: the model id of the configurations with this model family). ``seeds`` is a column listing
    the eligible seeds, ``evidence`` the columns of partial evidence shown beside an unresolved label, ``runs`` the
    processes behind each record."""

    label: str
    peak: str
    seeds: str | None = None  # a column listing the eligible seeds (when no ``runs`` table gives them)
    settings_from: str | None = None
    renamed: Mapping[str, str] = field(default_factory=dict)
    through: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    evidence: tuple[str, ...] = ()
    runs: MeasuredRuns | None = None


@dataclass(frozen=True)
class ConfigSpec:
    """One table of the release: where it lives, what it means and how every column is typed."""

    name: str
    split: str
    path: str
    description: str
    keys: tuple[str, ...]
    columns: tuple[Column, ...] = field(repr=False)
    card: bool = True  # a config named by the dataset card; False for supporting tables
    layout: str = CSV  # JSON_MAPPING: {key: record}, the key repeated as the record's first key column
    references: tuple[ForeignKey, ...] = ()
    copies: tuple[Copy, ...] = ()
    member: str | None = None  # JSON_RECORDS: the member of the file's object holding the records (None: the file)
    measured: MeasuredRecords | None = None  # the rows are measured records of configurations

    def __post_init__(self) -> None:
        if self.layout not in (CSV, *JSON_LAYOUTS):
            raise ValueError(f"config {self.name}: unknown layout {quote(self.layout)}")
        if self.member is not None and self.layout != JSON_RECORDS:
            raise ValueError(f"config {self.name}: only a list of records ({JSON_RECORDS}) sits in a member")

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise UnknownConfigError(f"config {self.name} has no column {quote(name)}", config=self.name, column=name)

    @property
    def label_columns(self) -> list[Column]:
        return [c for c in self.columns if c.type is LABEL]

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        """Arrow storage schema (labels as int64 class indices, as in ``datasets``)."""
        return pa.schema([pa.field(c.name, c.arrow_type) for c in self.columns])

    @property
    def features(self) -> datasets.Features:
        """The ``datasets.Features`` of this table (imports ``datasets``)."""
        return _features(self)


def _features(spec: ConfigSpec) -> datasets.Features:
    import datasets

    return datasets.Features({c.name: c.type.feature(c.labels) for c in spec.columns})
