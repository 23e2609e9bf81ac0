"""Everything the answers read from one release, loaded once: the measured records, the fitted references with
their track record, the model metadata and the measured cloud.

The context is built once per release and kept in the advisor's store (:mod:`.store`) for the runs after: a local
folder's entry is used only while every file it was built from (manifests, seals and absent files included) has
the SHA-256 it had; a Hub revision's entry is the one of its commit. The package's code and the numerical stack
are part of the key, so an upgrade or an edited install builds it afresh; a corrupted or foreign entry is ignored.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG
from typing import Any

import numpy as np
import pyarrow as pa

from ...data.schema.pins import CARD_PATH, MANIFESTS
from ...data.sources.base import Source, sha256_file
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
    src = open_source(source, revision)
    if not stored:
        return build_context(src)
    identity = src.identity
    name = _entry_name(identity)
    found = _stored(name, src, identity)
    if found is not None:
        return found
    with _recording(src) as read:
        context = build_context(src)
    if read is not None:
        _store(name, src, identity, context, read)
    return context


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


def _entry_name(identity: Mapping[str, str | None]) -> str:
    from .store import code_signature, entry_name

    stack = f"python {sys.version}; numpy {np.__version__}; pyarrow {pa.__version__}"
    return entry_name(KIND, FORMAT, json.dumps(identity, sort_keys=True), code_signature(), stack)


def _stored(name: str, source: Source, identity: Mapping[str, str | None]) -> Context | None:
    """The stored context ``name`` when it was built from this release as it is now (None: absent, untrusted or
    stale)."""
    from .store import load_objects, read_entry

    entry = read_entry(name, KIND)
    if entry is None:
        return None
    header, payload = entry
    files = header.get("files")
    if header.get("format") != FORMAT or header.get("source") != dict(identity) or not isinstance(files, dict):
        return None
    root = _local_root(source, identity)
    if root is not None and not _unchanged(root, files, header.get("stats") or {}):
        return None  # a local file changed, appeared or went away since: built afresh
    try:
        context = load_objects(payload, {"source": source})
    except Exception:  # a payload that does not unpickle (a stale or damaged entry) is ignored
        return None
    return context if isinstance(context, Context) else None


def _store(name: str, source: Source, identity: Mapping[str, str | None], context: Context, read: list[str]) -> None:
    from .store import dump_objects, write_entry

    root = _local_root(source, identity)
    files = sorted({*read, CARD_PATH, *(manifest for manifest, _ in MANIFESTS)})
    header = {
        "format": FORMAT,
        "source": dict(identity),
        "files": {rel: _digest(root, rel) if root is not None else None for rel in files},
        "stats": {rel: sig for rel in files if root is not None and (sig := _signature(root / rel))},
    }
    write_entry(name, KIND, header, dump_objects(context, {"source": source}))


def _unchanged(root: Path, files: Mapping[str, object], stats: Mapping[str, object]) -> bool:
    """Whether every file has the digest it had (None: still absent). A file whose device, inode, size and
    modification and change times are those recorded is not hashed again: the kernel moves its change time on
    every write, and no tool can set it back."""
    for rel, want in files.items():
        if want is not None and stats.get(rel) is not None and _signature(root / rel) == stats[rel]:
            continue
        if _digest(root, rel) != want:
            return False
    return True


def _signature(path: Path) -> str | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}" if S_ISREG(st.st_mode) else None


def _local_root(source: Source, identity: Mapping[str, str | None]) -> Path | None:
    """The folder of a local release (None for a Hub revision: its commit pins every file)."""
    root = getattr(source, "root", None)
    return Path(root) if identity.get("commit") is None and root is not None else None


def _digest(root: Path, relpath: str) -> str | None:
    """The SHA-256 of a local release file as it is now (None: absent or a folder; ``unreadable``: never equal to a
    digest)."""
    path = root / relpath
    try:
        return sha256_file(path) if path.is_file() else None
    except OSError:
        return "unreadable"


@contextmanager
def _recording(source: Source) -> Iterator[list[str] | None]:
    """The repository paths ``source`` fetches inside the block (what the context is built from), by shadowing its
    fetch on this one object; None for a source whose fetch cannot be shadowed (then nothing is stored)."""
    fetch = source._fetch
    read: list[str] = []

    def recorded(relpath: str) -> Path:
        read.append(relpath)
        return fetch(relpath)

    own = getattr(source, "__dict__", None)
    if own is None:
        yield None
        return
    own["_fetch"] = recorded
    try:
        yield read
    finally:
        own.pop("_fetch", None)
