"""rlvrambench-hf: typed loading, metrics, admission replay and releases for the RLVRAMBench dataset.

>>> from rlvrambench_hf import load_dataset
>>> runs = load_dataset("eligible_runs", split="measured")            # doctest: +SKIP
"""

from __future__ import annotations

from .data.registry import DEFAULT_REPO_ID, DEFAULT_REVISION, OUTCOME_LABELS, REGISTRY, get_spec
from .data.sources import open_source
from .data.tables import load_table
from .errors import (
    InputError,
    IntegrityError,
    MissingFileError,
    RLVRAMBenchError,
    SchemaError,
    SourceError,
    UnknownConfigError,
)

__version__ = "0.1.0"
__all__ = [
    "DEFAULT_REPO_ID",
    "DEFAULT_REVISION",
    "OUTCOME_LABELS",
    "REGISTRY",
    "IntegrityError",
    "InputError",
    "MissingFileError",
    "RLVRAMBenchError",
    "SchemaError",
    "SourceError",
    "UnknownConfigError",
    "get_spec",
    "load_dataset",
    "load_table",
    "open_source",
]


def load_dataset(*args, **kwargs):
    """Typed ``datasets`` objects of a config; see :func:`rlvrambench_hf.loading.load_dataset`."""
    from .data.loading import load_dataset as _load

    return _load(*args, **kwargs)
