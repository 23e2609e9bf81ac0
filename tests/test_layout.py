"""The package's shape: no import cycle, short modules, no private names of the libraries it builds on, and every
distribution it imports declared in pyproject.toml."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import REPO_ROOT

pytestmark = pytest.mark.unit

PACKAGE = REPO_ROOT / "rlvrambench_hf"
SHIPPED = [REPO_ROOT / "metrics" / "rlvrambench" / "rlvrambench.py", REPO_ROOT / "loading_script" / "rlvrambench.py"]
#: The longest a module may grow before it is split (the registry of tables is data, and counts the same).
MAX_LINES = 360


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports anywhere in its body (deferred imports count: they break no cycle)."""
    is_package = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[: None if is_package else -1]
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                full = f"{target}.{alias.name}"
                out.add(full if full in known else target)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return {m for m in out if m in known and m != name}


def test_no_import_cycle_anywhere_in_the_package():
    known = modules()
    graph = {name: imports_of(name, path, known) for name, path in known.items()}
    cycles = []
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(trail[trail.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not cycles, "import cycle: " + " → ".join(cycles[0])


def test_the_cycle_check_sees_a_deferred_import(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("from .b import x\n")
    b.write_text("def f():\n    from .a import y\n")
    known = {"p.a": a, "p.b": b}
    assert imports_of("p.b", b, known) == {"p.a"} and imports_of("p.a", a, known) == {"p.b"}


def test_no_module_is_longer_than_the_bound():
    long = {
        str(p.relative_to(REPO_ROOT)): n
        for p in [*PACKAGE.rglob("*.py"), *SHIPPED]
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not long, long


def test_no_private_name_of_huggingface_hub_datasets_or_evaluate():
    libraries = "(?:huggingface_hub|datasets|evaluate)"
    private = re.compile(rf"\b{libraries}(?:\.\w+)*\._[a-z]\w*|from {libraries}[\w.]* import [^\n]*\b_[A-Za-z]\w*")
    used = {}
    for path in [*PACKAGE.rglob("*.py"), *SHIPPED]:
        for match in private.finditer(path.read_text(encoding="utf-8")):
            used[str(path.relative_to(REPO_ROOT))] = match.group(0)
    assert not used, used


def test_every_imported_distribution_is_declared():
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    declared = {re.split(r"[<>=!~ \[]", d)[0].lower().replace("_", "-") for d in project["dependencies"]}
    for extra in ("plots", "release"):
        declared |= {
            re.split(r"[<>=!~ \[]", d)[0].lower().replace("_", "-") for d in project["optional-dependencies"][extra]
        }
    top = set()
    for path in [*PACKAGE.rglob("*.py"), *SHIPPED]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                top.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                top.add(node.module.split(".")[0])
    distributions = importlib.metadata.packages_distributions()
    undeclared = {}
    for module in sorted(top - set(sys.stdlib_module_names) - {"rlvrambench_hf"}):
        names = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        if not names & declared:
            undeclared[module] = sorted(names)
    assert not undeclared, undeclared


def test_every_folder_of_the_package_is_a_regular_package():
    """A folder without ``__init__.py`` imports as a namespace package but is left out of the wheel."""
    folders = {p.parent for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    missing = sorted(str(f.relative_to(REPO_ROOT)) for f in folders if not (f / "__init__.py").is_file())
    assert not missing, missing
