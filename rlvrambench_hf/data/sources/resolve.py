"""What a caller's ``source`` and ``revision`` mean: the one place the environment is read.

A source is given as a :data:`SourceLike`: a Hub repository id, a folder path, an opened :class:`~.base.Source`,
or ``None`` for ``$RLVRAMBENCH_SOURCE``, else the dataset's repository. A Hub revision is a branch, tag or commit;
``None`` means ``$RLVRAMBENCH_REVISION``, else the release commit this version of the package pins.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from ...errors import SourceError
from ..schema.pins import DEFAULT_REPO_ID, DEFAULT_REVISION, SOURCE_ENV
from .base import Source
from .local import LocalSource

#: The environment variables that choose the default source (:data:`SOURCE_ENV`) and Hub revision.
__all__ = ["REVISION_ENV", "SOURCE_ENV", "Request", "SourceLike", "open_source", "request"]
REVISION_ENV = "RLVRAMBENCH_REVISION"
#: Anything a public function accepts as a release: a repo id, a folder, an opened Source, or None (the default).
SourceLike: TypeAlias = str | os.PathLike[str] | Source | None
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class Request:
    """A source as the caller means it, environment applied: a folder (``revision`` None) or a Hub repository at
    a revision. Hashable, so that per-process caches can be keyed by it."""

    location: str
    revision: str | None
    local: bool
    configured: bool = True  # False: neither given nor set in the environment (the package's default)


def request(source: str | os.PathLike[str] | None = None, revision: str | None = None) -> Request:
    """Resolve ``source`` and ``revision`` against ``RLVRAMBENCH_SOURCE`` / ``RLVRAMBENCH_REVISION`` and the
    package's pins, without opening anything. A revision given with a local folder is refused."""
    given = os.fspath(source) if source is not None else os.environ.get(SOURCE_ENV) or DEFAULT_REPO_ID
    looks_like_path = (
        isinstance(source, os.PathLike)
        or Path(given).expanduser().exists()
        or given.startswith((".", "/", "~"))
        or os.sep in given.replace("/", "")
        or not _REPO_ID.match(given)
    )
    if looks_like_path:
        if revision is not None:
            raise SourceError(f"--revision applies to Hub sources, not to the local directory {given}")
        return Request(given, None, local=True)
    configured = source is not None or bool(os.environ.get(SOURCE_ENV))
    return Request(given, revision or os.environ.get(REVISION_ENV) or DEFAULT_REVISION, False, configured)


def open_source(source: SourceLike = None, revision: str | None = None) -> Source:
    """The :class:`~.base.Source` that ``source`` and ``revision`` name (an opened Source is returned as is)."""
    if isinstance(source, Source):
        return source
    wanted = request(source, revision)
    if wanted.local:
        return LocalSource(Path(wanted.location))
    assert wanted.revision is not None
    from .hub import HubSource  # a Hub source's machinery (its cache, its errors) only for a Hub source

    return HubSource(wanted.location, wanted.revision, configured=wanted.configured)
