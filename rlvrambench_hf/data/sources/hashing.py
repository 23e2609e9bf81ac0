"""One pass over a file for its size, SHA-256 and git blob SHA-1: the manifest check, the Hub object-id check,
the builder's cache key and push's blob ids all read it, so no file is hashed twice while it is unchanged."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass

_CHUNK = 1 << 20


class UnreadableFile(Exception):
    """A file that cannot be used as data; the message is a short phrase ("is a FIFO, not a regular file").

    ``proved``: the file was examined and is not data (a FIFO, a folder, a link loop, a broken link); False when it
    could not be examined at all (permission, I/O error), which says nothing about the file itself."""

    def __init__(self, reason: str, *, proved: bool = True) -> None:
        super().__init__(reason)
        self.proved = proved


@dataclass(frozen=True)
class FileHash:
    size: int
    sha256: str
    git_sha1: str


_HASHES: dict[tuple[int, int, int, int, int], FileHash] = {}  # by (dev, inode, size, mtime, ctime)


def _signature(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def hash_file(path: str | os.PathLike[str]) -> FileHash:
    """Size, SHA-256 and git blob SHA-1 of a regular file, in one pass (remembered while the file is unchanged).

    Never blocks on a FIFO or device; anything but a regular file raises :class:`UnreadableFile`."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise UnreadableFile(os_reason(exc), proved=is_proved(exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile(f"is {file_kind(st.st_mode)}, not a regular file")
        known = _HASHES.get(_signature(st))
        if known is not None:
            return known
        sha256 = hashlib.sha256()
        git_sha1 = hashlib.sha1(b"blob %d\0" % st.st_size)
        while block := os.read(fd, _CHUNK):
            sha256.update(block)
            git_sha1.update(block)
        result = FileHash(st.st_size, sha256.hexdigest(), git_sha1.hexdigest())
        if _signature(os.fstat(fd)) == _signature(st):  # unchanged while read
            _HASHES[_signature(st)] = result
        return result
    except OSError as exc:
        raise UnreadableFile(os_reason(exc), proved=False) from None  # a read that failed: an I/O error
    finally:
        os.close(fd)


def is_proved(exc: OSError) -> bool:
    """Whether an error on opening a file says what the file is (a link loop, a missing link target, a folder)
    rather than that it could not be examined (permission, I/O)."""
    import errno

    return exc.errno in (errno.ELOOP, errno.ENOENT, errno.EISDIR, errno.ENXIO)


def os_reason(exc: OSError) -> str:
    import errno

    if exc.errno == errno.ELOOP:
        return "is a symbolic-link loop"
    if exc.errno == errno.ENOENT:
        return "is missing (a broken link)"
    return f"cannot be read ({exc.strerror or exc})"


def file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"
