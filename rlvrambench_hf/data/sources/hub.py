"""A release on the Hub (or on any server ``HF_ENDPOINT`` points at), read through huggingface_hub's cache.

Every file is fetched with ``hf_hub_download`` and checked against its Hub object id before use
(:mod:`.hubcache`); the manifest check of :class:`~.base.Source` follows. A copy that fails either check is
removed and fetched again once, and the command goes on; a second failure is an :class:`IntegrityError` naming the
file and the server. Offline (``HF_HUB_OFFLINE``, or after the server could not be reached) a bad copy is one line
saying so. A file the cache records as absent from the commit (``.no_exist``) is "not in this revision" offline
exactly as online; where a server does not say "does not exist" the way the Hub does, the package records it the
way huggingface_hub does.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath

from ...errors import IntegrityError, MissingFileError, SourceError, first_line, quote
from ..schema.pins import CARD_PATH, SOURCE_ENV
from .base import Digest, Source
from .caches import CACHES
from .hubcache import (
    COMMIT_ID,
    BadReference,
    CorruptCopy,
    StuckCopy,
    UnreadableCopy,
    cached_commit,
    check_copy,
    forget_entry,
    is_link_loop,
    record_absent,
    recorded_absent,
    remove_bad,
    repo_cache,
    snapshot_entry,
    sweep_interrupted,
)
from .huberrors import endpoint, hub_error, missing_revision, unreachable
from .hubnet import HubTrafficError, expecting, hub_traffic

#: What git accepts in a branch or tag name (and a commit id); ``..`` and ``//`` are refused separately.
_REVISION = re.compile(r"[A-Za-z0-9_.+@-][A-Za-z0-9_./+@=-]*(?<![./])")


@dataclass
class HubSource(Source):
    """A dataset repository at one revision (a branch, tag or commit)."""

    repo_id: str
    revision: str
    _commit: str | None = field(default=None, repr=False)
    _unreachable: bool = field(default=False, repr=False)  # after one failed attempt, only the cache is read
    _refs: set[str] | bool | None = field(default=None, repr=False)  # branch/tag names and commits; False: no answer
    _why: str = field(default="", repr=False)  # why the server could not be reached
    #: False when no source was given (neither a source argument nor $RLVRAMBENCH_SOURCE): errors say how to give one
    configured: bool = field(default=True, repr=False, compare=False)

    def __post_init__(self) -> None:
        from huggingface_hub.utils import validate_repo_id  # type: ignore[attr-defined]  # public there, not re-exported in its typing

        try:
            validate_repo_id(self.repo_id)
        except Exception as exc:
            raise hub_error(exc, self.repo_id, self.revision) or exc from None
        if not _REVISION.fullmatch(self.revision) or ".." in self.revision or "//" in self.revision:
            raise SourceError(
                f"revision {quote(self.revision)} is not a valid branch, tag or commit name", **self.error_fields
            )

    @property
    def label(self) -> str:
        return f"{self.repo_id}@{self.revision}"

    @property
    def error_fields(self) -> dict[str, str]:
        return {"repo_id": self.repo_id, "revision": self.revision}

    @property
    def commit(self) -> str:
        """The commit the revision resolves to (fetches the card once)."""
        if self._commit is None:
            self._fetch(CARD_PATH)
        return self._commit  # type: ignore[return-value]

    @property
    def identity(self) -> dict[str, str | None]:
        return {"source": self.repo_id, "revision": self.revision, "commit": self.commit}

    @cached_property
    def _storage(self) -> Path:
        return repo_cache(self.repo_id)

    def _offline(self) -> bool:
        from huggingface_hub import constants

        return constants.is_offline_mode() or self._unreachable

    def _why_offline(self) -> str:
        from huggingface_hub import constants

        if constants.is_offline_mode():
            return "HF_HUB_OFFLINE is set"
        return f"{endpoint()} could not be reached{f' ({self._why})' if self._why else ''}"

    def _fetch(self, relpath: str) -> Path:
        try:
            return self._fetch_checked(relpath)
        except UnreadableCopy as unreadable_copy:  # never taken for corruption: nothing is removed
            what, variables = CACHES["hub"]
            raise SourceError(
                f"{unreadable_copy.path} in {what} {unreadable_copy.reason}; it was left as it is: make it readable, "
                f"or set {variables[0]} (or {variables[1]}) to a folder of your own"
            ) from None

    def _fetch_checked(self, relpath: str) -> Path:
        commit = self._known_commit()
        if commit is not None:
            entry = snapshot_entry(self._storage, commit, relpath)
            if not os.path.lexists(entry) and recorded_absent(self.repo_id, commit, relpath):
                raise MissingFileError(f"{relpath} is not in this revision ({self.label})")
            if self._offline() and is_link_loop(entry):  # huggingface_hub would call it "not cached"
                try:
                    check_copy(entry, self._storage)
                except CorruptCopy as bad:
                    return self._heal(relpath, entry, bad)
        pointer = self._download(relpath)
        try:
            check_copy(pointer, self._storage)
        except CorruptCopy as bad:
            return self._heal(relpath, pointer, bad)
        return pointer

    def _heal(self, relpath: str, pointer: Path, bad: CorruptCopy) -> Path:
        """Remove the bad copy and, online, download it again once."""
        try:
            removed = remove_bad(bad, self._storage)
        except StuckCopy as stuck:  # fetching again would only find the same copy: the server is not to blame
            raise IntegrityError(
                f"the cached copy of {relpath} ({self.label}) is corrupted and cannot be removed: {stuck}; set "
                f"HF_HUB_CACHE (or HF_HOME) to a writable folder of your own (the copy: {bad.entry})"
            ) from None
        if removed and bad.entry != pointer:
            forget_entry(pointer)  # no dangling entry: offline, the next run says "not cached"
        if self._offline():
            raise IntegrityError(
                f"the cached copy of {relpath} ({self.label}) is corrupted: it {bad.reason}; "
                f"{'it was removed, and ' if removed else ''}fetching it again needs a connection to the Hub "
                f"({self._why_offline()})"
            )
        pointer = self._download(relpath)
        try:
            check_copy(pointer, self._storage)
        except CorruptCopy as again:
            with contextlib.suppress(StuckCopy):
                if remove_bad(again, self._storage) and again.entry != pointer:
                    forget_entry(pointer)
            raise IntegrityError(
                f"{relpath} of {self.label} is corrupted as served by {endpoint()}: it {again.reason}, also when "
                "downloaded again; refused"
            ) from None
        return pointer

    def _refuse(self, relpath: str, path: Path, expected: Digest) -> Path:
        """The copy matches its object id but not the manifest: forget the snapshot entry (the blob is a true
        copy of a Hub object and stays) and resolve it again once."""
        forget_entry(path)
        if self._offline():
            raise IntegrityError(
                f"{self._mismatch(relpath, expected)}; the cached copy was refused, and fetching it again needs a "
                f"connection to the Hub ({self._why_offline()})"
            )
        path = self._fetch(relpath)
        if not self._matches(relpath, path, expected):
            forget_entry(path)
            raise IntegrityError(f"{self._mismatch(relpath, expected)}, also as served again by {endpoint()}; refused")
        return path

    def _known_commit(self) -> str | None:
        """The commit this revision is known to be without asking the server: resolved in this process, a commit
        id, or (offline) the one the cache records. A branch is asked for online, since it may have moved."""
        try:
            cached = cached_commit(self._storage, self.revision)
        except BadReference as bad:  # online, huggingface_hub records the reference again
            if self._offline():
                raise IntegrityError(
                    f"the cached reference {bad} of {self.repo_id} is corrupted (not a commit id); {bad.fate}, and "
                    f"resolving {quote(self.revision)} again needs a connection to the Hub ({self._why_offline()})"
                ) from None
            cached = None
        if self._commit is not None:
            return self._commit
        return cached if COMMIT_ID.fullmatch(self.revision) or self._offline() else None

    def _download(self, relpath: str) -> Path:
        from huggingface_hub import errors as hf_errors
        from huggingface_hub import hf_hub_download

        sweep_interrupted(self._storage)
        known = self.__dict__.get("published_digests", {}).get(relpath)  # never fetched for this
        try:
            with expecting(known.size_bytes if known is not None else None):
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
            raise unreachable(f"{relpath} of {self.label} is not in the local cache and the Hub is offline") from None
        except hf_errors.LocalEntryNotFoundError:
            raise self._not_cached(relpath) from None
        except HubTrafficError as exc:
            if exc.unreachable:
                return self._cached_instead(relpath, exc)
            raise SourceError(f"{self.label}: cannot fetch {relpath} from {endpoint()}: {exc}") from None
        except Exception as exc:
            mapped = hub_error(exc, self.repo_id, self.revision, what=relpath)
            if mapped is None:
                raise
            raise mapped from None
        commit = _snapshot_commit(path, relpath)
        if self._commit is None:
            self._commit = commit
        return path

    def _cached_instead(self, relpath: str, why: HubTrafficError) -> Path:
        """The server cannot answer now (refused, unknown or past the deadline): the cached copy, if any."""
        self._unreachable, self._why = True, str(why)
        return self._download(relpath)

    def _not_cached(self, relpath: str) -> SourceError:
        """The error for a file that is not cached while the server cannot be asked for it."""
        from huggingface_hub import constants

        if not constants.is_offline_mode() and not self._unreachable:
            self._unreachable = True
            if relpath == CARD_PATH and self._commit is None and self._revision_exists() is False:
                return missing_revision(self.repo_id, self.revision)
        hint = ""
        if not self.configured:
            hint = f"; no source was given: pass --source (source= in Python) or set ${SOURCE_ENV}"
        return unreachable(f"{relpath} of {self.label} is not cached and {self._why_offline()}{hint}")

    def _not_found(self, relpath: str) -> SourceError:
        """Tell a missing file from a missing revision or repository (some servers answer 401 for all three)."""
        if relpath != CARD_PATH:
            try:
                self._fetch(CARD_PATH)
            except SourceError as exc:
                return exc
            if self._revision_exists() is None:
                return SourceError(f"{relpath} of {self.label}: the repository does not answer (not accessible?)")
            record_absent(self._storage, self.commit, relpath)
            return MissingFileError(f"{relpath} is not in this revision ({self.label})")
        if self._revision_exists() is None:
            return SourceError(f"dataset repository {self.repo_id} not found (or not accessible)")
        return missing_revision(self.repo_id, self.revision)

    def _revision_exists(self) -> bool | None:
        """Whether the revision is one of the repository's branches, tags or their commits (None: the repository
        does not answer). A commit that no reference points at counts as missing. Asked once per source."""
        if self._refs is None:
            self._refs = _reference_names(self.repo_id)
        return None if not isinstance(self._refs, set) else self.revision in self._refs

    def list_files(self) -> list[str]:
        from huggingface_hub import HfApi

        commit = self.commit
        try:
            with hub_traffic():
                return sorted(HfApi().list_repo_files(self.repo_id, repo_type="dataset", revision=commit))
        except Exception as exc:  # network, auth or offline
            raise SourceError(f"cannot list the files of {self.label}: {first_line(exc)}") from None


def _reference_names(repo_id: str) -> set[str] | bool:
    """Branch and tag names of a dataset repository and the commits they point at (False: no answer)."""
    from huggingface_hub import HfApi

    try:
        with hub_traffic():
            refs = HfApi().list_repo_refs(repo_id, repo_type="dataset")
    except Exception:
        return False
    return {name for r in [*refs.branches, *refs.tags] for name in (r.name, r.target_commit)}


def _snapshot_commit(path: Path, relpath: str) -> str:
    """The commit of a file inside ``.../snapshots/<commit>/<relpath>`` of the Hub cache."""
    return path.parts[-len(PurePosixPath(relpath).parts) - 1]
