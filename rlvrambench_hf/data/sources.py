"""Where a release comes from: a Hub repository at a revision, or a local folder with the same layout.

Files from the Hub are fetched with ``huggingface_hub.hf_hub_download`` (its cache, ``HF_ENDPOINT``,
``HF_HUB_OFFLINE`` and token handling); a requested revision is honoured offline too, because the file is looked
up by that revision in the Hub cache. Every file covered by a published manifest is checked against its SHA-256
digest before use; a mismatching file is refused and, when it came from the Hub cache, removed from it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath

from ..errors import IntegrityError, MissingFileError, SourceError, first_line
from .card import read_front_matter
from .hub import hub_error
from .registry import CARD_PATH, DEFAULT_REPO_ID, DEFAULT_REVISION, MANIFESTS

SOURCE_ENV = "RLVRAMBENCH_SOURCE"
REVISION_ENV = "RLVRAMBENCH_REVISION"
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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
            out[rel] = Digest(entry.lower(), None)
        elif isinstance(entry, dict) and isinstance(entry.get("sha256"), str):
            size = entry.get("size_bytes")
            out[rel] = Digest(entry["sha256"].lower(), size if isinstance(size, int) else None)
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
    def _discard(self, path: Path) -> None:
        """Forget a file that failed verification, so that it is never served again."""

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
            if expected is not None:
                self._check(rel, path, expected)
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

    def _check(self, rel: str, path: Path, expected: Digest) -> None:
        size = path.stat().st_size
        if (expected.size_bytes is not None and size != expected.size_bytes) or sha256_file(path) != expected.sha256:
            self._discard(path)
            raise IntegrityError(f"{rel} does not match its published SHA-256 digest in {self.label}; refused")


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
        if not path.is_file():
            raise MissingFileError(f"{relpath} is not in this revision ({self.label})")
        return path

    def _discard(self, path: Path) -> None:
        """Local files belong to the user: they are refused, never deleted."""

    def list_files(self) -> list[str]:
        return sorted(
            p.relative_to(self.root).as_posix()
            for p in self.root.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(self.root).parts
        )


@dataclass
class HubSource(Source):
    """A dataset repository on the Hub (or on any server ``HF_ENDPOINT`` points at), at one revision."""

    repo_id: str
    revision: str
    _commit: str | None = field(default=None, repr=False)
    _unreachable: bool = field(default=False, repr=False)  # after one failed attempt, only the cache is read

    @property
    def label(self) -> str:
        return f"{self.repo_id}@{self.revision}"

    @property
    def commit(self) -> str:
        """The commit the revision resolves to (fetches the card once)."""
        if self._commit is None:
            self._fetch(CARD_PATH)
        return self._commit  # type: ignore[return-value]

    @property
    def identity(self) -> dict[str, str | None]:
        return {"source": self.repo_id, "revision": self.revision, "commit": self.commit}

    def _fetch(self, relpath: str) -> Path:
        from huggingface_hub import errors as hf_errors
        from huggingface_hub import hf_hub_download

        try:
            path = Path(
                hf_hub_download(
                    self.repo_id,
                    relpath,
                    repo_type="dataset",
                    revision=self.revision,
                    local_files_only=self._unreachable,
                )
            )
        except hf_errors.RepositoryNotFoundError:
            raise self._not_found(relpath) from None
        except hf_errors.OfflineModeIsEnabled:
            raise SourceError(f"{relpath} of {self.label} is not in the local cache and the Hub is offline") from None
        except hf_errors.LocalEntryNotFoundError:
            from huggingface_hub import constants

            if constants.HF_HUB_OFFLINE:
                why = "HF_HUB_OFFLINE is set"
            else:
                why = f"the Hub at {constants.ENDPOINT} could not be reached"
                self._unreachable = True
            raise SourceError(f"{relpath} of {self.label} is not cached and {why}") from None
        except Exception as exc:
            mapped = hub_error(exc, self.repo_id, self.revision, what=relpath)
            if mapped is None:
                raise
            raise mapped from None
        commit = _snapshot_commit(path, relpath)
        if self._commit is None:
            self._commit = commit
        return path

    def _not_found(self, relpath: str) -> SourceError:
        """Tell a missing file from a missing revision or repository (some servers answer 401 for all three)."""
        if relpath != CARD_PATH:
            try:
                self._fetch(CARD_PATH)
            except SourceError as exc:
                return exc
            return MissingFileError(f"{relpath} is not in this revision ({self.label})")
        from huggingface_hub import HfApi

        try:
            HfApi().dataset_info(self.repo_id, revision="main")
        except Exception:
            return SourceError(f"dataset repository {self.repo_id} not found (or not accessible)")
        return SourceError(f"revision {self.revision!r} does not exist in {self.repo_id}")

    def _discard(self, path: Path) -> None:
        blob = path.resolve()
        for victim in (path, blob):
            try:
                victim.unlink()
            except OSError:
                pass

    def list_files(self) -> list[str]:
        from huggingface_hub import HfApi

        try:
            return sorted(HfApi().list_repo_files(self.repo_id, repo_type="dataset", revision=self.commit))
        except Exception as exc:  # network, auth or offline
            raise SourceError(f"cannot list the files of {self.label}: {first_line(exc)}") from None


def _snapshot_commit(path: Path, relpath: str) -> str:
    """The commit of a file inside ``.../snapshots/<commit>/<relpath>`` of the Hub cache."""
    parts = path.parts
    depth = len(PurePosixPath(relpath).parts)
    return parts[-depth - 1]


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
    return HubSource(given, revision or os.environ.get(REVISION_ENV) or DEFAULT_REVISION)
