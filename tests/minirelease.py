"""A tiny release written from the registry: a few rows per table, a card, manifests, protocols and seals — the data
of the fast unit layer.

:func:`write_mini_release` lays out a folder like the Hub repository. Every registry table gets rows whose values
follow the column's kind (with blanks, the literal ``nan``, negative integers, lists of strings and of integers and
every label present), overridden where the cores read them by the world of :mod:`miniworld`: transfer
configurations and queries, an estimation pool and its targets, an admission panel and two follow-up panels with
their result records (:mod:`unit.miniadmission`, :mod:`unit.minipanels`). Each table is written in its layout: CSV,
a JSON mapping, a JSON list of records (a member of the file's object) or one JSON record, nested objects for
``outer.inner`` columns, several entries sharing one file. The tables agree with each other as the real release
does — every relation the registry declares holds, the counts of ``summary.json`` and of the panels' summaries
match, every file a manifest covers has its digest, and every seal the package declares records the digests of the
files it names (:mod:`unit.miniseals`). The typed rows and JSON documents written are returned beside the files, so
tests compare what the package reads with what was written.
"""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from unit import miniadmission, minipanels, miniseals

from rlvrambench_hf.data.schema.pins import MANIFESTS, OUTCOME_LABELS
from rlvrambench_hf.data.schema.registry import REGISTRY, card_configs
from rlvrambench_hf.data.schema.seals import SEALS
from rlvrambench_hf.data.schema.spec import JSON_MAPPING, JSON_OBJECT, JSON_RECORDS, NESTED, Column, ConfigSpec

import miniworld as world

SUMMARY = "benchmark/summary.json"


@dataclass
class MiniRelease:
    """The folder and, per config, the typed rows written into it (labels by name, blanks as None); ``documents``
    holds the other JSON files by repository path (the summary, and the seals but the collection summary, which is
    a table)."""

    root: Path
    rows: dict[str, list[dict]] = field(default_factory=dict)
    documents: dict[str, dict] = field(default_factory=dict)

    def path(self, config: str) -> Path:
        """The file of ``config``."""
        return self.root / REGISTRY[config].path


def value(column: Column, row: int) -> object:
    """A typed value of ``column`` for data row ``row`` (0-based): every kind, labels cycled, row 2 null."""
    if row == 2 and column.kind != "label" and not column.name.endswith("_id"):
        return None
    if column.kind == "label":
        return column.labels[row % len(column.labels)]
    if column.kind == "int64":
        return -1 if row == 1 else row + 7
    if column.kind == "float64":
        return 1024.5 * (row + 1)
    if column.kind == "bool":
        return row % 2 == 0
    if column.kind == "string_list":
        return ["first", "second"] if row == 0 else ["only"]
    if column.kind == "int64_list":
        return [1, 2, 3] if row == 0 else [-1] if row == 1 else [row]
    return f"{column.name}-{row}"


def text(column: Column, typed: object, row: int) -> str:
    """How the release writes ``typed`` in its CSV files (blank or ``nan`` for null)."""
    if typed is None:
        return "nan" if row % 2 else ""
    if column.kind == "string_list":
        return ";".join(typed)  # type: ignore[arg-type]
    if column.kind == "int64_list":
        return ",".join(map(str, typed))  # type: ignore[call-overload]
    if column.kind == "bool":
        return "True" if typed else "False"
    return str(typed)


def table_rows(spec: ConfigSpec, n: int, fixed: list[dict] | None = None) -> list[dict]:
    """``n`` typed rows of ``spec``: generated values, overridden by ``fixed[i]`` where given."""
    rows = []
    for i in range(n):
        row = {c.name: value(c, i) for c in spec.columns}
        row.update((k, v) for k, v in (fixed or [{}] * n)[i].items() if k in row)
        rows.append(row)
    return rows


def _outcome(configuration_id: str, state: str, peak: float | None, attempts: int, excluded: int) -> dict:
    completed = 0 if state == world.F else world.RUNS_PER_CONFIGURATION
    per_label = {label: world.RUNS_PER_CONFIGURATION if label == state else 0 for label in OUTCOME_LABELS}
    return {
        "configuration_id": configuration_id,
        "observed_state": state,
        "eligible_processes": world.RUNS_PER_CONFIGURATION,
        "distinct_seeds": world.RUNS_PER_CONFIGURATION,
        "completed_eligible_processes": completed,
        "within_margin_processes": per_label[world.W],
        "above_margin_processes": per_label[world.A],
        "memory_failure_processes": per_label[world.F],
        "max_completed_run_peak_mib": peak,
        "mean_completed_run_peak_mib": peak,
        "recorded_attempts": attempts,
        "documented_completed_attempts": completed,
        "excluded_attempts": excluded,
        "label_scope": "eligible_resource_outcomes",
    }


def _runs_and_attempts(states: dict[str, str], peaks: dict[str, float | None]) -> tuple[list, list, list]:
    """Three eligible runs per configuration (one attempt and one stage record each: a pool configuration's with the
    stage and peak of :func:`miniworld.stage_record`), and one excluded attempt."""
    runs, attempts, stages = [], [], []
    pool = {r["configuration_id"]: r for r in world.pool_settings()}
    for configuration_id, state in states.items():
        for seed in range(1, world.RUNS_PER_CONFIGURATION + 1):
            suffix = "" if seed == 1 else f"-{seed}"
            run, peak = f"run-{configuration_id}{suffix}", peaks[configuration_id]
            runs.append(
                {
                    "run_id": run,
                    "configuration_id": configuration_id,
                    "training_seed": seed,
                    "observed_state": state,
                    "completed_requested_work": state != world.F,
                    "completed_run_peak_mib": peak,
                    "observed_peak_mib": peak if peak is not None else 40900.0,
                    "terminal_stage": "checkpoint" if state != world.F else "actor_update",
                }
            )
            attempts.append(
                {
                    "attempt_id": f"att-{configuration_id}{suffix}",
                    "configuration_id": configuration_id,
                    "run_id": run,
                    "eligible": True,
                    "recorded_outcome": state,
                    "exclusion_reason": None,
                    "documented_completion": state != world.F,
                }
            )
            stage = {"stage": "rollout"}
            if configuration_id in pool:  # a pool configuration measures one stage per seed, with its peak
                stage = world.stage_record(pool[configuration_id], seed)
            stages.append({"run_id": run, "configuration_id": configuration_id, **stage})
    attempts.insert(
        world.RUNS_PER_CONFIGURATION,  # after cfg-a's eligible attempts
        {
            "attempt_id": "att-excluded",
            "configuration_id": "cfg-a",
            "run_id": None,
            "eligible": False,
            "recorded_outcome": "no_trial_record",
            "exclusion_reason": ["setup_failure", "no_trial_record"],
            "documented_completion": False,
        },
    )
    return runs, attempts, stages


def _world() -> dict[str, list[dict]]:
    """The overrides of every table the world describes, consistent across tables."""
    transfer = [
        {"configuration_id": c, "case_id": world.CASE_OF[c], "gpu_count": 2 + i} for i, c in enumerate(world.TRANSFER)
    ]
    pool, pool_peaks = world.pool_settings(), world.pool_peaks()
    states = {**world.STATE_OF, **{c: world.state_of_peak(p) for c, p in pool_peaks.items()}}
    peaks = {**world.PEAK_OF, **pool_peaks}
    runs, attempts, stages = _runs_and_attempts(states, peaks)
    recorded = {c: sum(a["configuration_id"] == c for a in attempts) for c in states}
    outcome = [_outcome(c, s, peaks[c], recorded[c], int(c == "cfg-a")) for c, s in states.items()]
    settings = transfer + pool
    joined = [
        {**s, **o, "used_in_transfer_tasks": s["configuration_id"] in world.CASE_OF} for s, o in zip(settings, outcome)
    ]
    queries = [
        dict(
            zip(("query_id", "task_id", "track", "source_configuration_id", "target_configuration_id"), q),
            source_case_id=world.CASE_OF[q[3]],
            target_case_id=world.CASE_OF[q[4]],
        )
        for q in world.QUERIES
    ]
    return {
        "configurations": settings,
        "outcomes": outcome,
        "all_configurations": joined,
        "transfer_configurations": joined[: len(world.TRANSFER)],
        "eligible_runs": runs,
        "recorded_attempts": attempts,
        "stage_measurements": stages,
        "transfer_queries": queries,
        "estimation_targets": world.target_settings(),
        "expanded_host_targets": [
            world.settings(cid, world.TARGET_MODEL, w, level, g, "expanded_host")
            for cid, (w, level, g) in world.HOST_SETTINGS.items()
        ],
        "model_metadata": world.model_metadata(),
        **miniadmission.admission_panel(),
        **minipanels.followup_panels(),
    }


def write_mini_release(root: Path) -> MiniRelease:
    """Write the tiny release into ``root`` (created) and return what was written."""
    release = MiniRelease(Path(root))
    fixed = _world()
    for spec in REGISTRY.values():
        generated = [{k: f"{k}-{i}" for k in spec.keys} for i in range(3 if spec.keys else 1)]
        overrides = fixed.get(spec.name) or generated
        release.rows[spec.name] = table_rows(spec, len(overrides), overrides)
    _apply_copies(release.rows)
    for spec in REGISTRY.values():
        _write_table(release, spec)
    release.documents[SUMMARY] = _summary(release)
    release.documents.update(miniseals.documents(release.rows))
    for relpath, text in miniseals.support_files(release.rows).items():
        _write_text(release.root / relpath, text)
    _write_card(release.root)
    seal(release)
    return release


def rewrite_table(release: MiniRelease, config: str) -> None:
    """Write ``release.rows[config]`` (as edited by a test) to its file again, with the seals and the manifests
    updated."""
    _write_table(release, REGISTRY[config])
    seal(release)


def seal(release: MiniRelease) -> None:
    """Write the JSON documents, each seal with the digests of the files it records as they are now (a seal after
    the seals it records; the collection summary's into its table), and the manifests."""
    for relpath, document in release.documents.items():
        if relpath not in SEALS:
            _write_json(release.root / relpath, document)
    for relpath in miniseals.sealing_order():
        if relpath in release.documents:
            miniseals.fill(relpath, release.documents[relpath], release.root)
            _write_json(release.root / relpath, release.documents[relpath])
            continue
        (record,) = [s for s in REGISTRY.values() if s.path == relpath and s.layout == JSON_OBJECT]
        miniseals.fill(relpath, release.rows[record.name][0], release.root)
        _write_table(release, record)
    for manifest, folder in MANIFESTS:
        _write_manifest(release.root, manifest, folder)


def _apply_copies(rows: dict[str, list[dict]]) -> None:
    """Make every column a table copies from another (the registry's :class:`Copy` relations) equal to its origin,
    as the real release is; origins are filled before the tables that copy them."""
    pending = [spec for spec in REGISTRY.values() if spec.copies]
    while pending:
        ready = [s for s in pending if all(c.table not in {p.name for p in pending} for c in s.copies)]
        for spec in ready or pending:  # no copy chain is circular; `or` guards the loop anyway
            for copy in spec.copies:
                origin = REGISTRY[copy.table]
                by_key = {tuple(r[k] for k in origin.keys): r for r in rows[copy.table]}
                for row in rows[spec.name]:
                    found = by_key.get(tuple(row[k] for k in copy.on))
                    if found is not None:
                        row.update({here: found[there] for here, there in copy.columns.items()})
        pending = [s for s in pending if s not in (ready or pending)]


def _write_table(release: MiniRelease, spec: ConfigSpec) -> None:
    """Write the file of ``spec`` in its layout; a JSON file that several entries share holds all of them."""
    path, rows = release.root / spec.path, release.rows[spec.name]
    if spec.layout == JSON_MAPPING:  # {key: record}, values as JSON values
        _write_json(path, {row[spec.keys[0]]: row for row in rows})
        return
    if spec.layout in (JSON_RECORDS, JSON_OBJECT):
        _write_json(path, _json_file(release, spec.path))
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(spec.column_names)
        for i, row in enumerate(rows):
            writer.writerow([text(c, row[c.name], i) for c in spec.columns])


def _json_file(release: MiniRelease, relpath: str) -> dict | list:
    """The JSON file at ``relpath``: the members of its one-record entry, and each list of records under its member
    (or the list itself when an entry's records are the whole file); ``outer.inner`` columns as nested objects."""
    data: dict | list = {}
    for spec in (s for s in REGISTRY.values() if s.path == relpath):
        records = [_nested(row) for row in release.rows[spec.name]]
        if spec.layout == JSON_OBJECT:
            data.update(records[0])  # type: ignore[union-attr]
        elif spec.member is None:
            data = records
        else:
            data[spec.member] = records  # type: ignore[index]
    return data


def _nested(row: dict) -> dict:
    """A row with its ``outer.inner`` columns as members of nested objects."""
    out: dict = {}
    for name, typed in row.items():
        *outer, inner = name.split(NESTED)
        place = out
        for part in outer:
            place = place.setdefault(part, {})
        place[inner] = typed
    return out


def _summary(release: MiniRelease) -> dict:
    count = {name: len(rows) for name, rows in release.rows.items()}
    return {
        "configurations": count["configurations"],
        "eligible_processes": count["eligible_runs"],
        "recorded_attempts": count["recorded_attempts"],
        "stage_measurements": count["stage_measurements"],
        "transfer_configurations": count["transfer_configurations"],
        "queries": count["transfer_queries"],
        "never_started_conditions": count["not_started_conditions"],
    }


def _write_json(path: Path, document: dict | list) -> None:
    _write_text(path, json.dumps(document, indent=2) + "\n")


def _write_text(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")


def _write_manifest(root: Path, manifest: str, folder: str) -> None:
    """A manifest of every file in ``folder`` (not in its subfolders), in the release's layout."""
    files = {}
    for path in sorted((root / folder).glob("*")):
        if path.is_file() and path.name != Path(manifest).name:
            data = path.read_bytes()
            files[path.name] = {"sha256": hashlib.sha256(data).hexdigest(), "size_bytes": len(data)}
    _write_json(root / manifest, {"algorithm": "sha256", "files": files})


def _write_card(root: Path) -> None:
    lines = ["---", "pretty_name: Mini RLVRAMBench", "license: mit", "configs:"]
    for spec in card_configs():
        lines += [f"- config_name: {spec.name}", "  data_files:", f"  - split: {spec.split}", f"    path: {spec.path}"]
    (root / "README.md").write_text("\n".join(lines) + "\n---\n\n# Mini RLVRAMBench (generated by the tests)\n")


def expected_labels() -> tuple[str, ...]:
    """The label names every label column starts with."""
    return OUTCOME_LABELS
