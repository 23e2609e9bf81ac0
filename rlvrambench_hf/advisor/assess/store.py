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
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import quote

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
    from ...data.tables.output import write_atomic
    from ...errors import RLVRAMBenchError

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


def code_signature() -> str:
    """A digest of the package's installed code (every module's path, size and modification time): an entry made by
    other code, as after editing an editable install, is not used."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    folders = [root]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        folders.append(Path(entry.path))
                elif entry.name.endswith(".py"):
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
