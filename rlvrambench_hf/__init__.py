"""rlvrambench-hf: typed loading, metrics, admission replay, estimator comparison and releases for RLVRAMBench.

``load_dataset("eligible_runs", split="measured")`` gives a typed ``datasets.Dataset`` (the README's examples run
in the tests). The metric travels in the wheel; from any folder: ``evaluate.load(rlvrambench_hf.metric_path())``
(config "transfer"), or with the config "admission" or "estimation" as second argument.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import (
    InputError,
    IntegrityError,
    MissingFileError,
    NumericalError,
    OutputError,
    RLVRAMBenchError,
    SchemaError,
    SourceError,
    UnknownConfigError,
)
from .lazy import lazy_names

if TYPE_CHECKING:  # the names below are imported on first use (``rlvrambench --version`` imports none of them)
    from .adapters.trainer import trainer_metrics
    from .data.loading import load_dataset
    from .data.schema.pins import DEFAULT_REPO_ID, DEFAULT_REVISION, OUTCOME_LABELS
    from .data.schema.registry import REGISTRY, get_spec
    from .data.sources.base import Source
    from .data.sources.resolve import SourceLike, open_source
    from .data.tables.reader import load_table
    from .scoring.flat import FlatScores, flat_scores
    from .scoring.intervals import IntervalOptions

#: Where each public name that is imported on first use lives.
_LAZY = {
    "load_dataset": ".data.loading",
    "DEFAULT_REPO_ID": ".data.schema.pins",
    "DEFAULT_REVISION": ".data.schema.pins",
    "OUTCOME_LABELS": ".data.schema.pins",
    "REGISTRY": ".data.schema.registry",
    "get_spec": ".data.schema.registry",
    "Source": ".data.sources.base",
    "SourceLike": ".data.sources.resolve",
    "open_source": ".data.sources.resolve",
    "load_table": ".data.tables.reader",
    "FlatScores": ".scoring.flat",
    "flat_scores": ".scoring.flat",
    "IntervalOptions": ".scoring.intervals",
    "trainer_metrics": ".adapters.trainer",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


__version__ = "0.2.0"
__all__ = [
    "DEFAULT_REPO_ID",
    "DEFAULT_REVISION",
    "FlatScores",
    "IntervalOptions",
    "OUTCOME_LABELS",
    "REGISTRY",
    "IntegrityError",
    "InputError",
    "MissingFileError",
    "NumericalError",
    "OutputError",
    "RLVRAMBenchError",
    "SchemaError",
    "Source",
    "SourceError",
    "SourceLike",
    "UnknownConfigError",
    "flat_scores",
    "get_spec",
    "load_dataset",
    "example_path",
    "load_table",
    "loading_script_path",
    "metric_path",
    "open_source",
    "trainer_metrics",
]


def metric_path() -> str:
    """The folder of the installed ``evaluate`` module, for ``evaluate.load(metric_path())`` (config "transfer",
    the default) or ``evaluate.load(metric_path(), "admission" | "estimation")`` — from any folder, without the
    repository. With evaluate imported, its two caches are checked first: ``evaluate.load`` copies the module into
    ``HF_MODULES_CACHE`` and ``compute`` keeps its inputs in ``HF_METRICS_CACHE``; one that cannot be written is
    a :class:`SourceError` naming it and the variables that move it."""
    import sys
    from importlib import resources

    if "evaluate" in sys.modules:
        from .data.sources.caches import check_writable

        for kind in ("modules", "metrics"):
            check_writable(kind)
    return str(resources.files("rlvrambench_hf.metrics").joinpath("rlvrambench"))


def loading_script_path() -> str:
    """The installed builder module as a file (``loading_script/rlvrambench.py`` of the repository), for tools that
    import a builder by path; the class is ``rlvrambench_hf.builder.RLVRAMBench``."""
    from importlib import resources

    return str(resources.files("rlvrambench_hf.loading_script").joinpath("rlvrambench.py"))


def example_path(name: str) -> str:
    """The installed launch script of a shipped example (``rlvrambench advise --verl example:NAME``): a VERL script
    under ``rlvrambench_hf/examples/verl/``, or a TRL one under ``examples/trl/`` with the files it names beside it,
    to run the advisor on or to copy. An unknown name is an :class:`InputError` that lists the examples."""
    from importlib import resources

    folder = resources.files("rlvrambench_hf").joinpath("examples")
    found = {
        entry.name.rsplit(".", 1)[0]: str(entry)
        for tool in folder.iterdir()
        if tool.is_dir()
        for entry in tool.iterdir()
        if entry.is_file() and entry.name.endswith(".sh")
    }
    if name not in found:
        from .errors import quote

        raise InputError(f"no example {quote(name)} (examples: {', '.join(sorted(found))})")
    return found[name]
