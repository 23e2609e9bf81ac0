"""Verification of a release: digests, seals, row counts, key uniqueness and the relations between tables.

:func:`verify_source` returns a list of :class:`Check` results and never raises for a finding; a finding is a
failed check. Files that a manifest or a seal lists but the revision lacks are reported as ``absent``, apart from
files that are present but corrupted (``failed``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import MissingFileError, RLVRAMBenchError
from .relations import relation_findings
from .schema.pins import MANIFESTS
from .schema.registry import REGISTRY
from .sealed import ABSENT as SEAL_ABSENT
from .sealed import MATCHES, seal_findings
from .sources.base import Source, sha256_file
from .tables.reader import decode_labels, read_typed_file

PASSED, FAILED, ABSENT = "passed", "failed", "absent"
# summary.json count → configs whose row count it gives
_SUMMARY_COUNTS = {
    "configurations": ("configurations", "outcomes", "all_configurations"),
    "eligible_processes": ("eligible_runs",),
    "recorded_attempts": ("recorded_attempts",),
    "never_started_conditions": ("not_started_conditions",),
    "stage_measurements": ("stage_measurements",),
    "transfer_configurations": ("transfer_configurations",),
    "queries": ("transfer_queries",),
}


@dataclass(frozen=True)
class Check:
    kind: str  # digest, seal, rows, keys, relation
    subject: str
    status: str
    detail: str = ""


def verify_source(source: Source) -> list[Check]:
    """Every check of the release at ``source``."""
    checks = _digest_checks(source) + seal_checks(source)
    tables, read = read_tables(source)
    return checks + read + _count_checks(source, tables) + _relation_checks(tables)


def consistency_checks(source: Source) -> list[Check]:
    """The checks that need no manifest: seals, every table typed with unique keys, and every declared relation
    (what ``release verify`` adds to its own digests for a built release folder)."""
    tables, read = read_tables(source)
    return seal_checks(source) + read + _relation_checks(tables)


def read_tables(source: Source) -> tuple[dict[str, pa.Table], list[Check]]:
    """Every registry table ``source`` has, typed, with one check each (absent, unreadable, or its keys)."""
    tables: dict[str, pa.Table] = {}
    checks = []
    for spec in REGISTRY.values():
        try:
            tables[spec.name] = read_typed_file(source.path(spec.path, verify=False), spec)
        except MissingFileError:
            checks.append(Check("rows", spec.name, ABSENT, f"{spec.path} is not in this revision"))
            continue
        except RLVRAMBenchError as exc:
            checks.append(Check("rows", spec.name, FAILED, str(exc)))
            continue
        checks.append(_key_check(spec.name, tables[spec.name], spec.keys))
    return tables, checks


def _digest_checks(source: Source) -> list[Check]:
    checks = []
    for manifest, _folder in MANIFESTS:
        if not source.has(manifest):
            checks.append(Check("digest", manifest, ABSENT, "manifest not in this revision"))
    try:
        digests = source.published_digests
    except RLVRAMBenchError as exc:
        return checks + [Check("digest", "manifests", FAILED, str(exc))]
    for rel, expected in sorted(digests.items()):
        try:
            path = source.path(rel, verify=False)
        except MissingFileError:
            checks.append(Check("digest", rel, ABSENT, "listed in a manifest but absent from this revision"))
            continue
        except RLVRAMBenchError as exc:  # a cached copy that is corrupted and cannot be fetched again
            checks.append(Check("digest", rel, FAILED, str(exc)))
            continue
        size = path.stat().st_size
        if expected.size_bytes is not None and size != expected.size_bytes:
            checks.append(Check("digest", rel, FAILED, f"size {size} bytes, manifest says {expected.size_bytes}"))
        elif sha256_file(path) != expected.sha256:
            checks.append(Check("digest", rel, FAILED, "SHA-256 differs from the manifest"))
        else:
            checks.append(Check("digest", rel, PASSED))
    return checks


def seal_checks(source: Source) -> list[Check]:
    """One check per file a seal of the release records (:mod:`.sealed`): matching, corrupted or listed but absent."""
    checks = []
    for f in seal_findings(source):
        status = PASSED if f.status == MATCHES else ABSENT if f.status == SEAL_ABSENT else FAILED
        if status == PASSED:
            detail = "sealed output" if f.outputs else ""
        else:
            detail = f.message if status == FAILED else "listed by the seal but absent from this revision"
        checks.append(Check("seal", f"{f.seal}: {f.file}", status, detail))
    return checks


def _key_check(name: str, table: pa.Table, keys: tuple[str, ...]) -> Check:
    if not keys:  # a table of one record
        status = PASSED if table.num_rows == 1 else FAILED
        return Check("keys", name, status, f"{table.num_rows} record(s), one expected")
    rows = list(zip(*(table.column(k).to_pylist() for k in keys)))
    nulls = sum(1 for row in rows if any(v is None for v in row))
    duplicates = [k for k, n in Counter(rows).items() if n > 1]
    label = "+".join(keys)
    if nulls or duplicates:
        example = f"; e.g. {duplicates[0]}" if duplicates else ""
        return Check("keys", name, FAILED, f"{label}: {nulls} null and {len(duplicates)} duplicated key(s){example}")
    return Check("keys", name, PASSED, f"{table.num_rows} rows, {label} unique")


def _count_checks(source: Source, tables: dict[str, pa.Table]) -> list[Check]:
    try:
        summary = source.read_json("benchmark/summary.json")
    except MissingFileError:
        return [Check("rows", "benchmark/summary.json", ABSENT, "no published counts to compare with")]
    checks = []
    for field, configs in _SUMMARY_COUNTS.items():
        expected = summary.get(field) if isinstance(summary, dict) else None
        for config in configs:
            if config not in tables or expected is None:
                continue
            found = tables[config].num_rows
            status = PASSED if found == expected else FAILED
            checks.append(Check("rows", config, status, f"{found} rows; summary.json {field} = {expected}"))
    if "all_configurations" in tables and "transfer_configurations" in tables:
        used = pc.sum(tables["all_configurations"].column("used_in_transfer_tasks")).as_py()
        found = tables["transfer_configurations"].num_rows
        checks.append(
            Check(
                "rows",
                "transfer_configurations",
                PASSED if used == found else FAILED,
                f"{found} rows; {used} configurations marked used_in_transfer_tasks",
            )
        )
    return checks


def _relation_checks(tables: dict[str, pa.Table]) -> list[Check]:
    """Every foreign key and copied column the registry declares (:mod:`.relations`), and that each transfer
    query crosses cases."""
    decoded = {name: decode_labels(table, REGISTRY[name]) for name, table in tables.items()}
    checks = [
        Check("relation", f.relation, PASSED if f.problem is None else FAILED, f.problem or f"{f.rows} rows")
        for f in relation_findings(decoded)
    ]
    if "transfer_queries" in tables:
        queries = tables["transfer_queries"]
        same = pc.equal(queries.column("source_case_id"), queries.column("target_case_id"))
        crossing = pc.sum(same).as_py() or 0
        detail = f"{crossing} queries whose source and target are in the same case" if crossing else ""
        checks.append(Check("relation", "transfer_queries cross cases", FAILED if crossing else PASSED, detail))
    return checks
