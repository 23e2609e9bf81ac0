"""A release as a local folder laid out like the Hub repository."""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path

from ...errors import IntegrityError, MissingFileError, SourceError
from ..schema.pins import CARD_PATH
from .base import Digest, Source


@dataclass
class LocalSource(Source):
    """A folder laid out like the Hub repository."""

    root: Path

    def __post_init__(self) -> None:
        self.root = Path(self.root).expanduser().resolve()
        if not self.root.is_dir():
            raise SourceError(f"source directory {self.root} does not exist")
        if not (self.root / CARD_PATH).is_file() and (self.root / "manifest.json").is_file():
            if self.root.name == "benchmark" and (self.root.parent / CARD_PATH).is_file():
                self.root = self.root.parent  # upstream's --data folder: the release is its parent
        if not (self.root / CARD_PATH).is_file():
            raise SourceError(f"source directory {self.root} has no dataset card {CARD_PATH}")

    @property
    def label(self) -> str:
        return str(self.root)

    @property
    def identity(self) -> dict[str, str | None]:
        return {"source": str(self.root), "revision": None, "commit": None}

    def _fetch(self, relpath: str) -> Path:
        path = self.root / relpath
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            if path.is_symlink():
                raise SourceError(f"{relpath} in {self.label} is a broken symbolic link") from None
            raise MissingFileError(f"{relpath} is not in this revision ({self.label})") from None
        except OSError as exc:
            raise SourceError(f"{relpath} in {self.label} cannot be read ({exc.strerror or exc})") from None
        if stat.S_ISDIR(mode):
            raise MissingFileError(f"{relpath} is not in this revision ({self.label}; a folder has its name)")
        if not stat.S_ISREG(mode):
            raise SourceError(f"{relpath} in {self.label} is not a regular file")
        return path

    def _refuse(self, relpath: str, path: Path, expected: Digest) -> Path:
        """Local files belong to the user: they are refused, never deleted."""
        raise IntegrityError(f"{self._mismatch(relpath, expected)}; refused")

    def list_files(self) -> list[str]:
        return sorted(
            p.relative_to(self.root).as_posix()
            for p in self.root.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(self.root).parts
        )
