"""Verify a built release folder: digests, card YAML, Parquet layout and every column, Croissant, and the
consistency of its tables (seals, keys and every relation the registry declares).

:func:`verify_release` returns every problem found as a one-line message (an empty list means the release is
sound); :func:`check_release` raises a one-line :class:`IntegrityError` when there is any.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from ..data.schema.card import read_front_matter
from ..data.schema.pins import CARD_PATH, DEFAULT_REPO_ID
from ..data.schema.registry import card_configs
from ..data.schema.spec import ConfigSpec
from ..data.tables.reader import load_table
from ..errors import InputError, IntegrityError, RLVRAMBenchError, SchemaError, first_line, quote
from ..userfile import MAX_CONFIG_BYTES, content_of, parse_json
from .card import card_metadata, config_entries
from .croissant import render_croissant, validate_croissant
from .layout import (
    CROISSANT_PATH,
    RECORD_FORMAT,
    RECORD_PATH,
    BuiltConfig,
    FileDigest,
    digest_file,
    folder_files,
    parquet_path,
)
from .parquet import content_problems, layout_problems, release_schema, storage_table


@dataclass
class VerifyReport:
    folder: Path
    problems: list[str] = field(default_factory=list)
    files: int = 0
    configs: list[str] = field(default_factory=list)


def read_record(folder: Path) -> dict[str, Any]:
    """The release's ``release.json`` (one-line error when it is missing or not written by a build)."""
    path = folder / RECORD_PATH
    if not os.path.lexists(path):
        raise IntegrityError(f"{quote(str(folder))} has no {RECORD_PATH}; it is not a built release")
    try:  # a regular file of at most MAX_CONFIG_BYTES, checked on the open handle (a FIFO never makes it wait)
        content = content_of(str(path), quote(str(path)), MAX_CONFIG_BYTES)
    except InputError as exc:
        raise IntegrityError(str(exc)) from None
    record = parse_json(content, str(path), IntegrityError)
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        raise IntegrityError(f"{path} was not written by `rlvrambench release build` (format {RECORD_FORMAT})")
    if not isinstance(record.get("files"), dict):
        raise IntegrityError(f"{path} has no 'files' table")
    return record


def verify_release(folder: str | os.PathLike[str], *, croissant: bool = True) -> VerifyReport:
    """Every problem of the release in ``folder``; ``croissant=False`` skips the mlcroissant validator."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise InputError(f"release folder {folder} does not exist")
    record = read_record(folder)
    report = VerifyReport(folder)
    if not _check_digests(folder, record, report):
        return report  # a listed file that is not a regular file is read no further (a FIFO would wait forever)
    built = _check_parquet(folder, record, report)
    report.configs = [b.spec.name for b in built]
    _check_card(folder, built, report)
    _check_croissant(folder, record, built, report, validate=croissant)
    _check_consistency(folder, report)
    return report


def _check_consistency(folder: Path, report: VerifyReport) -> None:
    """The seals, keys and declared relations of the release's tables, as ``rlvrambench verify`` checks them."""
    from ..data.sources.local import LocalSource
    from ..data.verify import FAILED, consistency_checks

    try:
        source = LocalSource(folder)
    except RLVRAMBenchError as exc:  # no card: already a problem of its own
        report.problems.append(f"tables not checked: {exc}")
        return
    report.problems += [f"{c.subject}: {c.detail}" for c in consistency_checks(source) if c.status == FAILED]


class VerificationFailed(IntegrityError):
    """A release folder failed verification: the message names the first problem, ``problems`` lists them all."""

    def __init__(self, message: str, problems: list[str]) -> None:
        super().__init__(message)
        self.problems = problems


def check_release(folder: str | os.PathLike[str], *, croissant: bool = True) -> VerifyReport:
    """:func:`verify_release`, raising :class:`VerificationFailed` (first problem, count of others) on failure."""
    report = verify_release(folder, croissant=croissant)
    if report.problems:
        more = f" (and {len(report.problems) - 1} more problem(s))" if len(report.problems) > 1 else ""
        message = f"release {report.folder} failed verification: {report.problems[0]}{more}"
        raise VerificationFailed(message, report.problems)
    return report


def _check_digests(folder: Path, record: dict[str, Any], report: VerifyReport) -> bool:
    """The listed files' digests and the unlisted files; whether every listed file present could be read."""
    readable = True
    listed: dict[str, Any] = record["files"]
    present = set(folder_files(folder)) - {RECORD_PATH}
    report.files = len(present) + 1
    for rel in sorted(listed):
        entry = listed[rel]
        if rel not in present:
            report.problems.append(f"{rel}: listed in {RECORD_PATH} but absent")
            continue
        if not isinstance(entry, dict) or "sha256" not in entry or "size_bytes" not in entry:
            report.problems.append(f"{rel}: malformed entry in {RECORD_PATH}")
            continue
        try:
            found = digest_file(folder / rel)
        except OSError as exc:  # not a regular file (hashing never opens one that would block), or unreadable
            report.problems.append(f"{rel}: {str(exc).removeprefix(str(folder / rel)).strip()}")
            readable = False
            continue
        if found != FileDigest(entry["sha256"], entry["size_bytes"]):
            report.problems.append(f"{rel}: present but corrupted (SHA-256 or size differs from {RECORD_PATH})")
    for rel in sorted(present - set(listed)):
        report.problems.append(f"{rel}: in the folder but not listed in {RECORD_PATH}")
    return readable


def _check_parquet(folder: Path, record: dict[str, Any], report: VerifyReport) -> list[BuiltConfig]:
    """The configs with a Parquet file, after checking each file's schema, rows and content."""
    recorded = record.get("configs") or {}
    built = []
    for spec in card_configs():
        rel = parquet_path(spec)
        if not (folder / rel).is_file():
            if spec.name in recorded:
                report.problems.append(f"config {spec.name}: {rel} is missing")
            elif (folder / spec.path).is_file():
                report.problems.append(f"config {spec.name}: {spec.path} is present but has no Parquet file {rel}")
            continue
        config = _check_parquet_file(folder, spec, recorded.get(spec.name), report)
        if config is not None:
            built.append(config)
    for name in sorted(set(recorded) - {b.spec.name for b in built}):
        if name not in {s.name for s in card_configs()}:
            report.problems.append(f"{RECORD_PATH} names config {quote(name)}, which the registry does not know")
    return built


def _check_parquet_file(folder: Path, spec: ConfigSpec, meta: object, report: VerifyReport) -> BuiltConfig | None:
    """One config's Parquet file against the release layout, its record entry and the typed source file beside it."""
    rel = parquet_path(spec)
    try:
        table = pq.read_table(folder / rel)
    except Exception as exc:  # pyarrow raises several types for unreadable files
        report.problems.append(f"{rel}: not a readable Parquet file ({first_line(exc)})")
        return None
    layout = layout_problems(table, spec, rel)
    report.problems.extend(layout)
    if not isinstance(meta, dict) or meta.get("num_examples") != table.num_rows:
        stated = meta.get("num_examples") if isinstance(meta, dict) else "nothing"
        report.problems.append(f"{rel}: {table.num_rows} rows, {RECORD_PATH} states {stated}")
    columns_match = table.schema.remove_metadata() == release_schema(spec)
    if columns_match and (folder / spec.path).is_file():
        try:
            typed = load_table(spec.name, folder, decode=True)
        except RLVRAMBenchError as exc:
            report.problems.append(f"config {spec.name}: {exc}")
        else:
            report.problems.extend(content_problems(table, typed, spec, rel))
    num_bytes = storage_table(table, spec).nbytes if columns_match else table.nbytes
    return BuiltConfig(spec, table.num_rows, num_bytes, rel, digest_file(folder / rel))


def _check_card(folder: Path, built: list[BuiltConfig], report: VerifyReport) -> None:
    try:
        meta = read_front_matter((folder / CARD_PATH).read_text(encoding="utf-8"), str(folder / CARD_PATH))
    except FileNotFoundError:
        report.problems.append(f"{CARD_PATH}: missing")
        return
    except SchemaError as exc:
        report.problems.append(str(exc))
        return
    before = len(report.problems)
    found_configs = {c.get("config_name"): c for c in meta.get("configs") or [] if isinstance(c, dict)}
    expected_configs = {c["config_name"]: c for c in config_entries(built)}
    for name in sorted(set(found_configs) - set(expected_configs), key=str):
        report.problems.append(f"card: config {quote(name)} has no Parquet file in this release")
    for name, entry in expected_configs.items():
        if name not in found_configs:
            report.problems.append(f"card: config {name} is missing from 'configs'")
        elif found_configs[name] != entry:
            report.problems.append(f"card: 'configs' entry of {name} differs (split, path or default)")
    infos = {i.get("config_name"): i for i in meta.get("dataset_info") or [] if isinstance(i, dict)}
    for b in built:
        problem = _dataset_info_problem(b, infos.get(b.spec.name))
        if problem:
            report.problems.append(f"card: {problem}")
    if len(report.problems) == before and {k: v for k, v in meta.items()} != card_metadata(built, meta):
        report.problems.append("card: YAML front matter differs from what the registry and Parquet files give")


def _dataset_info_problem(b: BuiltConfig, info: Mapping[str, Any] | None) -> str | None:
    """What is wrong with one config's ``dataset_info`` entry of the card (None: nothing)."""
    from datasets.info import DatasetInfosDict

    name, split_name = b.spec.name, b.spec.split
    if info is None:
        return f"dataset_info of {name} is missing"
    try:
        (parsed,) = DatasetInfosDict.from_dataset_card_data({"dataset_info": [dict(info)]}).values()
    except Exception as exc:
        return f"dataset_info of {name} is malformed ({exc})"
    if parsed.features != b.spec.features:
        columns = [c for c in b.spec.column_names if (parsed.features or {}).get(c) != b.spec.features[c]]
        what = f"column(s) {', '.join(columns)}" if columns else "column set or order"
        return f"dataset_info features of {name} differ from the registry: {what}"
    split = (parsed.splits or {}).get(split_name)
    if split is None:
        return f"dataset_info of {name} has no split {split_name}"
    if split.num_examples != b.num_examples:
        return f"{name}/{split_name} states {split.num_examples} rows, the Parquet file has {b.num_examples}"
    if split.num_bytes != b.num_bytes:
        return f"{name}/{split_name} states num_bytes {split.num_bytes}, the Parquet data has {b.num_bytes}"
    return None


def _check_croissant(
    folder: Path, record: dict[str, Any], built: list[BuiltConfig], report: VerifyReport, *, validate: bool
) -> None:
    path = folder / CROISSANT_PATH
    try:
        document = parse_json(path.read_bytes(), CROISSANT_PATH, IntegrityError)
    except FileNotFoundError:
        report.problems.append(f"{CROISSANT_PATH}: missing")
        return
    except (OSError, IntegrityError) as exc:
        report.problems.append(f"{CROISSANT_PATH}: not valid JSON ({first_line(exc)})")
        return
    expected = render_croissant(
        built,
        version=str(record.get("version")),
        date_published=document.get("datePublished") if isinstance(document, dict) else None,
        repo_id=record.get("repo_id") or DEFAULT_REPO_ID,
    )
    if document != expected:
        report.problems.append(f"{CROISSANT_PATH}: differs from what the registry and Parquet files give")
    if validate:
        for problem in validate_croissant(str(path)):
            report.problems.append(f"{CROISSANT_PATH}: mlcroissant: {problem}")
