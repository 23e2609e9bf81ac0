"""Where the advisor keeps what it computed between runs, and what it trusts of it.

Entries are those of :mod:`rlvrambench_hf.data.tables.kept` (huggingface_hub's assets folder, namespace
``advisor``: this user's own files, of the kind asked for, with the digest their header states; anything else is
ignored as if absent, and a folder that cannot be written costs the next run the work again, never an error).

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
import io
import json
import pickle
import stat
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..data.schema.pins import CARD_PATH, MANIFESTS
from ..data.tables import kept
from ..data.tables.kept import entry_name as entry_name  # the name of an entry, for the advisor's own kinds
from ..errors import quote

if TYPE_CHECKING:
    from ..data.sources.base import Source

T = TypeVar("T")

NAMESPACE = "advisor"
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
    return kept.assets_folder(NAMESPACE)


def read_entry(name: str, kind: str) -> tuple[dict[str, Any], bytes] | None:
    """The header and payload of the entry ``name`` of ``kind``, or None when it is absent or not to be trusted."""
    return kept.read_entry(folder(), name, kind)


def write_entry(name: str, kind: str, header: dict[str, Any], payload: bytes, *, on_success: bool = False) -> bool:
    """Write the entry ``name`` atomically (False when the store cannot be written: nothing is left behind);
    ``on_success``: when the command succeeds (:func:`~rlvrambench_hf.data.tables.kept.written_on_success`)."""
    return kept.write_entry(folder(), name, kind, header, payload, on_success=on_success)


@functools.cache
def code_signature() -> str:
    """A digest of the package's installed code (every module's path, size and modification time): an entry made by
    other code, as after editing an editable install, is not used. Computed once per process (the code a process
    runs does not change under it)."""
    return kept.folder_signature(Path(__file__).resolve().parents[1], (".py",))


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
            if found is None or (module.startswith(f"{kept.LIBRARY}.") and not isinstance(found, type)):
                raise pickle.UnpicklingError(f"{module}.{name} is not something the advisor stores")
            return found

        def persistent_load(self, pid: Any) -> object:
            if pid not in persistent:
                raise pickle.UnpicklingError(f"unknown stored reference {quote(pid)}")
            return persistent[pid]

    return Unpickler(io.BytesIO(payload)).load()


def _allowed(module: str, name: str) -> bool:
    return module.startswith(f"{kept.LIBRARY}.") or name in REBUILDERS.get(module, ())


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
    write_entry(name, kind, {"format": version}, payload, on_success=True)
    return value


def load_derived(
    kind: str,
    version: int,
    source: Source,
    build: Callable[[Source], T],
    expected: type[T],
    *,
    on_success: bool = False,
) -> T:
    """What ``build`` derives from the release ``source``: from the store when this release, code and numerical
    stack built it before (a local folder's entry only while every file the build read has the digest it had; a
    Hub revision's is the one of its commit), else built (and stored; ``on_success``: when the command succeeds).
    ``source`` itself is stored by name only."""
    identity = source.identity
    name = entry_name(kind, version, json.dumps(identity, sort_keys=True), code_signature(), _stack())
    found = _stored(name, kind, version, source, identity)
    if isinstance(found, expected):
        return found
    with _recording(source) as read:
        value = build(source)
    if read is not None:
        header, payload = _header(version, source, identity, read), dump_objects(value, {"source": source})
        write_entry(name, kind, header, payload, on_success=on_success)
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


def _header(version: int, source: Source, identity: Mapping[str, str | None], read: list[str]) -> dict[str, Any]:
    """What an entry derived from ``source`` was made from: the release, and each file read with its digest."""
    root = _local_root(source, identity)
    files = sorted({*read, CARD_PATH, *(manifest for manifest, _ in MANIFESTS)})
    return {
        "format": version,
        "source": dict(identity),
        "files": {rel: _digest(root, rel) if root is not None else None for rel in files},
        "stats": {rel: sig for rel in files if root is not None and (sig := _signature(root / rel))},
    }


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
