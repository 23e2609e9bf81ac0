"""Where things live in a built release folder, and the digests that describe its files."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data.schema.pins import CARD_PATH
from ..data.schema.spec import ConfigSpec
from ..data.sources.base import file_hash, sha256_file
from ..errors import InputError, quote

RECORD_PATH = "release.json"
CROISSANT_PATH = "croissant.json"
#: The benchmark's task declaration for the Hub's evaluation results (:mod:`.evalresults`).
EVAL_YAML_PATH = "eval.yaml"
DATA_DIR = "data"
#: Marks a ``release.json`` written by this package (the upstream release has its own ``release.json``).
RECORD_FORMAT = "rlvrambench-hf-release/1"
#: Files every build regenerates instead of copying from its source.
GENERATED = (CARD_PATH, RECORD_PATH, CROISSANT_PATH, EVAL_YAML_PATH)
_VERSION = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")
_SKIPPED_PARTS = {".git", ".cache", ".huggingface"}


def parquet_path(spec: ConfigSpec) -> str:
    """The release path of a config's Parquet file (one shard per config and split)."""
    return f"{DATA_DIR}/{spec.name}/{spec.split}-00000-of-00001.parquet"


def is_generated(relpath: str) -> bool:
    """True for the files a build writes itself (card, records, Croissant, Parquet data) rather than copies."""
    return relpath in GENERATED or relpath.startswith(f"{DATA_DIR}/")


def check_version(version: str) -> str:
    """``version`` if it is ``X.Y.Z`` (a leading ``v`` is dropped), else a one-line :class:`InputError`."""
    bare = version[1:] if version.startswith("v") else version
    if not _VERSION.match(bare):
        raise InputError(f"version {quote(version)} is not of the form X.Y.Z (e.g. 1.1.0)")
    return bare


def folder_files(folder: Path) -> list[str]:
    """Every file of a release folder as sorted POSIX paths (git and cache metadata excluded)."""
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_PARTS)
        for name in files:
            out.append((Path(root) / name).relative_to(folder).as_posix())
    return sorted(out)


@dataclass(frozen=True)
class FileDigest:
    sha256: str
    size_bytes: int

    def as_json(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "size_bytes": self.size_bytes}


def digest_file(path: Path) -> FileDigest:
    return FileDigest(sha256_file(path), path.stat().st_size)


def git_blob_sha1(path: Path) -> str:
    """The git object id of a file's content (what the Hub reports for files not stored in LFS)."""
    return file_hash(path).git_sha1


@dataclass(frozen=True)
class BuiltConfig:
    """A config written to a release: its spec and the figures the card, Croissant and verifier state."""

    spec: ConfigSpec
    num_examples: int
    num_bytes: int  # in-memory Arrow size, as ``datasets`` reports it in ``dataset_info``
    path: str
    file: FileDigest
