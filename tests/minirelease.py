"""A tiny release written from the registry: a few rows per table, a card, manifests — for the fast unit layer.

:func:`write_mini_release` lays out a folder like the Hub repository. Every registry table gets rows whose values
follow the column's kind (with blanks, the literal ``nan``, lists and every label present), and the tables agree
with each other as the real release does: four configurations in two cases, one eligible run and attempt each plus
one excluded attempt, one stage record per run, and two transfer queries across the cases. The expected typed
values are returned beside the files, so tests compare what the package reads with what was written.
"""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from rlvrambench_hf.data.schema.pins import MANIFESTS, OUTCOME_LABELS
from rlvrambench_hf.data.schema.registry import REGISTRY, card_configs
from rlvrambench_hf.data.schema.spec import JSON_MAPPING, Column, ConfigSpec

CONFIGURATIONS = ("cfg-a", "cfg-b", "cfg-c", "cfg-d")
CASE_OF = {"cfg-a": "case-1", "cfg-b": "case-2", "cfg-c": "case-1", "cfg-d": "case-2"}
#: Repeated label of each configuration: the two targets of the queries are b (within) and d (memory failure).
STATE_OF = {"cfg-a": "within_margin", "cfg-b": "within_margin", "cfg-c": "above_margin", "cfg-d": "memory_failure"}
QUERIES = (  # query, task, track, source, target
    ("query-1", "task-1", "model_transfer", "cfg-a", "cfg-b"),
    ("query-2", "task-2", "gpu_count_transfer", "cfg-c", "cfg-d"),
)


@dataclass
class MiniRelease:
    """The folder and, per config, the typed rows written into it (labels by name, blanks as None)."""

    root: Path
    rows: dict[str, list[dict]] = field(default_factory=dict)


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
    return f"{column.name}-{row}"


def text(column: Column, typed: object, row: int) -> str:
    """How the release writes ``typed`` in its CSV files (blank or ``nan`` for null)."""
    if typed is None:
        return "nan" if row % 2 else ""
    if column.kind == "string_list":
        return ";".join(typed)  # type: ignore[arg-type]
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


def _world() -> dict[str, list[dict]]:
    """Rows of every table, consistent across tables."""
    settings = [
        {"configuration_id": c, "case_id": CASE_OF[c], "gpu_count": 2 + i} for i, c in enumerate(CONFIGURATIONS)
    ]
    outcome = [
        {"configuration_id": c, "observed_state": STATE_OF[c], "eligible_processes": 3, "recorded_attempts": 4 + i}
        for i, c in enumerate(CONFIGURATIONS)
    ]
    runs = [{"run_id": f"run-{c}", "configuration_id": c} for c in CONFIGURATIONS]
    attempts = [
        {"attempt_id": f"att-{c}", "configuration_id": c, "run_id": f"run-{c}", "eligible": True}
        for c in CONFIGURATIONS
    ]
    attempts.append({"attempt_id": "att-excluded", "configuration_id": "cfg-a", "run_id": None, "eligible": False})
    stages = [{"run_id": f"run-{c}", "configuration_id": c, "stage": "rollout"} for c in CONFIGURATIONS]
    queries = [
        dict(
            zip(("query_id", "task_id", "track", "source_configuration_id", "target_configuration_id"), q),
            source_case_id=CASE_OF[q[3]],
            target_case_id=CASE_OF[q[4]],
        )
        for q in QUERIES
    ]
    joined = [{**s, **o, "used_in_transfer_tasks": True} for s, o in zip(settings, outcome)]
    return {
        "configurations": table_rows(REGISTRY["configurations"], 4, settings),
        "outcomes": table_rows(REGISTRY["outcomes"], 4, outcome),
        "all_configurations": table_rows(REGISTRY["all_configurations"], 4, joined),
        "transfer_configurations": table_rows(REGISTRY["transfer_configurations"], 4, joined),
        "eligible_runs": table_rows(REGISTRY["eligible_runs"], 4, runs),
        "recorded_attempts": table_rows(REGISTRY["recorded_attempts"], 5, attempts),
        "stage_measurements": table_rows(REGISTRY["stage_measurements"], 4, stages),
        "transfer_queries": table_rows(REGISTRY["transfer_queries"], 2, queries),
    }


def write_mini_release(root: Path) -> MiniRelease:
    """Write the tiny release into ``root`` (created) and return what was written."""
    release = MiniRelease(Path(root))
    world = _world()
    for spec in REGISTRY.values():
        rows = world.get(spec.name) or table_rows(spec, 3, [{k: f"{k}-{i}" for k in spec.keys} for i in range(3)])
        release.rows[spec.name] = rows
    _apply_copies(release.rows)
    for spec in REGISTRY.values():
        _write_csv(release.root / spec.path, spec, release.rows[spec.name])
    _write_summary(release)
    for manifest, folder in MANIFESTS:
        _write_manifest(release.root, manifest, folder)
    _write_card(release.root)
    return release


def rewrite_table(release: MiniRelease, config: str) -> None:
    """Write ``release.rows[config]`` (as edited by a test) to its file again, with the manifests updated."""
    spec = REGISTRY[config]
    _write_csv(release.root / spec.path, spec, release.rows[config])
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


def _write_csv(path: Path, spec: ConfigSpec, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if spec.layout == JSON_MAPPING:  # {key: record}, values as JSON values
        path.write_text(json.dumps({row[spec.keys[0]]: row for row in rows}, indent=2) + "\n", encoding="utf-8")
        return
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(spec.column_names)
        for i, row in enumerate(rows):
            writer.writerow([text(c, row[c.name], i) for c in spec.columns])


def _write_summary(release: MiniRelease) -> None:
    counts = {
        "configurations": 4,
        "eligible_processes": 4,
        "recorded_attempts": 5,
        "stage_measurements": 4,
        "transfer_configurations": 4,
        "queries": 2,
        "never_started_conditions": 3,
    }
    (release.root / "benchmark" / "summary.json").write_text(json.dumps(counts, indent=2) + "\n")


def _write_manifest(root: Path, manifest: str, folder: str) -> None:
    """A manifest of every file in ``folder`` (not in its subfolders), in the release's layout."""
    files = {}
    for path in sorted((root / folder).glob("*")):
        if path.is_file() and path.name != Path(manifest).name:
            data = path.read_bytes()
            files[path.name] = {"sha256": hashlib.sha256(data).hexdigest(), "size_bytes": len(data)}
    (root / manifest).write_text(json.dumps({"algorithm": "sha256", "files": files}, indent=2) + "\n")


def _write_card(root: Path) -> None:
    lines = ["---", "pretty_name: Mini RLVRAMBench", "license: mit", "configs:"]
    for spec in card_configs():
        lines += [f"- config_name: {spec.name}", "  data_files:", f"  - split: {spec.split}", f"    path: {spec.path}"]
    (root / "README.md").write_text("\n".join(lines) + "\n---\n\n# Mini RLVRAMBench (generated by the tests)\n")


def expected_labels() -> tuple[str, ...]:
    """The label names every label column starts with."""
    return OUTCOME_LABELS
