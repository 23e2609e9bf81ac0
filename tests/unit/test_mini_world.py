"""The unit layer itself: the mini release is the world :mod:`miniworld` designs, and every module here is a unit
test that stays away from the real release and from servers."""

from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path

import pytest

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


def test_the_protocols_seal_what_the_release_holds(shared_mini):
    from rlvrambench_hf.data.sources.base import sha256_file
    from rlvrambench_hf.estimation.api import AMENDMENT, PROTOCOL

    protocol = json.loads((shared_mini.root / PROTOCOL).read_text())
    for relpath, digest in protocol["input_sha256"].items():
        assert sha256_file(shared_mini.root / relpath) == digest, relpath
    amendment = json.loads((shared_mini.root / AMENDMENT).read_text())
    assert amendment["base_protocol_sha256"] == sha256_file(shared_mini.root / PROTOCOL)
