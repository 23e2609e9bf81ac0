"""The huggingface_hub cache as the package reads it: each cached file checked against its Hub object id,
"does not exist" markers, and the removal of a bad copy or of what an interrupted download left behind.

The layout is huggingface_hub's own (``<HF_HUB_CACHE>/datasets--ORG--NAME/``): ``blobs/<object id>`` holds the
bytes, ``snapshots/<commit>/<path>`` links to a blob, ``refs/<revision>`` names a commit and
``.no_exist/<commit>/<path>`` records that the Hub answered "does not exist". A blob is named by the id the Hub
served it with (its etag): the SHA-256 of an LFS file, the git blob SHA-1 (of ``blob <size>\\0`` + bytes) of any
other file. Downloads are serialized by ``<HF_HUB_CACHE>/.locks/datasets--ORG--NAME/<object id>.lock``; removals
here take the same lock and remove only the very file that was found bad, so a copy another process has just
repaired is never deleted.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from contextlib import AbstractContextManager
from pathlib import Path

from .hashing import FileHash, UnreadableFile, file_kind, hash_file, os_reason

GIT_BLOB_ID = re.compile(r"[0-9a-f]{40}")
LFS_ID = re.compile(r"[0-9a-f]{64}")
COMMIT_ID = GIT_BLOB_ID


class CorruptCopy(Exception):
    """A cached copy that must not be used: ``reason`` says why; ``entry`` is the cache entry to remove (the blob,
    or the snapshot entry itself) and ``identity`` the (device, inode) it had when it was found bad."""

    def __init__(self, reason: str, entry: Path, identity: tuple[int, int] | None, object_id: str | None) -> None:
        super().__init__(reason)
        self.reason, self.entry, self.identity, self.object_id = reason, entry, identity, object_id


def repo_cache(repo_id: str) -> Path:
    """The cache folder of a dataset repository (``<HF_HUB_CACHE>/datasets--ORG--NAME``)."""
    from huggingface_hub import constants
    from huggingface_hub.file_download import repo_folder_name

    cache = Path(constants.HF_HUB_CACHE).expanduser().resolve()
    return cache / repo_folder_name(repo_id=repo_id, repo_type="dataset")


def _lock(storage: Path, object_id: str) -> AbstractContextManager[object]:
    from huggingface_hub.utils import WeakFileLock

    path = storage.parent / ".locks" / storage.name / f"{object_id}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    return WeakFileLock(path)


def check_copy(pointer: Path, storage: Path) -> FileHash:
    """Check the snapshot entry ``pointer`` against the object id of the blob it links to; its hash, or
    :class:`CorruptCopy`."""
    try:
        entry = os.lstat(pointer)
    except OSError as exc:
        raise CorruptCopy(os_reason(exc), pointer, None, None) from None
    if not stat.S_ISLNK(entry.st_mode):
        if stat.S_ISREG(entry.st_mode) and not _links_expected(storage):
            try:  # a cache without symbolic links keeps plain copies: no object id to check against
                return hash_file(pointer)
            except UnreadableFile as exc:
                raise CorruptCopy(str(exc), pointer, (entry.st_dev, entry.st_ino), None) from None
        raise CorruptCopy(
            f"is {'a plain file' if stat.S_ISREG(entry.st_mode) else file_kind(entry.st_mode)} where the cache keeps "
            "a link to a blob",
            pointer,
            (entry.st_dev, entry.st_ino),
            None,
        )
    blob = Path(os.path.normpath(pointer.parent / os.readlink(pointer)))
    object_id = blob.name
    if blob.parent != storage / "blobs" or not (GIT_BLOB_ID.fullmatch(object_id) or LFS_ID.fullmatch(object_id)):
        raise CorruptCopy(f"links to {blob}, not to a blob of the cache", pointer, (entry.st_dev, entry.st_ino), None)
    try:
        blob_entry = os.lstat(blob)
    except OSError as exc:
        raise CorruptCopy(os_reason(exc), pointer, (entry.st_dev, entry.st_ino), None) from None
    identity = (blob_entry.st_dev, blob_entry.st_ino)
    try:
        digest = hash_file(blob)
    except UnreadableFile as exc:
        raise CorruptCopy(str(exc), blob, identity, object_id) from None
    found = digest.git_sha1 if GIT_BLOB_ID.fullmatch(object_id) else digest.sha256
    if found != object_id:
        kind = "git blob SHA-1" if len(object_id) == 40 else "SHA-256"
        raise CorruptCopy(
            f"has {kind} {found[:12]}… ({digest.size} bytes), not its object id {object_id[:12]}…",
            blob,
            identity,
            object_id,
        )
    return digest


def _links_expected(storage: Path) -> bool:
    """Whether huggingface_hub keeps snapshot entries as links in this cache (it copies where it cannot)."""
    from huggingface_hub import constants
    from huggingface_hub.file_download import are_symlinks_supported

    if constants.HF_HUB_DISABLE_SYMLINKS:
        return False
    try:
        return are_symlinks_supported(storage.parent)
    except OSError:  # a read-only cache: it was made by this machine's rules anyway
        return os.name != "nt"


class StuckCopy(Exception):
    """A bad cache entry that cannot be removed (a read-only cache); the message says why."""


def remove_bad(bad: CorruptCopy, storage: Path) -> bool:
    """Remove the cache entry found bad, unless another process has replaced or removed it in the meantime;
    whether it did. An entry that cannot be removed (a read-only cache) raises :class:`StuckCopy`."""
    try:
        with _lock(storage, bad.object_id or "pointer-" + bad.entry.name):
            try:
                now = os.lstat(bad.entry)
            except FileNotFoundError:
                return False
            if bad.identity is not None and (now.st_dev, now.st_ino) != bad.identity:
                return False
            if stat.S_ISDIR(now.st_mode):
                shutil.rmtree(bad.entry)
            else:
                bad.entry.unlink()
            return True
    except OSError as exc:
        raise StuckCopy(exc.strerror or type(exc).__name__) from None


class BadReference(Exception):
    """A ``refs/<revision>`` file of the cache that does not hold a commit id."""


def cached_commit(storage: Path, revision: str) -> str | None:
    """The commit of ``revision`` as the cache records it (a commit id is its own); None when not recorded.

    A ``refs/`` entry that is not a commit id raises :class:`BadReference` after it was removed (where it can be)."""
    if COMMIT_ID.fullmatch(revision):
        return revision
    ref = storage / "refs" / revision
    try:
        commit = ref.read_text(encoding="ascii")
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        commit = ""
    if COMMIT_ID.fullmatch(commit):
        return commit
    try:
        shutil.rmtree(ref) if ref.is_dir() and not ref.is_symlink() else ref.unlink()
    except OSError:
        pass
    raise BadReference(f"refs/{revision}")


def snapshot_entry(storage: Path, commit: str, relpath: str) -> Path:
    """Where the cache keeps ``relpath`` of ``commit``."""
    return storage / "snapshots" / commit / relpath


def is_link_loop(path: Path) -> bool:
    import errno

    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def forget_entry(pointer: Path) -> None:
    """Remove the snapshot entry ``pointer`` (its blob stays: it matched its object id)."""
    try:
        pointer.unlink()
    except OSError:
        pass


def recorded_absent(repo_id: str, revision: str, relpath: str) -> bool:
    """Whether the cache records that ``relpath`` does not exist at ``revision`` (a commit, or a revision whose
    commit the cache knows)."""
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(repo_id, relpath, revision=revision, repo_type="dataset")
    except (OSError, ValueError):
        return False
    # a path when cached, None when unknown, and otherwise the library's "recorded as absent" marker
    return found is not None and not isinstance(found, str)


def record_absent(storage: Path, commit: str, relpath: str) -> None:
    """Record, as huggingface_hub does after a "does not exist" answer, that ``relpath`` is absent from ``commit``."""
    if not COMMIT_ID.fullmatch(commit):
        return
    marker = storage / ".no_exist" / commit / relpath
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass


_SWEPT: set[Path] = set()


def sweep_interrupted(storage: Path) -> None:
    """Remove the partial downloads (``blobs/*.incomplete``) of processes that died while downloading (once per
    process); a download still running holds its lock and is left alone."""
    from filelock import Timeout
    from huggingface_hub.utils import WeakFileLock

    if storage in _SWEPT:
        return
    _SWEPT.add(storage)
    try:
        names = [n for n in os.listdir(storage / "blobs") if n.endswith(".incomplete")]
    except OSError:
        return
    for name in names:
        lock = storage.parent / ".locks" / storage.name / f"{name.split('.', 1)[0]}.lock"
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
            with WeakFileLock(lock, timeout=0.05):
                (storage / "blobs" / name).unlink(missing_ok=True)
        except (Timeout, OSError):
            continue
