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
#: The most modules a folder of the package may hold before it is grouped into sub-packages (``__init__.py`` aside).
MAX_MODULES = 15
#: Folders over the bound, to be regrouped (folder -> modules it holds): each must still be over it.
KNOWN_CROWDED: dict[str, int] = {}


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


def crowded_folders(root: Path = PACKAGE) -> dict[str, int]:
    """The folders of the package holding more than :data:`MAX_MODULES` modules, with how many they hold."""
    counts: dict[str, int] = {}
    for path in root.rglob("*.py"):
        if path.name != "__init__.py" and "__pycache__" not in path.parts:
            folder = path.parent.relative_to(root.parent).as_posix()
            counts[folder] = counts.get(folder, 0) + 1
    return {folder: n for folder, n in counts.items() if n > MAX_MODULES}


def test_no_folder_holds_more_modules_than_the_bound():
    crowded = crowded_folders()
    assert crowded.keys() <= KNOWN_CROWDED.keys(), {f: n for f, n in crowded.items() if f not in KNOWN_CROWDED}
    assert crowded.keys() == KNOWN_CROWDED.keys(), (
        f"regrouped, remove from KNOWN_CROWDED: {KNOWN_CROWDED.keys() - crowded.keys()}"
    )


def test_the_folder_bound_counts_modules_of_one_folder(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    for name in ["__init__", *(f"m{i}" for i in range(MAX_MODULES + 1))]:
        (package / f"{name}.py").write_text("")
    (package / "sub" / "a.py").write_text("")
    assert crowded_folders(package) == {"pkg": MAX_MODULES + 1}


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


#: The floors of the house, lowest first: a module may import its own room and the rooms of lower floors. A room is
#: a subpackage (``data``'s three subpackages are rooms of their own; ``data``'s modules form one) or a module of the
#: package's top level. The package itself (``rlvrambench_hf/__init__.py``) is not a room: Python runs it before any
#: of its modules, so importing from it adds no dependency (its own imports are lazy, see the module).
FLOORS: tuple[tuple[str, ...], ...] = (
    ("redaction", "lazy"),
    ("errors",),
    ("structured",),
    ("arrow", "userfile"),
    ("data.schema",),
    ("data.sources",),
    ("data.tables",),
    ("data", "scoring"),
    ("memory",),
    ("transfer", "admission", "followup", "estimation"),
    ("advisor", "release", "adapters"),
    ("reporting",),
    ("cli", "builder"),
    ("__main__",),
)
#: Upward imports allowed (importer -> imported module): none. An adapter that dispatches to several rooms sits on a
#: floor above them (``adapters``); a helper a lower room needs lives on a floor below it (``arrow``, ``userfile``).
KNOWN_UPWARD: frozenset[tuple[str, str]] = frozenset()


def room_of(name: str) -> str | None:
    """The room of package module ``name`` (None for the package itself)."""
    parts = name.split(".")[1:]
    if not parts:
        return None
    if parts[0] == "data" and len(parts) > 1 and f"data.{parts[1]}" in {r for f in FLOORS for r in f}:
        return f"data.{parts[1]}"
    return parts[0]


def upward_imports(known: dict[str, Path] | None = None) -> set[tuple[str, str]]:
    """Every import of a module into a room of the same or a higher floor (its own room excepted)."""
    floor = {room: level for level, rooms in enumerate(FLOORS) for room in rooms}
    known = modules() if known is None else known
    found = set()
    for name, path in known.items():
        here = room_of(name)
        for target in imports_of(name, path, known):
            there = room_of(target)
            if here is None or there is None or there == here:
                continue
            if floor[there] >= floor[here]:
                found.add((name, target))
    return found


def test_every_room_is_on_a_floor():
    rooms = {room_of(name) for name in modules()} - {None}
    placed = [room for rooms_of_floor in FLOORS for room in rooms_of_floor]
    assert len(placed) == len(set(placed)) and rooms == set(placed), sorted(rooms ^ set(placed))


def test_imports_run_downward_only_but_for_the_known_ones():
    found = upward_imports()
    assert not found - KNOWN_UPWARD, f"new upward imports: {sorted(found - KNOWN_UPWARD)}"
    assert not KNOWN_UPWARD - found, f"fixed, remove from KNOWN_UPWARD: {sorted(KNOWN_UPWARD - found)}"


def test_the_upward_check_sees_an_upward_import(tmp_path):
    low, high = tmp_path / "labels.py", tmp_path / "api.py"
    low.write_text("from ..transfer.api import x\n")
    high.write_text("from ..scoring.labels import y\n")
    known = {"rlvrambench_hf.scoring.labels": low, "rlvrambench_hf.transfer.api": high}
    assert upward_imports(known) == {("rlvrambench_hf.scoring.labels", "rlvrambench_hf.transfer.api")}


#: The floors of the advisor's house, lowest first (its rooms: sub-packages, and the modules of a folder that others
#: of its sub-packages import, which stand on their own floor). The store of what is kept between runs is the lowest
#: (readers and the assessment keep there what they derive from files). ``read``'s sub-rooms: its shared checks and
#: the shell reader, then VERL's readers, then TRL's (which read VERL's configs too), then the reader that dispatches
#: to them.
#: The typed answer is below the assessment that builds it; the log diagnosis reads answers; the output room writes
#: and words both; the api composes everything and the package's face lists it.
ADVISOR = "rlvrambench_hf.advisor"
ADVISOR_FLOORS: tuple[tuple[str, ...], ...] = (
    ("store",),
    ("plan",),
    ("read.checks", "read.shell"),
    ("read.verl",),
    ("read.trl",),
    ("read",),
    ("answer",),
    ("assess",),
    ("diagnose",),
    ("output",),
    ("api",),
    ("",),  # the advisor package itself (its __init__)
)


def advisor_room_of(name: str) -> str | None:
    """The room of an advisor module (None outside the advisor)."""
    if name != ADVISOR and not name.startswith(ADVISOR + "."):
        return None
    parts = name[len(ADVISOR) + 1 :].split(".") if name != ADVISOR else [""]
    if parts[0] == "read" and len(parts) > 1:
        return f"read.{parts[1]}" if parts[1] in ("shell", "verl", "trl", "checks") else "read"
    return parts[0]


def advisor_upward_imports(known: dict[str, Path] | None = None) -> set[tuple[str, str]]:
    """Every import of an advisor module into a room of the advisor on the same or a higher floor (its own room
    excepted)."""
    floor = {room: level for level, rooms in enumerate(ADVISOR_FLOORS) for room in rooms}
    known = modules() if known is None else known
    found = set()
    for name, path in known.items():
        here = advisor_room_of(name)
        if here is None:
            continue
        for target in imports_of(name, path, known):
            there = advisor_room_of(target)
            if there is not None and there != here and floor[there] >= floor[here]:
                found.add((name, target))
    return found


def test_every_room_of_the_advisor_is_on_a_floor():
    rooms = {advisor_room_of(name) for name in modules()} - {None}
    placed = [room for rooms_of_floor in ADVISOR_FLOORS for room in rooms_of_floor]
    assert len(placed) == len(set(placed)) and rooms == set(placed), sorted(rooms ^ set(placed))


def test_the_advisor_imports_downward_only():
    found = advisor_upward_imports()
    assert not found, f"upward imports in the advisor: {sorted(found)}"


def test_the_advisor_check_sees_the_diagnosis_importing_the_api(tmp_path):
    explain, api = tmp_path / "explain.py", tmp_path / "api.py"
    explain.write_text("def f():\n    from ..api import advise\n")
    api.write_text("from .diagnose.explain import f\n")
    known = {f"{ADVISOR}.diagnose.explain": explain, f"{ADVISOR}.api": api}
    assert advisor_upward_imports(known) == {(f"{ADVISOR}.diagnose.explain", f"{ADVISOR}.api")}


def layout_texts(readme: str) -> dict[str, str]:
    """The text README.md's layout block gives each folder (``rlvrambench_hf/data/sources/``): its own line and the
    lines below it, up to the next entry at its depth or above. An entry is a line indented less than its
    descriptions (fewer than 8 spaces); a folder entry's first word ends with ``/``."""
    block = readme.split("## Layout", 1)[1].split("```", 2)[1]
    texts: dict[str, list[str]] = {}
    stack: list[tuple[int, str]] = []
    for line in block.splitlines():
        depth = len(line) - len(line.lstrip())
        words = line.split()
        if not words:
            continue
        if depth < 8:  # an entry: close the folders at its depth or deeper
            while stack and stack[-1][0] >= depth:
                stack.pop()
            if words[0].endswith("/"):
                stack.append((depth, (stack[-1][1] if stack else "") + words[0]))
        if stack:
            texts.setdefault(stack[-1][1], []).append(line)
    return {folder: "\n".join(lines) for folder, lines in texts.items()}


def missing_from_layout(readme: str) -> list[str]:
    """The package's modules that README.md's layout does not name in the text of their folder."""
    texts = layout_texts(readme)
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name.startswith("__"):
            continue
        folder = path.parent.relative_to(REPO_ROOT).as_posix() + "/"
        if not re.search(rf"(?<![\w.]){re.escape(path.stem)}(?![\w])", texts.get(folder, "")):
            missing.append(path.relative_to(REPO_ROOT).as_posix())
    return missing


def test_the_layout_reader_finds_a_module_in_its_folder_only():
    readme = "## Layout\n\n```\npkg/\n  a.py   x\n  sub/   holds b and\n                 c\n```\n"
    texts = layout_texts(readme)
    assert texts["pkg/sub/"].split() == ["sub/", "holds", "b", "and", "c"] and "b" not in texts["pkg/"].split()


def test_readme_layout_names_every_module_of_the_package():
    missing = missing_from_layout((REPO_ROOT / "README.md").read_text(encoding="utf-8"))
    assert not missing, f"README.md's layout does not name {len(missing)} modules: {', '.join(missing)}"
