"""What a process computed from a release's content, kept for the rest of the process.

A command or session that asks the same release the same question twice (``estimate compare`` scoring several
estimators, a notebook calling :func:`~rlvrambench_hf.estimation.api.run_retrospective` again) computes the answer
once. A release's content is identified by its Hub commit, or for a local folder by every file's device, inode, size
and modification and change times (a file written since moves its change time, and no tool sets that back); a
source identified by neither is never remembered. At most :data:`KEPT` answers are kept, the oldest dropped first.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import TypeVar, cast

from .base import Source

T = TypeVar("T")
KEPT = 16
_KEPT: dict[tuple[object, ...], object] = {}


def remembered(source: Source, what: tuple[object, ...], compute: Callable[[], T]) -> T:
    """A copy of ``compute()``, the answer to ``what`` about ``source``, computed once per release content."""
    key = content_key(source)
    if key is None:
        return compute()
    key = (key, *what)
    if key not in _KEPT:
        _KEPT[key] = compute()
        while len(_KEPT) > KEPT:
            del _KEPT[next(iter(_KEPT))]
    return cast(T, copy.deepcopy(_KEPT[key]))


def forget() -> None:
    """Drop every remembered answer."""
    _KEPT.clear()


def content_key(source: Source) -> tuple[object, ...] | None:
    """What identifies ``source``'s content (None: nothing does)."""
    identity = tuple(sorted(source.identity.items()))
    if source.identity.get("commit") is not None:
        return identity
    root = getattr(source, "root", None)
    if root is None:
        return None
    files = []
    for folder, _, names in os.walk(root):
        for name in names:
            try:
                st = os.stat(os.path.join(folder, name))
            except OSError:
                return None
            files.append((folder, name, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return (identity, tuple(sorted(files)))
