"""The huggingface_hub cache as the package reads it: each cached file checked against its Hub object id,
"does not exist" markers, and the removal of a bad copy or of what an interrupted download left behind.

The layout is huggingface_hub's own (``<HF_HUB_CACHE>/datasets--ORG--NAME/``): ``blobs/<object id>`` holds the
bytes, ``snapshots/<commit>/<path>`` links to a blob, ``refs/<revision>`` names a commit and
``.no_exist/<commit>/<path>`` records that the Hub answered "does not exist". A blob is named by the id the Hub
served it with (its etag): the SHA-256 of an LFS file, the git blob SHA-1 (of ``blob <size>\\0`` + bytes) of any
other file. Downloads are serialized by ``<HF_HUB_CACHE>/.locks/datasets--ORG--NAME/<object id>.lock``; removals
here take the same lock and remove only the very file that was found bad, so a copy another process has just
repaired is never deleted.

Nothing is removed that is not proved bad: a file is removed only after it was read and found wrong (or found to be
no file at all), and only when this process could have written it (its own, or writable to it). A file that cannot
be read (permission, I/O error) is :class:`UnreadableCopy`: one line naming it, nothing removed.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from contextlib import AbstractContextManager
from pathlib import Path

from .caches import is_permission_error
from .hashing import FileHash, UnreadableFile, file_kind, hash_file, is_proved, os_reason

GIT_BLOB_ID = re.compile(r"[0-9a-f]{40}")
LFS_ID = re.compile(r"[0-9a-f]{64}")
COMMIT_ID = GIT_BLOB_ID


class CorruptCopy(Exception):
    """A cached copy that must not be used: ``reason`` says why; ``entry`` is the cache entry to remove (the blob,
    or the snapshot entry itself) and ``identity`` the (device, inode) it had when it was found bad."""

    def __init__(self, reason: str, entry: Path, identity: tuple[int, int] | None, object_id: str | None) -> None:
        super().__init__(reason)
        self.reason, self.entry, self.identity, self.object_id = reason, entry, identity, object_id


class UnreadableCopy(Exception):
    """A cache file that could not be examined (permission, I/O error): nothing is known to be wrong with it, so it
    stays; ``path`` is the file and the message the reason."""

    def __init__(self, reason: str, path: Path) -> None:
        super().__init__(reason)
        self.reason, self.path = reason, path


def repo_cache(repo_id: str) -> Path:
    """The cache folder of a dataset repository (``<HF_HUB_CACHE>/datasets--ORG--NAME``, the layout
    huggingface_hub documents for its cache; a test pins it against ``scan_cache_dir``)."""
    from huggingface_hub import constants

    cache = Path(constants.HF_HUB_CACHE).expanduser().resolve()
    return cache / ("datasets--" + repo_id.replace("/", "--"))


def may_remove(path: Path, entry: os.stat_result) -> bool:
    """Whether this process could have written the cache entry ``path`` (its ``lstat``): its own, or a regular
    file it may write. Another user's file in a shared cache is never removed."""
    if entry.st_uid == os.geteuid():
        return True
    return stat.S_ISREG(entry.st_mode) and os.access(path, os.W_OK)


def _lock(storage: Path, object_id: str) -> AbstractContextManager[object]:
    from huggingface_hub.utils import WeakFileLock  # type: ignore[attr-defined]  # public there, not re-exported in its typing

    path = storage.parent / ".locks" / storage.name / f"{object_id}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    return WeakFileLock(path)


def check_copy(pointer: Path, storage: Path) -> FileHash:
    """Check the snapshot entry ``pointer`` against the object id of the blob it links to; its hash, or
    :class:`CorruptCopy`."""
    entry = _lstat(pointer)
    if not stat.S_ISLNK(entry.st_mode):
        if stat.S_ISREG(entry.st_mode) and not _links_expected(storage):
            # a cache without symbolic links keeps plain copies: no object id to check against
            return _hash(pointer, pointer, (entry.st_dev, entry.st_ino), None)
        raise CorruptCopy(
            f"is {'a plain file' if stat.S_ISREG(entry.st_mode) else file_kind(entry.st_mode)} where the cache keeps "
            "a link to a blob",
            pointer,
            (entry.st_dev, entry.st_ino),
            None,
        )
    try:
        blob = Path(os.path.normpath(pointer.parent / os.readlink(pointer)))
    except OSError as exc:
        raise UnreadableCopy(os_reason(exc), pointer) from None
    object_id = blob.name
    if blob.parent != storage / "blobs" or not (GIT_BLOB_ID.fullmatch(object_id) or LFS_ID.fullmatch(object_id)):
        raise CorruptCopy(f"links to {blob}, not to a blob of the cache", pointer, (entry.st_dev, entry.st_ino), None)
    try:
        blob_entry = os.lstat(blob)
    except OSError as exc:
        if not is_proved(exc):
            raise UnreadableCopy(os_reason(exc), blob) from None
        raise CorruptCopy(os_reason(exc), pointer, (entry.st_dev, entry.st_ino), None) from None
    identity = (blob_entry.st_dev, blob_entry.st_ino)
    digest = _hash(blob, blob, identity, object_id)
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


def _hash(path: Path, entry: Path, identity: tuple[int, int], object_id: str | None) -> FileHash:
    """The hash of ``path``; one that is no data is :class:`CorruptCopy` (of ``entry``), one that cannot be read
    :class:`UnreadableCopy`."""
    try:
        return hash_file(path)
    except UnreadableFile as exc:
        if not exc.proved:
            raise UnreadableCopy(str(exc), path) from None
        raise CorruptCopy(str(exc), entry, identity, object_id) from None


def _lstat(pointer: Path) -> os.stat_result:
    """The snapshot entry itself; a missing one is :class:`CorruptCopy` (nothing to remove), one that cannot be
    examined :class:`UnreadableCopy`."""
    try:
        return os.lstat(pointer)
    except OSError as exc:
        if not is_proved(exc):
            raise UnreadableCopy(os_reason(exc), pointer) from None
        raise CorruptCopy(os_reason(exc), pointer, None, None) from None


def _links_expected(storage: Path) -> bool:
    """Whether huggingface_hub keeps snapshot entries as links in this cache (it copies where it cannot)."""
    from huggingface_hub import constants

    if constants.HF_HUB_DISABLE_SYMLINKS:
        return False
    return _symlinks_work(storage.parent)


_SYMLINKS: dict[Path, bool] = {}


def _symlinks_work(folder: Path) -> bool:
    """Whether a symbolic link can be made in ``folder`` (huggingface_hub copies files where it cannot); a folder
    that cannot be written was made by this machine's rules anyway."""
    import tempfile

    if folder not in _SYMLINKS:
        try:
            with tempfile.TemporaryDirectory(dir=folder, prefix=".rlvrambench-links-") as probe:
                os.symlink("target", os.path.join(probe, "link"))
            _SYMLINKS[folder] = True
        except NotImplementedError:
            _SYMLINKS[folder] = False
        except OSError as exc:
            _SYMLINKS[folder] = os.name != "nt" if is_permission_error(exc) or not folder.is_dir() else False
    return _SYMLINKS[folder]


class StuckCopy(Exception):
    """A bad cache entry that cannot be removed (a read-only cache); the message says why."""


def remove_bad(bad: CorruptCopy, storage: Path) -> bool:
    """Remove the cache entry found bad, unless another process has replaced or removed it in the meantime;
    whether it did. An entry that cannot be removed (a read-only cache) raises :class:`StuckCopy`."""
    _ensure_removable(bad.entry)
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


def _ensure_removable(path: Path) -> None:
    """:class:`StuckCopy` unless this process could have written ``path`` (a missing one passes)."""
    try:
        entry = os.lstat(path)
    except OSError:
        return
    if not may_remove(path, entry):
        raise StuckCopy(f"it belongs to another user (uid {entry.st_uid})")


class BadReference(Exception):
    """A ``refs/<revision>`` file of the cache that was read and does not hold a commit id; ``fate`` says what
    became of it (only a file this process could have written is removed)."""

    def __init__(self, name: str, fate: str) -> None:
        super().__init__(name)
        self.fate = fate


def cached_commit(storage: Path, revision: str) -> str | None:
    """The commit of ``revision`` as the cache records it (a commit id is its own); None when not recorded.

    A ``refs/`` file that was read and is not a commit id raises :class:`BadReference` (removed where this process
    could have written it); one that cannot be read raises :class:`UnreadableCopy` and stays."""
    if COMMIT_ID.fullmatch(revision):
        return revision
    ref = storage / "refs" / revision
    try:
        entry = os.lstat(ref)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UnreadableCopy(os_reason(exc), ref) from None
    if stat.S_ISDIR(entry.st_mode):  # the folder of references below it (refs/pr/1): not a record of its own
        return None
    commit = _read_reference(ref)
    if commit is not None and COMMIT_ID.fullmatch(commit):
        return commit
    fate = "it belongs to another user and was left"
    if may_remove(ref, entry):
        try:
            ref.unlink()
            fate = "it was removed"
        except OSError as exc:
            fate = f"it could not be removed ({exc.strerror or type(exc).__name__})"
    raise BadReference(f"refs/{revision}", fate)


def _read_reference(ref: Path) -> str | None:
    """The text of a reference file; None when it was read and is no text, or is a link to nothing or a loop."""
    try:
        return ref.read_text(encoding="ascii")
    except ValueError:
        return None
    except OSError as exc:
        if not is_proved(exc):
            raise UnreadableCopy(os_reason(exc), ref) from None
        return None


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
    """Remove the snapshot entry ``pointer`` where this process could have written it (its blob stays: it matched
    its object id)."""
    try:
        if may_remove(pointer, os.lstat(pointer)):
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
    from huggingface_hub.utils import WeakFileLock  # type: ignore[attr-defined]  # public there, not re-exported in its typing

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
                partial = storage / "blobs" / name
                if may_remove(partial, os.lstat(partial)):
                    partial.unlink()
        except (Timeout, OSError):
            continue
