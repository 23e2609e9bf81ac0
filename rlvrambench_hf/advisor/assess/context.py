"""Everything the answers read from one release, loaded once: the measured records, the fitted references with
their track record, the model metadata and the measured cloud.

The context is built once per release and kept in the advisor's store (:mod:`..store`) for the runs after: a local
folder's entry is used only while every file it was built from (manifests, seals and absent files included) has
the SHA-256 it had; a Hub revision's entry is the one of its commit. The package's code and the numerical stack
are part of the key, so an upgrade or an edited install builds it afresh; a corrupted or foreign entry is ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ...data.sources.base import Source
from ...data.sources.resolve import SourceLike, open_source
from ...estimation.api import EstimationInputs, load_inputs
from ...estimation.physical import record_of
from ...estimation.references import FittedReferences
from ...memory.band import ModelRecord
from .lookup import RecordIndex
from .predict import SettingArrays, feature_columns
from .records import build_index, tables_needed
from .trust import Cloud, cloud_of


@dataclass(frozen=True)
class Context:
    """The release's side of every answer."""

    inputs: EstimationInputs
    fitted: FittedReferences
    track_record: Mapping[str, dict[str, Any]]
    records: RecordIndex
    cloud: Cloud
    metadata: Mapping[str, Mapping[str, Any]]
    memory: ModelRecord

    @property
    def parameters(self) -> dict[str, int]:
        return {m: int(v["floating_checkpoint_elements"]) for m, v in self.metadata.items()}

    @property
    def pool_models(self) -> set[str]:
        return {r["model_id"] for r in self.fitted.training.rows}

    @property
    def sizes(self) -> tuple[int, int]:
        """The range of floating checkpoint elements of the pool's models."""
        sizes = [int(self.inputs.metadata[m]["floating_checkpoint_elements"]) for m in self.pool_models]
        return min(sizes), max(sizes)

    def with_metadata(self, extra: Mapping[str, Mapping[str, Any]]) -> Context:
        """The same context with models' metadata added (read from their Hub repositories)."""
        if not extra:
            return self
        return Context(
            self.inputs,
            self.fitted,
            self.track_record,
            self.records,
            self.cloud,
            {**self.metadata, **extra},
            self.memory,
        )

    def describe_record(self, i: int) -> dict[str, Any]:
        """The table and id of record ``i`` (a supporting measured configuration)."""
        record = self.records.records[i]
        return {
            "table": record["table"],
            "configuration_id": record["configuration_id"],
            "observed_state": record["observed_state"],
            "max_completed_peak_mib": record["max_completed_peak_mib"],
        }


#: The kind of the store's entries; bump :data:`FORMAT` when what is stored changes in a way the code does not show.
KIND = "context"
FORMAT = 1


def load_context(source: SourceLike = None, revision: str | None = None, *, stored: bool = True) -> Context:
    """The release's side of every answer: from the store when this release, code and stack built it before, else
    read from the release (and stored; ``stored=False`` reads it without the store)."""
    from ..store import load_derived

    src = open_source(source, revision)
    if not stored:
        return build_context(src)
    return load_derived(KIND, FORMAT, src, lambda opened: build_context(opened), Context)


def build_context(source: Source) -> Context:
    """Read the release: inputs of the estimator comparison, the measured records and the fitted references."""
    from ...data.tables.reader import load_table
    from .fitted import fitted_with_record

    inputs = load_inputs(source)
    tables = {name: load_table(name, inputs.source, decode=True) for name in tables_needed()}
    records = RecordIndex.of(build_index(tables))
    fitted, track = fitted_with_record(inputs)
    metadata = dict(inputs.metadata)
    cloud = measured_cloud(records, metadata, fitted)
    memory = record_of(inputs)
    return Context(inputs, fitted, track, records, cloud, metadata, memory)


def measured_cloud(records: RecordIndex, metadata: Mapping[str, Mapping[str, Any]], fitted: FittedReferences) -> Cloud:
    """The cloud of every record with computable features, standardised like the classifier's inputs."""
    settings = pa.concat_tables([t.settings for t in records.index.tables])
    features, ok = feature_columns(SettingArrays.of(settings, metadata))
    scaler = fitted.classifier
    return cloud_of(features, ok, np.asarray(scaler.scaler_mean), np.asarray(scaler.scaler_scale))
