"""A release as files addressed by their repository path, each checked against the release's manifests.

:class:`Source` is what every reader of the package takes. Its two kinds are a local folder (:mod:`.local`) and a
Hub repository at a revision (:mod:`.hub`, whose cached copies are first checked against their Hub object ids).
Every file covered by a published manifest is checked against its SHA-256 digest: a local file that fails is
refused (a user's folder is never changed); a Hub copy that fails is fetched again once.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Protocol

from ...errors import IntegrityError, MissingFileError, RLVRAMBenchError, SourceError, quote
from ..schema.card import read_front_matter
from ..schema.pins import CARD_PATH, MANIFESTS
from .hashing import FileHash, UnreadableFile, hash_file


class SeenCards(Protocol):
    """The dataset cards read before, by their text (:class:`~..tables.kept.SeenCards`)."""

    def seen(self, text: str) -> bool: ...

    def passed(self, text: str) -> None: ...


def file_hash(path: str | Path) -> FileHash:
    """Size, SHA-256 and git blob SHA-1 of a regular file, from one hashing pass per unchanged file and process
    (:func:`.hashing.hash_file`, shared with the object-id check); a file that cannot be read as data raises
    :class:`OSError`."""
    try:
        return hash_file(path)
    except UnreadableFile as exc:
        raise OSError(f"{path} {exc}") from None


def sha256_file(path: str | Path) -> str:
    """The SHA-256 of a regular file (see :func:`file_hash`)."""
    return file_hash(path).sha256


def safe_relpath(path: str, context: str) -> str:
    """``path`` as a POSIX path inside the repository; absolute paths and ``..`` are refused."""
    pure = PurePosixPath(path.replace("\\", "/"))
    if pure.is_absolute() or re.match(r"^[A-Za-z]:", path) or ".." in pure.parts or not pure.parts:
        raise IntegrityError(f"{context}: unsafe path {quote(path)} (absolute or containing '..')")
    return pure.as_posix()


@dataclass(frozen=True)
class Digest:
    sha256: str
    size_bytes: int | None
    manifest: str = ""  # the manifest that publishes it


def parse_manifest(data: object, manifest_path: str) -> dict[str, Digest]:
    """Digests of a manifest in any of the release's three layouts, keyed by path relative to its folder."""
    if not isinstance(data, dict):
        raise IntegrityError(f"manifest {manifest_path}: not a JSON object")
    entries = data.get("files", data) if isinstance(data.get("files"), dict) else data
    out: dict[str, Digest] = {}
    for name, entry in entries.items():
        if name in ("protocol_version", "algorithm") and not isinstance(entry, dict):
            continue
        rel = safe_relpath(name, f"manifest {manifest_path}")
        if isinstance(entry, str):
            out[rel] = Digest(entry.lower(), None, manifest_path)
        elif isinstance(entry, dict) and isinstance(entry.get("sha256"), str):
            size = entry.get("size_bytes")
            out[rel] = Digest(entry["sha256"].lower(), size if isinstance(size, int) else None, manifest_path)
        else:
            raise IntegrityError(f"manifest {manifest_path}: entry {quote(name)} has no sha256 digest")
    return out


class Source(ABC):
    """A release: files addressed by their path in the repository."""

    @property
    @abstractmethod
    def label(self) -> str:
        """Human-readable identity, used in messages."""

    @property
    @abstractmethod
    def identity(self) -> dict[str, str | None]:
        """``{"source": ..., "revision": ..., "commit": ...}`` for provenance records."""

    @property
    def error_fields(self) -> dict[str, str]:
        """The fields every error about this source carries (a Hub source: ``repo_id`` and ``revision``)."""
        return {}

    @abstractmethod
    def _fetch(self, relpath: str) -> Path:
        """Local path of ``relpath`` (raises :class:`MissingFileError` when the revision lacks it)."""

    @abstractmethod
    def _refuse(self, relpath: str, path: Path, expected: Digest) -> Path:
        """``relpath`` at ``path`` does not match ``expected``: a good copy of it, or :class:`IntegrityError`."""

    @abstractmethod
    def list_files(self) -> list[str]:
        """Every file path of the revision."""

    @cached_property
    def card_metadata(self) -> dict[str, object]:
        """The YAML front matter of the dataset card (``README.md``)."""
        return read_front_matter(self._card_text(), f"{self.label}: {CARD_PATH}", SourceError)

    def _card_text(self) -> str:
        where = f"{self.label}: {CARD_PATH}"
        try:
            return self._fetch(CARD_PATH).read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SourceError(f"{where} is not UTF-8 text (byte {exc.start:,} cannot be decoded)") from None
        except OSError as exc:
            raise SourceError(f"{where} cannot be read ({exc.strerror or type(exc).__name__})") from None

    def check_card(self, seen: SeenCards | None = None) -> None:
        """Fail with one line unless the release carries a readable dataset card (an unreachable source fails
        here too). ``seen``: the cards read before (:data:`~..tables.kept.CARDS`), one of which is not parsed
        again."""
        if "card_metadata" in self.__dict__ or self.__dict__.get("_card_seen"):
            return
        if seen is None:
            _ = self.card_metadata
            return
        text = self._card_text()
        if not seen.seen(text):
            self.__dict__["card_metadata"] = read_front_matter(text, f"{self.label}: {CARD_PATH}", SourceError)
            seen.passed(text)
        self.__dict__["_card_seen"] = True

    def path(self, relpath: str, *, verify: bool = True) -> Path:
        """Local path of a verified file of the release."""
        rel = safe_relpath(relpath, self.label)
        try:
            expected = self.published_digests.get(rel) if verify else None  # first: a download is capped by it
            path = self._fetch(rel)
            if verify:
                if expected is not None and not self._matches(rel, path, expected):
                    path = self._refuse(rel, path, expected)
        except RLVRAMBenchError as exc:
            raise exc.with_fields(path=rel, **self.error_fields) from exc.__cause__
        return path

    def has(self, relpath: str) -> bool:
        try:
            self._fetch(safe_relpath(relpath, self.label))
        except MissingFileError:
            return False
        return True

    def read_json(self, relpath: str) -> object:
        from ...userfile import parse_json

        return parse_json(self.path(relpath).read_bytes(), f"{self.label}: {relpath}", SourceError)

    @cached_property
    def published_digests(self) -> dict[str, Digest]:
        """Digests of every file listed by the release's manifests (absent manifests list nothing)."""
        digests: dict[str, Digest] = {}
        for manifest, folder in MANIFESTS:
            from ...userfile import parse_json

            try:
                data = parse_json(self._fetch(manifest).read_bytes(), f"manifest {manifest}", IntegrityError)
            except MissingFileError:
                continue
            for name, digest in parse_manifest(data, manifest).items():
                digests[f"{folder}/{name}"] = digest
        return digests

    def _matches(self, rel: str, path: Path, expected: Digest) -> bool:
        try:
            found = hash_file(path)
        except UnreadableFile as exc:
            raise SourceError(f"{rel} in {self.label} {exc}") from None
        return found.sha256 == expected.sha256 and expected.size_bytes in (None, found.size)

    def _mismatch(self, rel: str, expected: Digest) -> str:
        return f"{rel} does not match its published SHA-256 digest ({expected.manifest}) in {self.label}"
