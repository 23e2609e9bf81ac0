"""What the package keeps between runs, and how a kept entry is trusted.

Entries live in huggingface_hub's assets folder (``cached_assets_path("rlvrambench_hf", NAMESPACE)``: under
``$HF_ASSETS_CACHE``, by default ``$HF_HOME/assets``, itself under ``$XDG_CACHE_HOME/huggingface`` unless
``HF_HOME`` says otherwise), so they are found, listed and removed with the rest of a user's Hugging Face cache.
Each entry is one file, written atomically (a temporary file renamed into place), that starts with a line naming its
kind, then one JSON line (its header: what it was made from and the SHA-256 of the payload), then the payload.
An entry is used only when it is this user's own file (or the administrator's) that no one else may write, its kind
is the one asked for and its payload has the digest its header states; anything else (a truncated, edited or
foreign file) is ignored as if absent, and the next write replaces it. A folder that cannot be created or written (a
read-only cache) costs the next run the work again, never an error. A command of the command line that fails
writes none of the entries it made on its way (:func:`written_on_success`) but the advisor's context and fit.

Kept here: the dataset cards read before (:data:`CARDS`, namespace ``sources``); the advisor keeps its own entries
(:mod:`rlvrambench_hf.advisor.store`, namespace ``advisor``).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

LIBRARY = "rlvrambench_hf"
#: The first bytes of every entry, before its kind.
MAGIC = b"rlvrambench-hf store "


def assets_folder(namespace: str) -> Path | None:
    """The folder of ``namespace``'s entries (created when missing), or None where none can be made."""
    try:
        from huggingface_hub import cached_assets_path

        return cached_assets_path(LIBRARY, namespace)
    except (OSError, ValueError):
        return None


#: Entries made inside :func:`written_on_success` to be written when it ends without an error (None: outside).
_PENDING: dict[Path, bytes] | None = None


@contextmanager
def written_on_success() -> Iterator[None]:
    """Inside the block (a command of the command line), entries written ``on_success`` are written only when it
    ends without an error, so that a command that fails leaves nothing new in the user's cache; they are read back
    inside it as if written."""
    global _PENDING
    outer, _PENDING = _PENDING, {}
    try:
        yield
        pending = _PENDING
    finally:
        _PENDING = outer
    for path, data in pending.items():
        _write(path, data)


def read_entry(where: Path | None, name: str, kind: str) -> tuple[dict[str, Any], bytes] | None:
    """The header and payload of the entry ``name`` of ``kind`` in the folder ``where``, or None when it is absent
    or not to be trusted."""
    if where is None:
        return None
    if _PENDING and where / name in _PENDING:
        return _parsed(_PENDING[where / name], kind)
    try:
        with open(where / name, "rb") as handle:
            if not _trusted(os.fstat(handle.fileno())):
                return None
            data = handle.read()
    except OSError:
        return None
    return _parsed(data, kind)


def _parsed(data: bytes, kind: str) -> tuple[dict[str, Any], bytes] | None:
    head, _, rest = data.partition(b"\n")
    line, _, payload = rest.partition(b"\n")
    if head != MAGIC + kind.encode():
        return None
    try:
        header = json.loads(line)
    except ValueError:
        return None
    if not isinstance(header, dict) or header.get("payload_sha256") != hashlib.sha256(payload).hexdigest():
        return None
    return header, payload


def _trusted(st: os.stat_result) -> bool:
    """An entry this user (or the administrator, in a read-only cache they prepared) owns and no one else may write:
    another user's file in a shared cache is never read."""
    return st.st_uid in (os.geteuid(), 0) and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def write_entry(
    where: Path | None, name: str, kind: str, header: dict[str, Any], payload: bytes, *, on_success: bool = False
) -> bool:
    """Write the entry ``name`` into the folder ``where`` atomically (False when it cannot be written: nothing is
    left behind); ``on_success``: inside :func:`written_on_success`, when its block ends without an error, and not
    at all outside one (a Python call has no end to wait for: what it would keep is not kept)."""
    if where is None or (on_success and _PENDING is None):
        return False
    line = json.dumps({**header, "payload_sha256": hashlib.sha256(payload).hexdigest()}, sort_keys=True)
    data = MAGIC + kind.encode() + b"\n" + line.encode() + b"\n" + payload
    if on_success and _PENDING is not None:
        _PENDING[where / name] = data
        return True
    return _write(where / name, data)


def _write(path: Path, data: bytes) -> bool:
    from ...errors import RLVRAMBenchError
    from .output import write_atomic

    try:
        write_atomic(path, data)
    except RLVRAMBenchError:
        return False
    return True


def entry_name(prefix: str, *parts: object) -> str:
    """A file name for an entry keyed by ``parts`` (their digest), ``<prefix>-<32 hex digits>``."""
    digest = hashlib.sha256("\n".join(str(p) for p in parts).encode()).hexdigest()
    return f"{prefix}-{digest[:32]}"


def library_signature(name: str) -> str:
    """A digest of the files of the installed top-level package ``name`` (see :func:`folder_signature`), found
    without importing it."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    return folder_signature(Path(folders[0]), (".py", ".so", ".pyd")) if folders else f"{name} not found"


def distribution_places(name: str) -> str | None:
    """Where :func:`importlib.metadata.version` looks for the distribution ``name`` (lower-case, as its folders are
    named), as it is now: every ``sys.path`` entry, what a folder among them holds whose name starts with ``name``
    (each entry's ``METADATA`` and ``PKG-INFO`` file with its inode, size and modification and change times: an
    install, a removal or an edit in place changes them) and any other entry's own times (a zip). Equal text: the
    same answer. None when a finder other than the standard path finder could name distributions (then nothing is
    to be kept)."""
    import importlib.machinery
    import sys

    finders = (getattr(finder, "find_distributions", None) for finder in sys.meta_path)
    if any(f is not None and f != importlib.machinery.PathFinder.find_distributions for f in finders):
        return None
    lines = [os.getcwd()]
    for entry in sys.path:
        root = entry or "."
        if not os.path.isdir(root):
            lines.append(f"{entry!r} {_stat_line(root)}")
            continue
        try:
            children = sorted(c for c in os.listdir(root) if c.lower().startswith(name))
        except OSError:
            lines.append(f"{entry!r} unlisted")
            continue
        egg = ["EGG-INFO"] if os.path.basename(os.path.normpath(root)).lower().startswith(name) else []
        lines.append(f"{entry!r} folder")
        for child in [*egg, *children]:
            lines += [f"  {child}/{inner} {_stat_line(os.path.join(root, child, inner))}" for inner in _METADATA]
    return "\n".join(lines)


_METADATA = ("METADATA", "PKG-INFO")


def _stat_line(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return "absent"
    return f"{st.st_mode}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def folder_signature(root: Path, suffixes: Sequence[str]) -> str:
    """A digest of the path, size and modification time of every file ending in one of ``suffixes`` under ``root``
    (``__pycache__`` aside)."""
    digest = hashlib.sha256()
    folders = [root]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        folders.append(Path(entry.path))
                elif entry.name.endswith(tuple(suffixes)):
                    st = entry.stat()
                    digest.update(f"{entry.path}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


class SeenCards:
    """The dataset cards whose front matter was read as a mapping before, each by the SHA-256 of its text with the
    code that reads it (:mod:`..schema.card` and PyYAML): :meth:`~..sources.base.Source.check_card` does not parse
    such a card again (PyYAML alone takes about 10 ms to import). A changed card is read anew, and its errors are
    the same."""

    NAMESPACE, KIND = "sources", "card"

    def seen(self, text: str) -> bool:
        """Whether a card of ``text`` was read as a mapping before."""
        return read_entry(assets_folder(self.NAMESPACE), self._name(text), self.KIND) is not None

    def passed(self, text: str) -> None:
        """Remember that a card of ``text`` was read as a mapping (when the command succeeds)."""
        write_entry(assets_folder(self.NAMESPACE), self._name(text), self.KIND, {}, b"", on_success=True)

    @staticmethod
    def _name(text: str) -> str:
        from ..schema import card

        reader = Path(card.__file__)
        st, digest = reader.stat(), hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        return entry_name("card", digest, f"{reader}:{st.st_size}:{st.st_mtime_ns}", library_signature("yaml"))


#: The cards read before (see :class:`SeenCards`).
CARDS = SeenCards()
