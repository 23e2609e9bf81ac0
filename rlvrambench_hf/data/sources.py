"""Where a release comes from: a Hub repository at a revision, or a local folder with the same layout.

Files from the Hub are fetched with ``huggingface_hub.hf_hub_download`` (its cache, ``HF_ENDPOINT``,
``HF_HUB_OFFLINE`` and token handling; see :mod:`.hubsource`), and every cached file is checked against its Hub
object id before use. Every file covered by a published manifest is then checked against its SHA-256 digest: a
local file that fails is refused (a user's folder is never changed); a Hub copy that fails is fetched again once.
"""

from __future__ import annotations

import json
import os
import re
import stat
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath

from ..errors import IntegrityError, MissingFileError, SourceError
from .card import read_front_matter
from .hubcache import FileHash, UnreadableFile, hash_file
from .registry import CARD_PATH, DEFAULT_REPO_ID, DEFAULT_REVISION, MANIFESTS

SOURCE_ENV = "RLVRAMBENCH_SOURCE"
REVISION_ENV = "RLVRAMBENCH_REVISION"
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def file_hash(path: str | Path) -> FileHash:
    """Size, SHA-256 and git blob SHA-1 of a regular file, from one hashing pass per unchanged file and process
    (:func:`.hubcache.hash_file`, shared with the object-id check); a file that cannot be read as data raises
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
        raise IntegrityError(f"{context}: unsafe path {path!r} (absolute or containing '..')")
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
            raise IntegrityError(f"manifest {manifest_path}: entry {name!r} has no sha256 digest")
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
    def card_metadata(self) -> dict:
        """The YAML front matter of the dataset card (``README.md``)."""
        text = self._fetch(CARD_PATH).read_text(encoding="utf-8")
        return read_front_matter(text, f"{self.label}: {CARD_PATH}", SourceError)

    def check_card(self) -> None:
        """Fail with one line unless the release carries a readable dataset card (an unreachable source fails
        here too)."""
        _ = self.card_metadata

    def path(self, relpath: str, *, verify: bool = True) -> Path:
        """Local path of a verified file of the release."""
        rel = safe_relpath(relpath, self.label)
        path = self._fetch(rel)
        if verify:
            expected = self.published_digests.get(rel)
            if expected is not None and not self._matches(rel, path, expected):
                path = self._refuse(rel, path, expected)
        return path

    def has(self, relpath: str) -> bool:
        try:
            self._fetch(safe_relpath(relpath, self.label))
        except MissingFileError:
            return False
        return True

    def read_json(self, relpath: str) -> object:
        path = self.path(relpath)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SourceError(f"{self.label}: {relpath} is not valid JSON ({exc})") from None

    @cached_property
    def published_digests(self) -> dict[str, Digest]:
        """Digests of every file listed by the release's manifests (absent manifests list nothing)."""
        digests: dict[str, Digest] = {}
        for manifest, folder in MANIFESTS:
            try:
                data = json.loads(self._fetch(manifest).read_text(encoding="utf-8"))
            except MissingFileError:
                continue
            except (UnicodeDecodeError, json.JSONDecodeError):
                raise IntegrityError(f"manifest {manifest} is not valid JSON") from None
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


@dataclass
class LocalSource(Source):
    """A folder laid out like the Hub repository."""

    root: Path

    def __post_init__(self) -> None:
        self.root = Path(self.root).expanduser().resolve()
        if not self.root.is_dir():
            raise SourceError(f"source directory {self.root} does not exist")
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


def open_source(source: str | os.PathLike | Source | None = None, revision: str | None = None) -> Source:
    """Resolve ``source`` and ``revision`` (or ``RLVRAMBENCH_SOURCE`` / ``RLVRAMBENCH_REVISION``) to a Source.

    A source is a directory path or a Hub repo id; ``None`` means the environment, else ``kobzaond/RLVRAMBench``.
    """
    if isinstance(source, Source):
        return source
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
        return LocalSource(Path(given))
    from .hubsource import HubSource

    return HubSource(given, revision or os.environ.get(REVISION_ENV) or DEFAULT_REVISION)


def __getattr__(name: str):  # ``sources.HubSource`` without importing the Hub client for local sources
    if name == "HubSource":
        from .hubsource import HubSource

        return HubSource
    raise AttributeError(name)
