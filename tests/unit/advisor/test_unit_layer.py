"""The advisor's and the memory model's unit layer itself: every module is marked ``unit``, exercises
``rlvrambench_hf.advisor`` or ``rlvrambench_hf.memory``, and stays away from the real release, its Hub server and
VERL's real packaged configs (the defaults it reads are the stand-in of :mod:`unit.advisor.conftest`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

FOLDERS = (Path(__file__).parent, Path(__file__).parent.parent / "memory")
MODULES = sorted(p for folder in FOLDERS for p in folder.glob("test_*.py") if p.name != Path(__file__).name)
#: Text no module holds (the real release's folder and its variable), and fixtures no test asks for (the real
#: release, the Hub server, VERL's real wheel).
FORBIDDEN_TEXT = ("shared/rlvrambench", "RLVRAMBENCH_SNAPSHOT")
FORBIDDEN_FIXTURES = {"snapshot", "hub", "packaged_verl", "verl_trainer_configs"}


def fixtures_of(tree: ast.Module) -> set[str]:
    """The argument names of the module's test functions (the fixtures they ask for)."""
    return {
        a.arg
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
        for a in node.args.args
    }


@pytest.mark.parametrize("path", MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_module_is_marked_unit_and_exercises_the_advisor_or_the_memory_model(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    marks = [
        ast.unparse(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets)
    ]
    assert marks == ["pytest.mark.unit"]
    imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert any(m.startswith(("rlvrambench_hf.advisor", "rlvrambench_hf.memory", "unit.advisor")) for m in imported)
    text = path.read_text(encoding="utf-8")
    assert not [f for f in FORBIDDEN_TEXT if f in text]
    assert not fixtures_of(tree) & FORBIDDEN_FIXTURES


def test_the_layer_holds_enough_modules_to_cover_readers_floors_physics_changes_and_logs():
    assert {p.name for p in MODULES} >= {
        "test_planned.py", "test_verl_config.py", "test_hydra.py", "test_launch.py", "test_verl_checks.py",
        "test_trl.py", "test_floors.py", "test_answers.py", "test_logs.py", "test_terms.py", "test_physics.py",
        "test_headroom.py",
    }  # fmt: skip
