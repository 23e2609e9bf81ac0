"""``load_dataset``: the typed tables as ``datasets`` objects, from the Hub or a local copy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..data.sources.resolve import SourceLike
from ..errors import SourceError, UnknownConfigError, quote
from .schema.registry import get_spec

if TYPE_CHECKING:  # pragma: no cover
    import datasets


def load_dataset(
    config: str,
    split: str | None = None,
    *,
    source: SourceLike = None,
    revision: str | None = None,
    streaming: bool = False,
    cache_dir: str | None = None,
) -> datasets.Dataset | datasets.DatasetDict | datasets.IterableDataset | datasets.IterableDatasetDict:
    """Load ``config`` with the registry's exact features.

    ``source`` is a Hub repo id or a directory (``None``: ``$RLVRAMBENCH_SOURCE``, else the default repo);
    ``revision`` a branch, tag or commit (``None``: ``$RLVRAMBENCH_REVISION``, else the pinned release).
    Without ``split`` the result is a dict of the config's single split. The file is verified against the
    release manifest before anything is prepared, and the prepared cache is keyed by its content. A datasets
    cache (``cache_dir``, else ``HF_DATASETS_CACHE``) that cannot be written is one :class:`SourceError` naming it.
    """
    from .builder import builder_for

    spec = get_spec(config)
    if split is not None and split != spec.split:
        raise UnknownConfigError(f"config {config} has no split {quote(split)}; its split is {spec.split!r}")
    try:
        builder = builder_for(config, source, revision, cache_dir=cache_dir)
        if streaming:
            return builder.as_streaming_dataset(split=split)
        builder.download_and_prepare()
        return builder.as_dataset(split=split)
    except OSError as exc:  # datasets locks and writes its cache even to read a prepared table
        raise _unwritable(exc, cache_dir) or exc from None


def _unwritable(exc: OSError, cache_dir: str | None) -> SourceError | None:
    from .sources.caches import cache_error, is_permission_error

    if cache_dir is not None and is_permission_error(exc):
        return SourceError(f"cache_dir {cache_dir} cannot be written ({exc.strerror}): pass a writable folder")
    return cache_error(exc, ("datasets", "hub"))
