"""A model's files on this machine — a folder a user names (``/root/models/Qwen2.5-3B``) or a ``config.json`` in the
Hugging Face cache — read within stated bounds, every problem one line naming the file (exit status 2).

- ``config.json``: a regular file (a FIFO, a device, a socket or a folder is refused before a byte is read, and a
  FIFO never makes the open wait) of at most :data:`MAX_CONFIG_BYTES`, its size checked on the open handle; JSON
  nested at most :data:`~rlvrambench_hf.userfile.MAX_DEPTH` deep, integers of at most
  :data:`~rlvrambench_hf.userfile.MAX_INT_DIGITS` digits; a JSON object whose sizes (:data:`SIZE_FIELDS`) are
  whole numbers from 1 to 2**31 - 1.
- ``*.safetensors``: at most :data:`MAX_SHARDS` files, each regular; only the header is read — its length (the first
  8 bytes) within the file and at most :data:`MAX_HEADER`, JSON as above, an object whose tensors each have a
  ``dtype`` (text) and a ``shape`` (a list of at most :data:`MAX_RANK` whole numbers from 0 to :data:`MAX_DIM`).

What the counts derived from them are is :mod:`.hubmeta`'s.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError, RLVRAMBenchError, quote
from ..userfile import MAX_CONFIG_BYTES, content_of, open_regular, parse_json

#: Longest safetensors header read (the format allows 100 MB; a shard of the largest open models has well under 1 MB).
MAX_HEADER = 16 << 20
#: Most safetensors files a folder may hold (the largest open models ship a few hundred shards).
MAX_SHARDS = 10_000
#: Most dimensions of a tensor, and the largest dimension.
MAX_RANK, MAX_DIM = 8, 1 << 40
Tensors = dict[str, tuple[str, tuple[int, ...]]]
_READ: dict[tuple[object, ...], tuple[dict[str, Any], bytes, Tensors]] = {}


def local_model_folder(model: str) -> Path | None:
    """``model`` as a folder here holding a ``config.json`` (``~`` expanded), or None; a ``config.json`` that is
    there but cannot be read as a file (a FIFO, a device, a folder, another user's) is one line."""
    try:
        folder = Path(model).expanduser()
        if not (folder / "config.json").exists():
            return None
    except (OSError, ValueError):
        return None
    with open_regular(folder / "config.json", _label(folder, "config.json")):
        return folder


def read_config(path: Path, where: str, error: type[RLVRAMBenchError] = InputError) -> tuple[dict[str, Any], bytes]:
    """The JSON object of the ``config.json`` at ``path`` and its bytes (``where`` names it in errors)."""
    label = f"{where}: config.json"
    raw = content_of(str(path), label, MAX_CONFIG_BYTES)
    config = parse_json(raw, label, error)
    if not isinstance(config, dict):
        raise error(f"{label} is not a JSON object")
    return config, raw


#: The config.json fields that are sizes (counts of units, heads, layers, tokens): whole numbers from 1 to 2**31 - 1.
SIZE_FIELDS = (
    *("hidden_size", "intermediate_size", "num_attention_heads", "num_hidden_layers", "vocab_size"),
    *("num_key_value_heads", "head_dim", "max_position_embeddings"),
)
MAX_SIZE = 2**31 - 1


def checked_sizes(config: Mapping[str, Any], label: str) -> None:
    """Refuse a size field of ``config`` (or of its ``text_config``) that is not a whole number from 1 to
    :data:`MAX_SIZE` (``null`` is left to the fields' own defaults)."""
    for settings in (config, config.get("text_config")):
        if not isinstance(settings, Mapping):
            continue
        for key in SIZE_FIELDS:
            value = settings.get(key)
            if value is not None and not (type(value) is int and 1 <= value <= MAX_SIZE):
                raise InputError(f"{label}: {key} {quote(value)} is not a size (a whole number from 1 to 2**31 - 1)")


def read_local_model(folder: Path) -> tuple[dict[str, Any], bytes, Tensors]:
    """The config, its bytes and the tensors of the model ``folder`` (read once per state of its files)."""
    key = (str(folder), *(_state(path) for path in [folder / "config.json", *sorted(folder.glob("*.safetensors"))]))
    if key not in _READ:
        config, raw = read_config(folder / "config.json", f"model folder {quote(str(folder))}")
        checked_sizes(config, _label(folder, "config.json"))
        _READ[key] = (config, raw, safetensors_shapes(folder))
    return _READ[key]


def _state(path: Path) -> tuple[str, int, int]:
    try:
        found = os.stat(path)
    except OSError:
        return (path.name, 0, -1)
    return (path.name, found.st_mtime_ns, found.st_size)


def safetensors_shapes(folder: Path) -> Tensors:
    """``{tensor: (dtype, shape)}`` from the headers of the ``*.safetensors`` files in ``folder`` (the first 8 bytes
    give the header's length; no weights are read)."""
    tensors: Tensors = {}
    paths = sorted(folder.glob("*.safetensors"))
    if len(paths) > MAX_SHARDS:
        raise InputError(
            f"model folder {quote(str(folder))} holds {len(paths):,} safetensors files (at most {MAX_SHARDS:,})"
        )
    for path in paths:
        tensors.update(_header(path, _label(folder, path.name)))
    return tensors


def _header(path: Path, label: str) -> Tensors:
    with open_regular(path, label) as handle:
        size = os.fstat(handle.fileno()).st_size
        first = handle.read(8)
        if len(first) < 8:
            raise InputError(f"{label} is not a safetensors file: {size} bytes, fewer than its header's length takes")
        length = struct.unpack("<Q", first)[0]
        if not 0 < length <= min(MAX_HEADER, size - 8):
            beyond = f"beyond the file ({size:,} bytes)" if 0 < length <= MAX_HEADER else "not a header's"
            raise InputError(f"{label} is not a safetensors file: the header length it states ({length:,}) is {beyond}")
        raw = handle.read(length)
    return checked_tensors(parse_json(raw, f"{label}'s header"), label)


def checked_tensors(header: object, label: str) -> Tensors:
    """The tensors of a safetensors header (``{name: {"dtype": ..., "shape": [...]}}``; ``__metadata__`` skipped),
    or one line saying what in it is not one."""
    if not isinstance(header, Mapping):
        raise InputError(f"{label}: its header is {quote(header)}, not a JSON object of tensors")
    tensors: Tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = info.get("dtype") if isinstance(info, Mapping) else None
        shape = info.get("shape") if isinstance(info, Mapping) else None
        if not isinstance(dtype, str):
            raise InputError(f"{label}: tensor {quote(name)} has no dtype (found {quote(info)})")
        if not isinstance(shape, list) or len(shape) > MAX_RANK or not all(_dimension(d) for d in shape):
            raise InputError(
                f"{label}: tensor {quote(name)} has no shape of dimensions from 0 to 2**40 (its shape is "
                f"{quote(shape)}; at most {MAX_RANK} whole numbers)"
            )
        tensors[str(name)] = (dtype, tuple(shape))
    return tensors


def _dimension(value: object) -> bool:
    return type(value) is int and 0 <= value <= MAX_DIM


def _label(folder: Path, name: str) -> str:
    return f"model folder {quote(str(folder))}: {name}"
