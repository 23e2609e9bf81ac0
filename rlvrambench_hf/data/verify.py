"""Verification of a release: digests, seals, row counts, key uniqueness and the relations between tables.

:func:`verify_source` returns a list of :class:`Check` results and never raises for a finding; a finding is a
failed check. Files that a manifest or a seal lists but the revision lacks are reported as ``absent``, apart from
files that are present but corrupted (``failed``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

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
    kind: str  # digest, seal, rows, keys, relation, figure
    subject: str
    status: str
    detail: str = ""


def verify_source(source: Source) -> list[Check]:
    """Every check of the release at ``source``."""
    checks = _digest_checks(source) + seal_checks(source)
    tables, read = read_tables(source)
    return checks + read + _count_checks(source, tables) + _relation_checks(tables) + card_figures(source, tables)


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


# ---- the card's figures --------------------------------------------------------------------------------------------

#: The study of the 24 batch-by-logging controls that the card counts beside the original corpus.
CONTROL_STUDY = "batch_logging_control"
EXTENSION_STUDY = "temporal_100"
NOT_REPEATED = "not_repeated"


def card_figures(source: Source, tables: dict[str, pa.Table]) -> list[Check]:
    """The figures the dataset card and its data dictionary state about the static tables, each counted from the
    typed tables in the card's wording (kind ``figure``): ``failed`` where the release's own ``summary.json``
    publishes another number, ``absent`` where a table is missing."""
    summary = _summary(source)
    rows = {name: decode_labels(t, REGISTRY[name]).to_pylist() for name, t in tables.items()}
    return [
        _split_figure(rows, "eligible_runs", summary.get("eligible_processes"), "eligible processes"),
        _split_figure(rows, "recorded_attempts", summary.get("recorded_attempts"), "recorded attempts"),
        _source_screens_figure(source, summary),
        _not_repeated_figure(rows),
        _extension_figure(rows, summary),
        pool_figure(tables["all_configurations"])
        if "all_configurations" in tables
        else Check("figure", "estimation pool", ABSENT, "configuration_results.csv is not in this revision"),
    ]


def _summary(source: Source) -> dict[str, Any]:
    try:
        summary = source.read_json("benchmark/summary.json")
    except MissingFileError:
        return {}
    return summary if isinstance(summary, dict) else {}


def _split_figure(rows: dict[str, list[dict[str, Any]]], config: str, published: object, unit: str) -> Check:
    """612 eligible processes = the 588-process corpus + 24 controls; 683 attempts = 657 original + 26 controls."""
    if config not in rows:
        return Check("figure", unit, ABSENT, f"{REGISTRY[config].path} is not in this revision")
    total = len(rows[config])
    controls = sum(r["study"] == CONTROL_STUDY for r in rows[config])
    if config == "eligible_runs":
        text = f"{total} {unit}: the original {total - controls}-process corpus and {controls} completed "
        text += "batch-by-logging controls"
    else:
        text = f"{total} {unit}: {total - controls} original attempts and {controls} started controls"
    status = PASSED if published in (None, total) else FAILED
    return Check("figure", unit, status, text + ("" if status == PASSED else f"; summary.json says {published}"))


def _source_screens_figure(source: Source, summary: dict[str, Any]) -> Check:
    """Sixteen historical source screens, counted separately from the static totals."""
    published = summary.get("historical_source_screens_counted_separately")
    try:
        record = source.read_json("release.json")
    except MissingFileError:
        record = {}
    pinned = record.get("supporting_source_processes") if isinstance(record, dict) else None
    if published is None and pinned is None:
        return Check("figure", "historical source screens", ABSENT, "neither summary.json nor release.json counts them")
    agree = published is None or pinned is None or published == pinned
    text = (
        f"{published if published is not None else pinned} historical source screens counted separately, not added "
        "to these totals (summary.json historical_source_screens_counted_separately, release.json "
        "supporting_source_processes; archival table profiles/standard_grpo/historical-temporal-source-trials.csv)"
    )
    return Check("figure", "historical source screens", PASSED if agree else FAILED, text)


def _not_repeated_figure(rows: dict[str, list[dict[str, Any]]]) -> Check:
    """The twelve single-process sampling-calibration settings labelled ``not_repeated``."""
    if "all_configurations" not in rows:
        return Check("figure", NOT_REPEATED, ABSENT, "configuration_results.csv is not in this revision")
    single = [r for r in rows["all_configurations"] if r["observed_state"] == NOT_REPEATED]
    studies = ", ".join(sorted({str(r["study"]) for r in single})) or "none"
    in_tasks = sum(bool(r["used_in_transfer_tasks"]) for r in single)
    text = f"{len(single)} single-process calibration settings labelled {NOT_REPEATED} (study {studies}); "
    text += f"{in_tasks} of them in the transfer tasks"
    return Check("figure", NOT_REPEATED, PASSED if in_tasks == 0 else FAILED, text)


def _extension_figure(rows: dict[str, list[dict[str, Any]]], summary: dict[str, Any]) -> Check:
    """The original 100-step extension: 12 of 14 attempts complete; the two excluded ones stop at steps 63 and 77."""
    subject = "100-step extension"
    if "recorded_attempts" not in rows or "eligible_runs" not in rows:
        return Check("figure", subject, ABSENT, "attempts.csv or runs.csv is not in this revision")
    attempts = [r for r in rows["recorded_attempts"] if r["study"] == EXTENSION_STUDY]
    complete = sum(bool(r["documented_completion"]) for r in attempts)
    stops = sorted(
        (r["last_completed_step_if_documented"] for r in attempts if not r["eligible"]),
        key=lambda step: (step is None, step or 0),
    )
    runs = [r for r in rows["eligible_runs"] if r["study"] == EXTENSION_STUDY]
    within = sum(r["observed_state"] == "within_margin" for r in runs)
    shown = " and ".join("unknown" if s is None else str(s) for s in stops)
    text = f"original 100-step extension: {complete} of {len(attempts)} attempts complete; "
    text += f"{len(stops)} excluded attempts stop after steps {shown}; {within} of {len(runs)} eligible outcomes "
    text += "within_margin"
    published = sorted(
        (
            r.get("last_completed_step_if_documented")
            for r in summary.get("original_100_step_attempts") or []
            if isinstance(r, dict)
        ),
        key=lambda step: (step is None, step if isinstance(step, int) else 0),
    )
    agree = not published or published == stops
    text += "" if agree else f"; summary.json: {published}"
    return Check("figure", subject, PASSED if agree else FAILED, text)


#: The studies of the estimation comparison's fitting pool (the same as ``estimation.folds.POOL_STUDIES``; data sits
#: below estimation, so the tuple is restated here and a test keeps the two equal).
POOL_STUDIES = ("boundary", "four_gpu")
_POOL_NAMES = {"boundary": "boundary", "four_gpu": "four-GPU"}


def pool_figure(configurations: pa.Table) -> Check:
    """The estimation pool as the card's estimator guide states it: 90 historical configurations, 72 boundary
    settings and 18 four-GPU settings; every fold withholds one family's 30 and fits on the other 60."""
    rows = decode_labels(configurations, REGISTRY["all_configurations"]).to_pylist()
    pool = [r for r in rows if r["study"] in POOL_STUDIES]
    by_study = Counter(r["study"] for r in pool)
    families = Counter(r["model_family"] for r in pool)
    parts = " and ".join(f"{by_study[s]} {_POOL_NAMES[s]}" for s in POOL_STUDIES)
    text = f"estimation pool: {len(pool)} historical configurations, {parts} settings"
    sizes = sorted(set(families.values()))
    if len(sizes) == 1:
        text += f"; each of the {len(families)} folds fits on {len(pool) - sizes[0]} and tests {sizes[0]}"
    return Check("figure", "estimation pool", PASSED, text)
