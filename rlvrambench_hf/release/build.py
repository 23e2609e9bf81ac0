"""Build a Hub-ready release folder from a source: typed Parquet, card, Croissant and ``release.json``.

The build is deterministic: the same source gives byte-identical files except the build time in
``release.json``. The folder is assembled in a temporary sibling and renamed into place only when complete.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pyarrow.parquet as pq

from ..data.schema.pins import CARD_PATH, DEFAULT_REPO_ID
from ..data.schema.registry import card_configs
from ..data.schema.spec import ConfigSpec
from ..data.sources.base import Source
from ..data.sources.hub import HubSource
from ..data.sources.resolve import SourceLike, open_source
from ..data.tables.output import check_outputs, new_folder, pid_alive
from ..data.tables.reader import decode_labels, load_table
from ..errors import InputError, OutputError
from .card import render_card
from .croissant import render_croissant
from .evalresults import eval_yaml_text
from .layout import (
    CROISSANT_PATH,
    EVAL_YAML_PATH,
    RECORD_FORMAT,
    RECORD_PATH,
    BuiltConfig,
    check_version,
    digest_file,
    folder_files,
    is_generated,
    parquet_path,
)
from .parquet import storage_table, write_release_parquet

CITATION_PATH = "CITATION.cff"


@dataclass(frozen=True)
class BuildResult:
    folder: Path
    version: str
    built: list[BuiltConfig]
    absent: list[ConfigSpec]
    files: int


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rlvrambench-hf")
    except PackageNotFoundError:
        return "unknown"


def upstream_release(src: Source) -> dict[str, Any] | None:
    """The upstream ``release.json`` a source carries (a previous build keeps it under ``source_release``)."""
    if not src.has(RECORD_PATH):
        return None
    data = src.read_json(RECORD_PATH)
    if isinstance(data, dict) and data.get("format") == RECORD_FORMAT:
        return data.get("source_release")
    return data if isinstance(data, dict) else None


def provenance_text(src: Source, upstream: dict[str, Any] | None) -> str:
    identity = src.identity
    if identity.get("commit"):
        origin = f"the Hub repository `{identity['source']}` at commit `{identity['commit']}`"
        if identity.get("revision") and identity["revision"] != identity["commit"]:
            origin += f" (revision `{identity['revision']}`)"
    else:
        origin = "a local copy of the release files"
    text = (
        f"Built by rlvrambench-hf {package_version()} from {origin}. `release.json` records the source, "
        "the package version and the SHA-256 digest and size of every file; `croissant.json` describes "
        "every config in Croissant."
    )
    if upstream and upstream.get("release"):
        text += (
            f" The measurements are those of the upstream release `{upstream['release']}`"
            f" (source commit `{upstream.get('source_commit')}`)."
        )
    return text


def build_release(
    output: str | os.PathLike[str],
    version: str,
    source: SourceLike = None,
    revision: str | None = None,
    *,
    repo_id: str | None = None,
    overwrite: bool = False,
    built_at: datetime | None = None,
) -> BuildResult:
    """Build the release ``version`` of ``source`` into the folder ``output``."""
    version = check_version(version)
    target = Path(output).expanduser().absolute()
    src = open_source(source, revision)
    check_outputs(folders=[target], source=src)
    if target.parent.is_dir():
        _recover(target)
    _check_target(target, overwrite)
    if repo_id is None:
        repo_id = src.repo_id if isinstance(src, HubSource) else DEFAULT_REPO_ID
    with new_folder(target.parent):  # missing folders above the output are created, and removed on a failure
        work = Path(tempfile.mkdtemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".building", dir=target.parent))
        try:
            result = _assemble(work, src, version, repo_id, built_at or datetime.now(UTC))
            _replace(work, target)
        except OSError as exc:  # a full disk, a file-size limit: nothing half-written stays
            shutil.rmtree(work, ignore_errors=True)
            why = exc.strerror or exc
            raise OutputError(f"cannot build the release into {target}: {why}; nothing was written") from None
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
    return BuildResult(target, version, result[0], result[1], result[2])


@dataclass(frozen=True)
class Release:
    """What a build renders its generated files from: the source, the version and the configs it wrote."""

    source: Source
    version: str
    repo_id: str
    built: list[BuiltConfig]
    absent: list[ConfigSpec]


def croissant_text(release: Release) -> str:
    document = render_croissant(
        release.built, version=release.version, date_published=release_date(release.source), repo_id=release.repo_id
    )
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def card_text(release: Release) -> str:
    return render_card(
        release.built,
        version=release.version,
        provenance=provenance_text(release.source, upstream_release(release.source)),
        absent=release.absent,
        source_metadata=_source_card_metadata(release.source),
        repo_id=release.repo_id,
    )


#: The files a build renders once the Parquet files are written, by release path, in order. Another generated file
#: is one more entry here, with its path in ``layout.GENERATED`` so that a build never copies it from its source.
RENDERED: dict[str, Callable[[Release], str]] = {
    CROISSANT_PATH: croissant_text,
    CARD_PATH: card_text,
    EVAL_YAML_PATH: lambda _release: eval_yaml_text(),
}


def write_config(src: Source, spec: ConfigSpec, folder: Path) -> BuiltConfig:
    """Write the release Parquet file of ``spec`` (labels as their names) from the typed table of ``src``."""
    rel = parquet_path(spec)
    write_release_parquet(decode_labels(load_table(spec.name, src), spec), spec, folder / rel)
    written = pq.read_table(folder / rel)
    return BuiltConfig(spec, written.num_rows, storage_table(written, spec).nbytes, rel, digest_file(folder / rel))


def _assemble(
    work: Path, src: Source, version: str, repo_id: str, built_at: datetime
) -> tuple[list[BuiltConfig], list[ConfigSpec], int]:
    for rel in src.list_files():
        if is_generated(rel):
            continue
        dest = work / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src.path(rel), dest)

    specs = list(card_configs())
    absent = [spec for spec in specs if not src.has(spec.path)]
    built = [write_config(src, spec, work) for spec in specs if spec not in absent]
    release = Release(src, version, repo_id, built, absent)
    for rel, render in RENDERED.items():
        (work / rel).write_text(render(release), encoding="utf-8")

    files = {rel: digest_file(work / rel).as_json() for rel in folder_files(work) if rel != RECORD_PATH}
    record = {
        "format": RECORD_FORMAT,
        "version": version,
        "repo_id": repo_id,
        "built_at": built_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "package": {"name": "rlvrambench-hf", "version": package_version()},
        "source": src.identity,
        "source_release": upstream_release(src),
        "configs": {
            b.spec.name: {
                "split": b.spec.split,
                "path": b.path,
                "num_examples": b.num_examples,
                "num_bytes": b.num_bytes,
            }
            for b in built
        },
        "absent_configs": {s.name: s.path for s in absent},
        "files": files,
    }
    (work / RECORD_PATH).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return built, absent, len(files) + 1


def release_date(src: Source) -> str | None:
    """The ``date-released`` of the source's ``CITATION.cff`` (a date that does not change between builds)."""
    if not src.has(CITATION_PATH):
        return None
    text = src.path(CITATION_PATH).read_text(encoding="utf-8", errors="replace")
    match = re.search(r"^date-released:\s*[\"']?(\d{4}-\d{2}-\d{2})", text, re.M)
    return match.group(1) if match else None


def _source_card_metadata(src: Source) -> dict[str, Any]:
    try:
        return src.card_metadata
    except Exception:  # a card without usable metadata falls back to the defaults
        return {}


def _check_target(target: Path, overwrite: bool) -> None:
    if target.exists() and not target.is_dir():
        raise InputError(f"output {target} exists and is not a folder")
    if target.is_dir() and any(target.iterdir()):
        if not overwrite:
            raise InputError(f"output folder {target} is not empty (use --overwrite to replace a previous build)")
        if not _is_build(target):
            raise InputError(f"output folder {target} is not a previous release build; refusing to replace it")


def _is_build(folder: Path) -> bool:
    try:
        return cast(
            "bool", json.loads((folder / RECORD_PATH).read_text(encoding="utf-8")).get("format") == RECORD_FORMAT
        )
    except (OSError, ValueError, AttributeError):
        return False


def _recover(target: Path) -> None:
    """Undo what a build killed in the middle left beside ``target``: its unfinished work folder, and a previous
    build it had moved aside (put back when ``target`` is missing, else removed)."""
    pattern = re.compile(rf"^\.{re.escape(target.name)}\.(?:(\d+)\..+\.building|old-(\d+))$")
    for entry in target.parent.iterdir():
        match = pattern.match(entry.name)
        if match is None or not entry.is_dir() or pid_alive(int(match.group(1) or match.group(2))):
            continue
        if match.group(2) and not target.exists():
            os.replace(entry, target)
        else:
            shutil.rmtree(entry, ignore_errors=True)


def _replace(work: Path, target: Path) -> None:
    work.chmod(0o755)
    if not target.exists():
        os.replace(work, target)
        return
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    os.replace(target, old)
    os.replace(work, target)
    shutil.rmtree(old, ignore_errors=True)
