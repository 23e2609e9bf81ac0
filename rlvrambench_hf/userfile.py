"""A file a user names (predictions, attempts, plans, configs, launch scripts, score files) — the one module every
reader of a user's file goes through.

A regular file is read where it lies; anything else that can be read — a pipe, a character device, standard input
given as ``/dev/stdin`` or ``/dev/fd/N`` — is read once, fully, into memory (up to :data:`STREAM_LIMIT`), since the
readers need to seek. A missing file, a folder or one that cannot be opened is one line saying which, never a
library's text. A regular file is opened so that nothing can make the open wait (a FIFO put in its place), its
size checked on the open handle (:func:`open_regular`; a model folder's files must be regular). A plan file is
opened within a size limit (:func:`opened`, :func:`read_text`), its content checked as text (:func:`check_text`) and
parsed as JSON or YAML within bounds (:mod:`.structured`'s :func:`parse_json`, :func:`parse_structured`)."""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
from collections.abc import Callable
from typing import IO

from .errors import InputError, first_line, quote
from .structured import MAX_DEPTH as MAX_DEPTH
from .structured import MAX_INT_DIGITS as MAX_INT_DIGITS
from .structured import MAX_NODES as MAX_NODES
from .structured import MAX_YAML_BYTES as MAX_YAML_BYTES
from .structured import count_nodes as count_nodes
from .structured import parse_json as parse_json
from .structured import parse_structured as parse_structured

#: The largest file read whole unless its reader says otherwise (a score file, an attempts list: the release's are
#: under 1 MB); a regular file or a stream beyond it is refused before it is read.
MAX_DOCUMENT_BYTES = 64 << 20
#: The most that :func:`read_stream` reads by default.
STREAM_LIMIT = MAX_DOCUMENT_BYTES
#: How much is read first from a stream, so that data refused on its first bytes is not read to the end.
HEAD_BYTES = 1 << 16
#: Largest config file read (a VERL or TRL config, a launch script, a planned YAML / JSON list), bytes.
MAX_CONFIG_BYTES = 16 * 2**20
#: Largest launch script read (VERL's launch scripts are a few KiB; the shell reader is slower than YAML's), bytes.
MAX_SCRIPT_BYTES = 2**20
#: Largest planned CSV read (100,000 plans take about 15 MB), bytes.
MAX_CSV_BYTES = 256 * 2**20
_KINDS = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a device"}
#: The first line of YAML or JSON: a mapping key, a list item or the start of a JSON value.
_STRUCTURED = re.compile(r"\s*(?:[{\[]|- |-$|[\"']?[A-Za-z_][\w.-]*[\"']?\s*:(?:\s|$))")


def file_mode(path: str | os.PathLike[str], label: str) -> int:
    """The ``st_mode`` of ``path``, or one line saying why it has none (missing, a broken link, unreadable)."""
    try:
        return os.stat(path).st_mode
    except FileNotFoundError:
        broken = os.path.islink(path)
        raise InputError(f"{label} {'is a symbolic link to nothing' if broken else 'does not exist'}") from None
    except OSError as exc:
        raise InputError(f"cannot read {label}: {reason(exc)}") from None


def binary_head(head: bytes) -> bool:
    """Whether the first bytes of an input already show binary data (a NUL byte): read no further."""
    return b"\x00" in head


def user_input(
    path: str | os.PathLike[str],
    label: str,
    *,
    refused: Callable[[bytes], bool] | None = None,
    limit: int = MAX_DOCUMENT_BYTES,
) -> str | bytes:
    """``path`` as a string when it is a regular file of at most ``limit`` bytes, else the bytes it streams (at
    most ``limit``); ``label`` names it in errors ("predictions file p.csv"). ``refused(head)`` says that the first
    bytes are enough to refuse the input, so that nothing more is read (e.g. binary data from ``/dev/zero``)."""
    name = os.fspath(path)
    mode = file_mode(name, label)
    if stat.S_ISDIR(mode):
        raise InputError(f"{label} is a directory, not a file")
    if stat.S_ISREG(mode):
        try:
            too_large(label, os.stat(name).st_size, limit)
        except OSError as exc:
            raise InputError(f"cannot read {label}: {reason(exc)}") from None
        return name
    if stat.S_ISSOCK(mode):
        raise InputError(f"{label} is a socket, which cannot be read as a file; save the data to a file")
    try:
        with open(name, "rb") as handle:
            return read_stream(handle, label, refused=refused, limit=limit)
    except OSError as exc:
        raise InputError(f"cannot read {label}: {reason(exc)}") from None


def read_stream(
    handle: IO[bytes], label: str, *, refused: Callable[[bytes], bool] | None = None, limit: int = STREAM_LIMIT
) -> bytes:
    """Everything ``handle`` streams, up to ``limit`` bytes (more is a one-line error)."""
    head = handle.read(min(HEAD_BYTES, limit + 1))
    if refused is not None and refused(head):
        return head
    rest = handle.read(max(limit + 1 - len(head), 0))
    if len(head) + len(rest) > limit:
        raise InputError(f"{label} streams more than {limit / 2**20:g} MiB, the most that is read")
    return head + rest


def content_of(
    found: str | bytes, label: str, limit: int = MAX_DOCUMENT_BYTES, refused: Callable[[bytes], bool] | None = None
) -> bytes:
    """The bytes of what :func:`user_input` gave (or of a path: it must be a regular file): a regular file's, read
    now (refused above ``limit`` bytes before any is read; no further than its first bytes when ``refused`` says
    so), or those a stream gave already."""
    if isinstance(found, bytes):
        too_large(label, len(found), limit)
        return found
    try:
        with open_regular(found, label, limit) as handle:
            data = read_stream(handle, label, refused=refused, limit=limit)
    except OSError as exc:
        raise InputError(f"cannot read {label}: {reason(exc)}") from None
    too_large(label, len(data), limit)  # a file that grew while it was read
    return data


def open_regular(path: str | os.PathLike[str], label: str, limit: int | None = None) -> IO[bytes]:
    """``path`` opened for reading if it is a regular file (of at most ``limit`` bytes), checked on the open handle:
    the open never waits (a FIFO is opened without blocking), and anything else is refused before a byte is read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"cannot read {label}: {reason(exc)}") from None
    try:
        mode = os.fstat(fd)
        if not stat.S_ISREG(kind := mode.st_mode):
            raise InputError(f"{label} is {_KINDS.get(stat.S_IFMT(kind), 'a special file')}, not a regular file")
        too_large(label, mode.st_size, limit if limit is not None else mode.st_size)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def too_large(label: str, size: int, limit: int) -> None:
    """Refuse ``size`` bytes where at most ``limit`` are read: one line with both."""
    if size > limit:
        raise InputError(f"{label}: {size} bytes is more than the {limit} bytes read ({limit / 2**20:g} MiB)")


def user_bytes(path: str | os.PathLike[str], label: str, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """All the bytes of the file a user names, at most ``limit`` (a pipe or device read once; binary data is read
    no further than its first bytes)."""
    return content_of(user_input(path, label, refused=binary_head, limit=limit), label, limit)


def user_json(path: str | os.PathLike[str], label: str) -> object:
    """The JSON value of the file a user names (see :func:`user_bytes`)."""
    content = user_bytes(path, label)
    if binary_head(content):
        raise InputError(f"{label} is a binary file (NUL bytes), not JSON")
    return parse_json(content, label)


def standard_input(label: str, *, refused: Callable[[bytes], bool] | None = None, limit: int = STREAM_LIMIT) -> bytes:
    """The bytes of standard input, at most ``limit`` (refused when it is a terminal: nothing was piped in)."""
    try:
        return read_stream(stdin_handle(label), label, refused=refused, limit=limit)
    except OSError as exc:
        raise InputError(f"cannot read {label}: {reason(exc)}") from None


def stdin_handle(label: str) -> IO[bytes]:
    """Standard input as bytes, or one line saying why it cannot be read (closed, or a terminal: nothing piped in)."""
    stdin = sys.stdin
    if stdin is None or stdin.closed:
        raise InputError(f"{label}: standard input is closed")
    if stdin.isatty():
        raise InputError(f"{label}: standard input is a terminal; pipe the data in (… | rlvrambench …) or name a file")
    return stdin.buffer


def read_ends(
    handle: IO[bytes], *, head: int, tail: int, refused: Callable[[bytes], bool] | None = None, block: int = 1 << 20
) -> tuple[bytes, bytes, int]:
    """The first ``head`` bytes of what ``handle`` streams, the last ``tail`` bytes after them and how many bytes it
    streamed in all: a stream of any length read to its end in bounded memory (``head + tail + block``). Reading
    stops at the first block that ``refused(block)`` refuses (binary data), which ends the tail."""
    first = handle.read(head)
    if refused is not None and refused(first):
        return first, b"", len(first)
    kept, total = bytearray(), len(first)
    while chunk := handle.read(block):
        total += len(chunk)
        kept += chunk
        if len(kept) > tail + block:
            del kept[: len(kept) - tail]
        if refused is not None and refused(chunk):
            break
    return first, bytes(kept[-tail:] if tail else b""), total


def reason(exc: OSError) -> str:
    """Why a file could not be opened or read, in a few words."""
    if exc.errno == errno.ENOENT:
        return "it does not exist"
    if exc.errno == errno.ELOOP:
        return "it is a loop of symbolic links"
    if exc.errno in (errno.ENXIO, errno.ENODEV):
        return "it is a special file that cannot be opened for reading"
    if exc.errno:
        return os.strerror(exc.errno)  # the system's words: a library (pyarrow) puts its own text in strerror
    return "the system gave no reason"


def check_text(data: bytes, name: str) -> None:
    """Refuse binary content: a NUL byte or bytes that are not UTF-8."""
    if b"\0" in data:
        raise InputError(f"{name}: is a binary file (NUL bytes), not text")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: is not UTF-8 text (byte {exc.start})") from None


def opened(path: str | os.PathLike[str], what: str, limit: int = MAX_CONFIG_BYTES) -> str | bytes:
    """``path`` as a string when it is a regular file of at most ``limit`` bytes, else the bytes a pipe, a device
    or ``/dev/stdin`` streams (read once, at most ``limit``); a one-line error otherwise."""
    label = f"{what} {quote(str(path))}"
    return user_input(path, label, refused=binary_head, limit=limit)


def text_of(found: str | bytes, name: str, limit: int = MAX_CONFIG_BYTES) -> str:
    """The text of what :func:`opened` gave; NUL bytes or invalid UTF-8 make it a binary file, refused."""
    data = content_of(found, name, limit)
    check_text(data, name)
    return data.decode("utf-8-sig")


def read_text(path: str | os.PathLike[str], what: str, limit: int = MAX_CONFIG_BYTES) -> str:
    """The text of a user's file (:func:`opened`, then :func:`text_of`)."""
    return text_of(opened(path, what, limit), f"{what} {quote(str(path))}", limit)


def head_of(found: str | bytes, name: str, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of what :func:`opened` gave (``name``: the file in errors)."""
    if isinstance(found, bytes):
        return found[:size]
    try:
        with open_regular(found, name) as handle:
            return handle.read(size)
    except OSError as exc:
        raise InputError(f"cannot read {name}: {reason(exc)}") from None


def looks_structured(text: str | bytes) -> bool:
    """Whether text without a telling suffix (a pipe) is YAML or JSON rather than a CSV or a launch script: its
    first line that is neither blank nor a comment is a mapping key, a list item or opens a JSON value."""
    head = text[:HEAD_BYTES].decode("utf-8", "replace") if isinstance(text, bytes) else text[:HEAD_BYTES]
    for line in head.lstrip("\ufeff").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return bool(_STRUCTURED.match(line))
    return False


def check_text_file(path: str | os.PathLike[str], name: str, chunk: int = 2**20) -> None:
    """:func:`check_text` over a file read in chunks (a large CSV is never held twice)."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    try:
        with open_regular(path, name) as handle:
            while block := handle.read(chunk):
                if b"\0" in block:
                    raise InputError(f"{name}: is a binary file (NUL bytes), not text")
                try:
                    decoder.decode(block)
                except UnicodeDecodeError as exc:
                    raise InputError(f"{name}: is not UTF-8 text (byte {offset + exc.start})") from None
                offset += len(block)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise InputError(f"{name}: is not UTF-8 text (it ends inside a character)") from None
    except OSError as exc:
        raise InputError(f"{name}: cannot be read: {exc.strerror or first_line(exc)}") from None
