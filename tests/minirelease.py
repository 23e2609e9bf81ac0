"""A tiny release written from the registry: a few rows per table, a card, manifests and protocols — the data of
the fast unit layer.

:func:`write_mini_release` lays out a folder like the Hub repository. Every registry table gets rows whose values
follow the column's kind (with blanks, the literal ``nan``, negative integers, lists and every label present),
overridden where the cores read them by the world of :mod:`miniworld`: transfer configurations and queries, an
estimation pool and its targets, an admission panel and two follow-up panels. The tables agree with each other as
the real release does — every relation the registry declares holds, the counts of ``summary.json`` match, every
file a manifest covers has its digest, and the estimation protocol seals its inputs (the amendment seals the
protocol). The typed rows and JSON documents written are returned beside the files, so tests compare what the
package reads with what was written.
"""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from rlvrambench_hf.admission.protocol import PROTOCOL_PATH as ADMISSION_PROTOCOL
from rlvrambench_hf.data.schema.pins import MANIFESTS, OUTCOME_LABELS
from rlvrambench_hf.data.schema.registry import REGISTRY, card_configs
from rlvrambench_hf.data.schema.spec import JSON_MAPPING, Column, ConfigSpec
from rlvrambench_hf.estimation.api import AMENDMENT, PROTOCOL, SEALED_INPUTS
from rlvrambench_hf.estimation.features import FEATURE_NAMES
from rlvrambench_hf.estimation.logistic import CLASSIFIER_SETTINGS

import miniworld as world

# The names earlier tests use for the transfer part of the world.
CONFIGURATIONS, CASE_OF, STATE_OF, QUERIES = world.TRANSFER, world.CASE_OF, world.STATE_OF, world.QUERIES
SUMMARY = "benchmark/summary.json"
#: The feature the original estimation protocol names last, before its amendment.
ORIGINAL_LAST_FEATURE = "actor_parameter_offload"


@dataclass
class MiniRelease:
    """The folder and, per config, the typed rows written into it (labels by name, blanks as None); ``documents``
    holds the JSON files by repository path (protocols, amendment, summary)."""

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
    """Three eligible runs per configuration (one attempt and one stage record each), and one excluded attempt."""
    runs, attempts, stages = [], [], []
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
            stages.append({"run_id": run, "configuration_id": configuration_id, "stage": "rollout"})
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
    joined = [{**s, **o, "used_in_transfer_tasks": s["configuration_id"] in CASE_OF} for s, o in zip(settings, outcome)]
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
        "model_metadata": world.model_metadata(),
        "admission_candidates": world.admission_candidates(),
        "admission_attempts": world.admission_attempts(),
        "larger_model_configurations": world.panel_rows(world.LARGER_MODEL),
        "expanded_host_configurations": world.panel_rows(world.EXPANDED_HOST),
    }


def write_mini_release(root: Path) -> MiniRelease:
    """Write the tiny release into ``root`` (created) and return what was written."""
    release = MiniRelease(Path(root))
    fixed = _world()
    for spec in REGISTRY.values():
        overrides = fixed.get(spec.name) or [{k: f"{k}-{i}" for k in spec.keys} for i in range(3)]
        release.rows[spec.name] = table_rows(spec, len(overrides), overrides)
    _apply_copies(release.rows)
    for spec in REGISTRY.values():
        _write_table(release.root / spec.path, spec, release.rows[spec.name])
    release.documents[SUMMARY] = _summary(release)
    attempt_ids: dict[str, list[str]] = {}
    for attempt in release.rows["recorded_attempts"]:
        attempt_ids.setdefault(attempt["configuration_id"], []).append(attempt["attempt_id"])
    release.documents[ADMISSION_PROTOCOL] = world.admission_protocol(attempt_ids)
    release.documents[PROTOCOL] = _estimation_protocol(release)
    release.documents[AMENDMENT] = {
        "amended_at_utc": "2026-01-01T00:00:00+00:00",
        "reason": "The offload indicator becomes the resident actor shards.",
        "updates": {"features": list(FEATURE_NAMES)},
    }
    _write_card(release.root)
    seal(release)
    return release


def rewrite_table(release: MiniRelease, config: str) -> None:
    """Write ``release.rows[config]`` (as edited by a test) to its file again, with the manifests and the seals of
    the estimation protocol updated."""
    spec = REGISTRY[config]
    _write_table(release.root / spec.path, spec, release.rows[config])
    seal(release)


def seal(release: MiniRelease) -> None:
    """Write the JSON documents, the estimation protocol's digests of its inputs (and the amendment's of the
    protocol) as they are now, and the manifests."""
    protocol = release.documents[PROTOCOL]
    protocol["input_sha256"] = {rel: _sha256(release.root / rel) for rel in SEALED_INPUTS}
    for relpath, document in release.documents.items():
        if relpath != AMENDMENT:
            _write_json(release.root / relpath, document)
    release.documents[AMENDMENT]["base_protocol_sha256"] = _sha256(release.root / PROTOCOL)
    _write_json(release.root / AMENDMENT, release.documents[AMENDMENT])
    for manifest, folder in MANIFESTS:
        _write_manifest(release.root, manifest, folder)


def _estimation_protocol(release: MiniRelease) -> dict:
    pool = [r["configuration_id"] for r in release.rows["configurations"] if r["study"] in world.GPU_STUDY.values()]
    return {
        "protocol_version": "estimation-1.0",
        "status": "specified_before_fitting",
        "features": [*FEATURE_NAMES[:-1], ORIGINAL_LAST_FEATURE],
        "classifier": {**CLASSIFIER_SETTINGS, "penalty": "l2", "implementation": "sklearn"},
        "source_studies": sorted(world.GPU_STUDY.values()),
        "source_configuration_ids": sorted(pool),
        "target_configuration_ids": [r["configuration_id"] for r in release.rows["estimation_targets"]],
        "device_capacity_mib": world.DEVICE_CAPACITY_MIB,
        "memory_margin_limit_mib": world.MARGIN_LIMIT_MIB,
    }


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


def _write_table(path: Path, spec: ConfigSpec, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if spec.layout == JSON_MAPPING:  # {key: record}, values as JSON values
        path.write_text(json.dumps({row[spec.keys[0]]: row for row in rows}, indent=2) + "\n", encoding="utf-8")
        return
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(spec.column_names)
        for i, row in enumerate(rows):
            writer.writerow([text(c, row[c.name], i) for c in spec.columns])


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


def _write_json(path: Path, document: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


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
