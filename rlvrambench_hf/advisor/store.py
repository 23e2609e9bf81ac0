"""Where the advisor keeps what it computed from a release between runs, and how an entry is trusted.

Entries live in huggingface_hub's assets folder (``cached_assets_path("rlvrambench_hf", "advisor")``: under
``$HF_ASSETS_CACHE``, by default ``$HF_HOME/assets``, itself under ``$XDG_CACHE_HOME/huggingface`` unless
``HF_HOME`` says otherwise), so they are found, listed and removed with the rest of a user's Hugging Face cache.
Each entry is one file, written atomically (a temporary file renamed into place), that starts with a line naming its
kind, then one JSON line (its header: what it was made from and the SHA-256 of the payload), then the payload.
An entry is used only when it is this user's own file (or the administrator's) that no one else may write, its kind
and format are the ones asked for and its payload has the digest its header states; anything else (a truncated,
edited or foreign file) is ignored as if absent, and the next write replaces it. A folder that cannot be created or
written (a read-only cache) costs the next run the work again, never an error.

Objects are stored with :mod:`pickle` (:func:`dump_objects`), and read back (:func:`load_objects`) by an unpickler
that makes nothing but the package's own classes, numpy arrays and pyarrow tables: a payload naming anything else
is refused as untrusted, never run.

What is derived from a release (:func:`load_derived`: the advisor's context, the measured workloads and levels) is
keyed by the release, the package's code and the numerical stack, and used only while every file its build read
(manifests, the card and files found absent included) has the SHA-256 it had; what is derived from one file
(:func:`load_parsed`: VERL's packaged trainer config) is keyed by the file's SHA-256 and the code that parses it.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import pickle
import stat
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..data.schema.pins import CARD_PATH, MANIFESTS
from ..errors import quote

if TYPE_CHECKING:
    from ..data.sources.base import Source

T = TypeVar("T")

LIBRARY = "rlvrambench_hf"
NAMESPACE = "advisor"
#: The first bytes of every entry, before its kind.
MAGIC = b"rlvrambench-hf store "
#: What a stored payload may make besides the package's own classes: numpy arrays and pyarrow arrays and tables
#: (the functions their pickles are rebuilt with), by module.
REBUILDERS = {
    "numpy": {"dtype", "ndarray"},
    "numpy._core.numeric": {"_frombuffer"},
    "numpy._core.multiarray": {"_reconstruct", "scalar"},
    "numpy.core.numeric": {"_frombuffer"},
    "numpy.core.multiarray": {"_reconstruct", "scalar"},
    "pyarrow.lib": {
        "_reconstruct_table",
        "_reconstruct_record_batch",
        "_restore_array",
        "chunked_array",
        "field",
        "py_buffer",
        "schema",
        "type_for_alias",
        "list_",
        "large_list",
        "struct",
        "dictionary",
        "timestamp",
    },
}


def folder() -> Path | None:
    """The store's folder (created when missing), or None where none can be made."""
    try:
        from huggingface_hub import cached_assets_path

        return cached_assets_path(LIBRARY, NAMESPACE)
    except (OSError, ValueError):
        return None


def read_entry(name: str, kind: str) -> tuple[dict[str, Any], bytes] | None:
    """The header and payload of the entry ``name`` of ``kind``, or None when it is absent or not to be trusted."""
    where = folder()
    if where is None:
        return None
    try:
        with open(where / name, "rb") as handle:
            if not _trusted(os.fstat(handle.fileno())):
                return None
            data = handle.read()
    except OSError:
        return None
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


def write_entry(name: str, kind: str, header: dict[str, Any], payload: bytes) -> bool:
    """Write the entry ``name`` atomically (False when the store cannot be written: nothing is left behind)."""
    from ..data.tables.output import write_atomic
    from ..errors import RLVRAMBenchError

    where = folder()
    if where is None:
        return False
    line = json.dumps({**header, "payload_sha256": hashlib.sha256(payload).hexdigest()}, sort_keys=True)
    try:
        write_atomic(where / name, MAGIC + kind.encode() + b"\n" + line.encode() + b"\n" + payload)
    except RLVRAMBenchError:
        return False
    return True


def entry_name(prefix: str, *parts: object) -> str:
    """A file name for an entry keyed by ``parts`` (their digest), ``<prefix>-<32 hex digits>``."""
    digest = hashlib.sha256("\n".join(str(p) for p in parts).encode()).hexdigest()
    return f"{prefix}-{digest[:32]}"


@functools.cache
def code_signature() -> str:
    """A digest of the package's installed code (every module's path, size and modification time): an entry made by
    other code, as after editing an editable install, is not used. Computed once per process (the code a process
    runs does not change under it)."""
    return folder_signature(Path(__file__).resolve().parents[1], (".py",))


def library_signature(name: str) -> str:
    """A digest of the files of the installed top-level package ``name`` (see :func:`folder_signature`), found
    without importing it."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    return folder_signature(Path(folders[0]), (".py", ".so", ".pyd")) if folders else f"{name} not found"


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


def dump_objects(value: object, persistent: Mapping[str, object]) -> bytes:
    """``value`` pickled, each object of ``persistent`` (by identity) stored as its name only."""
    names = {id(v): k for k, v in persistent.items()}

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj: object) -> str | None:
            return names.get(id(obj))

    buffer = io.BytesIO()
    Pickler(buffer, protocol=5).dump(value)
    return buffer.getvalue()


def load_objects(payload: bytes, persistent: Mapping[str, object]) -> object:
    """What :func:`dump_objects` stored, the names of ``persistent`` replaced by its objects; raises
    :class:`pickle.UnpicklingError` for anything but the package's classes, numpy and pyarrow."""

    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            found = super().find_class(module, name) if _allowed(module, name) else None
            if found is None or (module.startswith(f"{LIBRARY}.") and not isinstance(found, type)):
                raise pickle.UnpicklingError(f"{module}.{name} is not something the advisor stores")
            return found

        def persistent_load(self, pid: Any) -> object:
            if pid not in persistent:
                raise pickle.UnpicklingError(f"unknown stored reference {quote(pid)}")
            return persistent[pid]

    return Unpickler(io.BytesIO(payload)).load()


def _allowed(module: str, name: str) -> bool:
    return module.startswith(f"{LIBRARY}.") or name in REBUILDERS.get(module, ())


def load_parsed(kind: str, version: int, key: Sequence[str], parse: Callable[[], T], expected: type[T]) -> T:
    """What ``parse`` makes of one file, from the store when the same ``key`` (the file's SHA-256 and whatever else
    the result depends on; the package's code is added) made it before, else parsed (and stored). Only plain
    values are stored (a result that does not read back through :func:`load_objects` is not)."""
    name = entry_name(kind, version, *key, code_signature())
    entry = read_entry(name, kind)
    if entry is not None and entry[0].get("format") == version:
        try:
            found = load_objects(entry[1], {})
        except Exception:  # a payload that does not unpickle (a stale or damaged entry) is ignored
            pass
        else:
            if isinstance(found, expected):
                return found
    value = parse()
    payload = dump_objects(value, {})
    try:
        load_objects(payload, {})
    except pickle.UnpicklingError:
        return value  # something the store does not keep (a date of YAML's): parsed every time
    write_entry(name, kind, {"format": version}, payload)
    return value


def load_derived(kind: str, version: int, source: Source, build: Callable[[Source], T], expected: type[T]) -> T:
    """What ``build`` derives from the release ``source``: from the store when this release, code and numerical
    stack built it before (a local folder's entry only while every file the build read has the digest it had; a
    Hub revision's is the one of its commit), else built (and stored). ``source`` itself is stored by name only."""
    identity = source.identity
    name = entry_name(kind, version, json.dumps(identity, sort_keys=True), code_signature(), _stack())
    found = _stored(name, kind, version, source, identity)
    if isinstance(found, expected):
        return found
    with _recording(source) as read:
        value = build(source)
    if read is not None:
        _store(name, kind, version, source, identity, value, read)
    return value


def _stack() -> str:
    import numpy as np
    import pyarrow as pa

    return f"python {sys.version}; numpy {np.__version__}; pyarrow {pa.__version__}"


def _stored(name: str, kind: str, version: int, source: Source, identity: Mapping[str, str | None]) -> object:
    """The stored object ``name`` when it was built from this release as it is now (None: absent, untrusted or
    stale)."""
    entry = read_entry(name, kind)
    if entry is None:
        return None
    header, payload = entry
    files = header.get("files")
    if header.get("format") != version or header.get("source") != dict(identity) or not isinstance(files, dict):
        return None
    root = _local_root(source, identity)
    if root is not None and not _unchanged(root, files, header.get("stats") or {}):
        return None  # a local file changed, appeared or went away since: built afresh
    try:
        return load_objects(payload, {"source": source})
    except Exception:  # a payload that does not unpickle (a stale or damaged entry) is ignored
        return None


def _store(
    name: str,
    kind: str,
    version: int,
    source: Source,
    identity: Mapping[str, str | None],
    value: object,
    read: list[str],
) -> None:
    root = _local_root(source, identity)
    files = sorted({*read, CARD_PATH, *(manifest for manifest, _ in MANIFESTS)})
    header = {
        "format": version,
        "source": dict(identity),
        "files": {rel: _digest(root, rel) if root is not None else None for rel in files},
        "stats": {rel: sig for rel in files if root is not None and (sig := _signature(root / rel))},
    }
    write_entry(name, kind, header, dump_objects(value, {"source": source}))


def _unchanged(root: Path, files: Mapping[str, object], stats: Mapping[str, object]) -> bool:
    """Whether every file has the digest it had (None: still absent). A file whose device, inode, size and
    modification and change times are those recorded is not hashed again: the kernel moves its change time on
    every write, and no tool can set it back."""
    for rel, want in files.items():
        if want is not None and stats.get(rel) is not None and _signature(root / rel) == stats[rel]:
            continue
        if _digest(root, rel) != want:
            return False
    return True


def _signature(path: Path) -> str | None:
    try:
        st = path.stat()
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _local_root(source: Source, identity: Mapping[str, str | None]) -> Path | None:
    """The folder of a local release (None for a Hub revision: its commit pins every file)."""
    root = getattr(source, "root", None)
    return Path(root) if identity.get("commit") is None and root is not None else None


def _digest(root: Path, relpath: str) -> str | None:
    """The SHA-256 of a local release file as it is now (None: absent or a folder; ``unreadable``: never equal to a
    digest)."""
    from ..data.sources.base import sha256_file

    path = root / relpath
    try:
        return sha256_file(path) if path.is_file() else None
    except OSError:
        return "unreadable"


@contextmanager
def _recording(source: Source) -> Iterator[list[str] | None]:
    """The repository paths ``source`` fetches inside the block (what is built from it), by shadowing its fetch on
    this one object; None for a source whose fetch cannot be shadowed (then nothing is stored)."""
    fetch = source._fetch
    read: list[str] = []

    def recorded(relpath: str) -> Path:
        read.append(relpath)
        return fetch(relpath)

    own = getattr(source, "__dict__", None)
    if own is None:
        yield None
        return
    own["_fetch"] = recorded
    try:
        yield read
    finally:
        own.pop("_fetch", None)
