"""The Hugging Face cache folders that the package and its libraries write, and the one line that says when one of
them cannot be written: the folder, and the variables that move it.

huggingface_hub keeps downloads in ``HF_HUB_CACHE``; datasets prepares tables in ``HF_DATASETS_CACHE``; evaluate
copies a metric module into ``HF_MODULES_CACHE`` and keeps what ``compute`` receives in ``HF_METRICS_CACHE``. All
of them default to folders of ``HF_HOME``. Each folder is read from the library that uses it (so a value a program
set at run time counts), from the library's own public configuration module.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

from ...errors import SourceError

#: What each cache holds, and the variables that move it (the specific one first).
CACHES: dict[str, tuple[str, tuple[str, ...]]] = {
    "hub": ("the Hugging Face Hub cache", ("HF_HUB_CACHE", "HF_HOME")),
    "datasets": ("the datasets cache", ("HF_DATASETS_CACHE", "HF_HOME")),
    "modules": ("the evaluate modules cache", ("HF_MODULES_CACHE", "HF_HOME")),
    "metrics": ("the evaluate metrics cache", ("HF_METRICS_CACHE", "HF_HOME")),
}
_PERMISSION = (errno.EACCES, errno.EPERM, errno.EROFS)


def cache_folder(kind: str) -> Path:
    """The folder of the cache ``kind`` (a key of :data:`CACHES`) as its library sees it now."""
    if kind == "hub":
        from huggingface_hub import constants

        return Path(constants.HF_HUB_CACHE).expanduser()
    if kind == "datasets":
        import datasets.config

        return Path(datasets.config.HF_DATASETS_CACHE).expanduser()
    import evaluate.config

    return Path(evaluate.config.HF_MODULES_CACHE if kind == "modules" else evaluate.config.HF_METRICS_CACHE)


def is_permission_error(exc: BaseException) -> bool:
    """True for an OS error that says a file or folder may not be written (permission, read-only file system)."""
    return isinstance(exc, OSError) and exc.errno in _PERMISSION


def unwritable(kind: str, folder: str | os.PathLike[str], reason: str = "") -> SourceError:
    """The one-line error for the cache ``kind`` whose ``folder`` cannot be written (``reason``: what failed)."""
    what, variables = CACHES[kind]
    moved = f"set {variables[0]} (or {variables[1]})" if len(variables) > 1 else f"set {variables[0]}"
    return SourceError(
        f"{what} {os.fspath(folder)} cannot be written{f' ({reason})' if reason else ''}: {moved} to a writable folder"
    )


def cache_error(exc: BaseException, kinds: tuple[str, ...] = tuple(CACHES)) -> SourceError | None:
    """The error naming the cache that ``exc`` (a permission error on a file inside one of ``kinds``, or on a
    folder above it that had to be created) failed to write, or None when ``exc`` is something else."""
    if not is_permission_error(exc):
        return None
    assert isinstance(exc, OSError)
    target = exc.filename if isinstance(exc.filename, str) else None
    for kind in kinds:
        folder = _loaded_folder(kind)
        if folder is not None and (target is None or _inside(Path(target), folder) or _inside(folder, Path(target))):
            return unwritable(kind, folder, exc.strerror or "")
    return None


def check_writable(kind: str, folder: str | os.PathLike[str] | None = None) -> None:
    """Raise :func:`unwritable` unless the cache ``kind`` (at ``folder``, default its library's) can be written:
    it, or the folder that would hold it, allows creating files."""
    path = Path(folder) if folder is not None else cache_folder(kind)
    existing = path.expanduser().absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        reason = "not a folder" if not existing.is_dir() else f"{existing} is not writable"
        raise unwritable(kind, path, reason)


def _loaded_folder(kind: str) -> Path | None:
    """The folder of ``kind`` if its library is imported (a library that is not loaded wrote nothing)."""
    library = {"hub": "huggingface_hub", "datasets": "datasets"}.get(kind, "evaluate")
    if library not in sys.modules:
        return None
    try:
        return cache_folder(kind).absolute()
    except Exception:  # a library half-imported: nothing to name
        return None


def _inside(path: Path, folder: Path) -> bool:
    path = path.absolute()
    return path == folder or folder in path.parents
