"""The unit layer itself: the mini release is the world :mod:`miniworld` designs, and every module here is a unit
test that stays away from the real release and from servers."""

from __future__ import annotations

import ast
import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from rlvrambench_hf.data.schema.seals import SEALS
from rlvrambench_hf.data.sources.base import sha256_file
from rlvrambench_hf.estimation.api import AMENDMENT, PROTOCOL

import miniworld as world
from minirelease import SUMMARY

pytestmark = pytest.mark.unit

HERE = Path(__file__).parent


def test_every_module_of_the_unit_folder_is_marked_unit_and_uses_no_real_data():
    for path in sorted(p for p in HERE.glob("test_*.py") if p.name != Path(__file__).name):
        tree = ast.parse(path.read_text())
        marks = [
            ast.unparse(node.value)
            for node in tree.body
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets)
        ]
        assert marks == ["pytest.mark.unit"], path.name
        text = path.read_text()
        assert "shared/rlvrambench" not in text and "RLVRAMBENCH_SNAPSHOT" not in text, path.name


def test_every_pool_family_has_all_three_labels_and_enough_complete_rows(shared_mini):
    outcomes = {r["configuration_id"]: r for r in shared_mini.rows["outcomes"]}
    pool = [r for r in shared_mini.rows["configurations"] if r["study"] in ("boundary", "four_gpu")]
    assert len(pool) == 30 and Counter(outcomes[r["configuration_id"]]["observed_state"] for r in pool) == {
        world.W: 21,
        world.A: 4,
        world.F: 5,
    }
    for family in ("granite33", "qwen25", "phi4"):
        mine = [outcomes[r["configuration_id"]] for r in pool if f"-{family}-" in r["configuration_id"]]
        assert {o["observed_state"] for o in mine} == {world.W, world.A, world.F}, family
        others = [outcomes[r["configuration_id"]] for r in pool if f"-{family}-" not in r["configuration_id"]]
        assert sum(o["completed_eligible_processes"] == 3 for o in others) > 8, family  # the regression can fit


def test_the_counts_agree_across_tables(shared_mini):
    rows = shared_mini.rows
    runs = Counter(r["configuration_id"] for r in rows["eligible_runs"])
    attempts = Counter(r["configuration_id"] for r in rows["recorded_attempts"])
    for outcome in rows["outcomes"]:
        cid = outcome["configuration_id"]
        assert runs[cid] == outcome["eligible_processes"] and attempts[cid] == outcome["recorded_attempts"], cid
    summary = json.loads((shared_mini.root / SUMMARY).read_text())
    assert summary["eligible_processes"] == len(rows["eligible_runs"]) == 3 * len(rows["configurations"])
    assert summary["queries"] == len(world.QUERIES)


#: What the seals of the mini release name and it does not carry (code, training data, estimation outputs).
NOT_CARRIED = {
    "data/gsm8k/train.parquet",
    "data/math/train.parquet",
    "memory_tuner/estimation_baselines.py",
    "memory_tuner/run_host_capacity.py",
    "decision_benchmark.py",
    "benchmark/estimation/fitted_model.json",
    "benchmark/estimation/predictions.json",
    "benchmark/estimation/retrospective.json",
}


def test_every_declared_seal_records_the_digest_of_each_file_it_names(shared_mini):
    """Read with the json and hashlib modules, apart from the package's seal checks."""
    seen = set()
    for path, seal in SEALS.items():
        document = json.loads((shared_mini.root / path).read_text())
        for member in seal.digests:
            value = document[member.member]  # every member that records digests is written
            listed = (
                {member.file: value}
                if member.file
                else {f"{member.folder}/{k}".lstrip("/"): v for k, v in value.items()}
            )
            for relpath, digest in listed.items():
                file = shared_mini.root / relpath
                if relpath in NOT_CARRIED:
                    assert not file.exists(), relpath
                else:
                    assert hashlib.sha256(file.read_bytes()).hexdigest() == digest, (path, relpath)
                seen.add(relpath)
    assert NOT_CARRIED < seen and "benchmark/decision/matrix.csv" in seen
    amendment = json.loads((shared_mini.root / AMENDMENT).read_text())
    assert amendment["base_protocol_sha256"] == sha256_file(shared_mini.root / PROTOCOL)


def test_the_panels_summaries_count_their_records(shared_mini):
    rows = shared_mini.rows
    for study in ("larger_model", "expanded_host"):
        (summary,) = rows[f"{study}_summary"]
        processes = rows[f"{study}_processes"]
        assert summary["planned_processes"] == len(processes) and summary["planned_pairs"] == len(
            rows[f"{study}_pairs"]
        )
        assert summary["eligible_processes"] == sum(p["eligible"] for p in processes)
        assert summary["known_launched_processes"] == sum(p["launched"] for p in processes)
        (totals,) = rows[f"{study}_cost_totals"]
        known = [c["whole_allocation_gpu_seconds"] for c in rows[f"{study}_costs"] if c["whole_allocation_gpu_seconds"]]
        assert totals["whole_allocation_time.known_gpu_seconds"] == sum(known)
        assert totals["task_provisioned_time.known_gpu_seconds"] == sum(p["task_gpu_seconds"] for p in processes)
    (collection,) = rows["admission_collection_summary"]
    attempts = rows["admission_attempts"]
    states = Counter(a["state"] for a in attempts)
    assert (
        (collection["recorded_attempts"], collection["validated_memory_outcomes"])
        == (17, 15)
        == (
            len(attempts),
            len(attempts) - states[world.U],
        )
    )
    assert [collection[f"attempt_states.{s}"] for s in (world.W, world.A, world.F)] == [10, 2, 3]
    seconds = sum(2 * a["elapsed_seconds"] for a in attempts if a["elapsed_seconds"] is not None)
    assert collection["physical_recorded_gpu_seconds"] == seconds == 12910.0
    assert len(rows["admission_slot_inventory"]) == collection["planned_slots"] == 16
