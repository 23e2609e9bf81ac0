"""Writing output files atomically: a temporary file beside the target, renamed over it only when complete."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ..errors import InputError


@contextmanager
def atomic_output(path: str | os.PathLike, mode: str = "w", **open_kwargs) -> Iterator[IO]:
    """Open a temporary file next to ``path``; it replaces ``path`` only if the block ends without error."""
    target = Path(path)
    if target.is_dir():
        raise InputError(f"output {target} is a directory")
    if not target.parent.is_dir():
        raise InputError(f"output folder {target.parent} does not exist")
    if "b" not in mode:
        open_kwargs.setdefault("encoding", "utf-8")
        open_kwargs.setdefault("newline", "")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, mode, **open_kwargs) as handle:
            yield handle
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_output(path, "wb" if isinstance(data, bytes) else "w") as handle:
        handle.write(data)
