"""What a pip-installed user gets: the sdist and wheel built with ``build`` and checked (``twine check``,
``check-wheel-contents``), the wheel installed alone into a fresh virtualenv outside the repository (no extras:
neither matplotlib nor mlcroissant), and used from a folder outside it against the olah-served Hub.

``make package-check`` runs this file (``make test`` runs it first); the pip cache makes the install take seconds.
"""

from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

import rlvrambench_hf

from conftest import REPO_ID, cli_env
from hubserver import REPO_ROOT
from test_examples import readme_first_command

PACKAGE_FILES = (  # shipped beside the code: the metric, its card, the loading script and the card template
    "metrics/rlvrambench/rlvrambench.py",
    "metrics/rlvrambench/README.md",
    "loading_script/rlvrambench.py",
    "cards/dataset_card.md",
)
METRIC_CONFIGS = ("transfer", "admission", "estimation")


def run(args: list[str], *, cwd: Path | None = None, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=env or cli_env(), timeout=600, **kwargs)


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """The sdist, then the wheel built from it (as pip would), in a folder outside the repository."""
    out = tmp_path_factory.mktemp("dist")
    done = run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO_ROOT)])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "WARNING" not in done.stdout + done.stderr, "setuptools warned while building"
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Path:
    """A fresh virtualenv (outside the repository) with only the wheel and its dependencies."""
    folder = tmp_path_factory.mktemp("wheel-venv") / "venv"
    assert REPO_ROOT not in folder.parents
    done = run([sys.executable, "-m", "venv", str(folder)])
    assert done.returncode == 0, done.stderr
    pip = [str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile", str(dist["wheel"])]
    done = run(pip, env=cli_env(PIP_DISABLE_PIP_VERSION_CHECK="1"))
    assert done.returncode == 0, done.stderr[-3000:]
    return folder


@pytest.fixture
def outside(tmp_path) -> Path:
    """A working folder outside the repository (so that nothing of the clone can be picked up)."""
    assert REPO_ROOT not in tmp_path.parents
    return tmp_path


def in_venv(venv: Path, *args: str, cwd: Path, **env: str | None) -> subprocess.CompletedProcess:
    """``args`` run with the virtualenv's program, as its user runs them: modules are compiled once and their bytecode
    kept (a test environment that sets PYTHONDONTWRITEBYTECODE would compile datasets & co. again in every process)."""
    settings: dict[str, str | None] = {"PYTHONPATH": None, "PYTHONDONTWRITEBYTECODE": None, **env}
    return run([str(venv / "bin" / args[0]), *args[1:]], cwd=cwd, env=cli_env(**settings))


def test_sdist_and_wheel_pass_twine_and_check_wheel_contents(dist):
    twine = run([sys.executable, "-m", "twine", "check", "--strict", str(dist["sdist"]), str(dist["wheel"])])
    assert twine.returncode == 0 and twine.stdout.count("PASSED") == 2, twine.stdout + twine.stderr
    contents = run([sys.executable, "-m", "check_wheel_contents", str(dist["wheel"])])
    assert contents.returncode == 0 and contents.stdout.strip().endswith("OK"), contents.stdout + contents.stderr


def test_wheel_and_sdist_carry_the_metric_and_the_loading_script(dist):
    wheel = zipfile.ZipFile(dist["wheel"])
    for rel in PACKAGE_FILES:
        assert wheel.read(f"rlvrambench_hf/{rel}") == (REPO_ROOT / rel).read_bytes(), rel
    metadata = wheel.read(f"rlvrambench_hf-{rlvrambench_hf.__version__}.dist-info/METADATA").decode()
    assert f"Version: {rlvrambench_hf.__version__}" in metadata
    assert "Provides-Extra: plots" in metadata and "Provides-Extra: release" in metadata
    assert "License-File: LICENSE" in metadata and "Project-URL: Dataset, " in metadata
    assert wheel.read(f"rlvrambench_hf-{rlvrambench_hf.__version__}.dist-info/licenses/LICENSE").startswith(b"MIT")
    modules = {
        f"rlvrambench_hf/{p.relative_to(REPO_ROOT / 'rlvrambench_hf').as_posix()}"
        for p in (REPO_ROOT / "rlvrambench_hf").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert not modules - set(wheel.namelist()), "modules left out of the wheel"
    examples = [p for p in (REPO_ROOT / "rlvrambench_hf" / "examples").rglob("*") if p.is_file()]
    assert {"qwen2.5-3b-grpo-lora.sh", "qwen2.5-1.5b-grpo-lora.sh"} <= {p.name for p in examples}
    for path in examples:  # the example launch files, byte for byte (advise --verl example:NAME)
        rel = path.relative_to(REPO_ROOT).as_posix()
        assert wheel.read(rel) == path.read_bytes(), rel
    with tarfile.open(dist["sdist"]) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert set(PACKAGE_FILES) | {"pyproject.toml", "README.md", "LICENSE", "setup.py"} <= names


def test_the_readmes_first_command_on_the_installed_wheel(venv, outside, snapshot):
    """README.md's first command, as written, answers from the installed wheel in a folder outside the repository:
    the example launch file travels in the wheel, and its workload is read from its data files."""
    command, shown = readme_first_command()
    argv = command.split()
    assert argv[0] == "rlvrambench" and "example:qwen2.5-3b-grpo-lora" in argv
    home = outside / "home"
    done = in_venv(venv, *argv, cwd=outside, RLVRAMBENCH_SOURCE=str(snapshot), HF_HOME=str(home / "hf"), HOME=str(home))
    assert done.returncode == 0, done.stderr[-3000:]
    checker = doctest.OutputChecker()
    options = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    assert checker.check_output(shown, done.stdout + done.stderr, options), done.stdout
    installed = done.stdout.strip().splitlines()[-1]
    assert installed.startswith("example:qwen2.5-3b-grpo-lora is " + str(venv)), installed
    assert sorted(os.listdir(outside)) == ["home"]
    for name in ("qwen2.5-1.5b-grpo-lora", "no-such-example"):  # the TRL example, its files beside it; a wrong name
        done = in_venv(venv, "rlvrambench", "--source", str(snapshot), "advise", "--trl", f"example:{name}", "--gpu",
                       "H100", cwd=outside, HF_HOME=str(home / "hf"), HOME=str(home))  # fmt: skip
        if name == "no-such-example":
            assert done.returncode == 2 and done.stderr.strip().endswith(
                "(examples: qwen2.5-1.5b-grpo-lora, qwen2.5-3b-grpo-lora)"
            ), done.stderr
        else:
            assert done.returncode == 0 and done.stdout.startswith("planned-1: "), done.stderr[-3000:]


def test_version_and_no_extras(venv, outside):
    done = in_venv(venv, "rlvrambench", "--version", cwd=outside)
    assert done.returncode == 0 and done.stdout.strip() == f"rlvrambench-hf {rlvrambench_hf.__version__}"
    done = in_venv(venv, "python", "-c", "import importlib.util as u; print(u.find_spec('matplotlib'))", cwd=outside)
    assert done.stdout.strip() == "None"


LOAD = """
from datasets.distributed import split_dataset_by_node
from rlvrambench_hf import load_dataset
ds = load_dataset("admission_candidates", "test", source={repo!r}, revision="main")
stream = load_dataset("transfer_queries", "evaluation", source={repo!r}, revision="main", streaming=True)
ranks = [[r["query_id"] for r in split_dataset_by_node(stream, rank=k, world_size=2)] for k in (0, 1)]
print(ds.num_rows, type(ds.features["evaluation_state"]).__name__, stream.num_shards, len(ranks[0]), len(ranks[1]),
      len(set(ranks[0]) | set(ranks[1])))
"""


def test_load_a_config_through_the_hub(hub, venv, outside):
    done = in_venv(venv, "python", "-c", LOAD.format(repo=REPO_ID), cwd=outside, HF_HOME=str(outside / "hf"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["12", "ClassLabel", "24", "200", "200", "400"]


METRIC = """
import json, sys
import evaluate
import rlvrambench_hf
from rlvrambench_hf import load_table
from rlvrambench_hf.admission import score_decisions

ids, states = zip(*(line.split(",") for line in open(sys.argv[1]).read().splitlines()[1:]))
metric = evaluate.load(rlvrambench_hf.metric_path())  # the documented line, config "transfer"
transfer = metric.compute(predictions=list(states), query_ids=list(ids))
candidates = load_table("admission_candidates").column("candidate_id").to_pylist()
decisions = ["approve" if i % 3 else "reject" for i in range(len(candidates))]
admission = evaluate.load(rlvrambench_hf.metric_path(), "admission").compute(
    candidate_ids=candidates, decisions=decisions)
expected = score_decisions(candidates, decisions)
folds = json.load(open(sys.argv[2]))["folds"]  # rlvrambench estimate retrospective --output
rows = [r for fold in folds.values() for r in fold["predictions"] if r["method"] == "component_regression"]
estimation = evaluate.load(rlvrambench_hf.metric_path(), "estimation").compute(
    predictions=[r["predicted_state"] for r in rows], configuration_ids=[r["configuration_id"] for r in rows],
    predicted_peaks_mib={r["configuration_id"]: r["predicted_peak_mib"] for r in rows})
same_folds = all(estimation["folds"][f] == folds[f]["scores"]["component_regression"] for f in folds)
try:
    evaluate.load(rlvrambench_hf.metric_path(), "no_such_config")
except KeyError as exc:
    unknown = str(exc)
print(json.dumps({"transfer": transfer, "admission": admission == expected, "estimation": same_folds,
                  "unknown": unknown}))
"""


def test_the_documented_metric_line_equals_the_cli_for_every_config(hub, venv, outside):
    env = {"HF_HOME": str(outside / "hf"), "RLVRAMBENCH_SOURCE": REPO_ID, "RLVRAMBENCH_REVISION": "main"}
    done = in_venv(venv, "rlvrambench", "baseline", "--output", "p.csv", cwd=outside, **env)
    assert done.returncode == 0, done.stderr
    done = in_venv(venv, "rlvrambench", "evaluate", "--predictions", "p.csv", "--output", "s.json", cwd=outside, **env)
    assert done.returncode == 0, done.stderr
    assert "overall" in done.stdout
    done = in_venv(venv, "rlvrambench", "estimate", "retrospective", "--output", "r.json", cwd=outside, **env)
    assert done.returncode == 0, done.stderr
    (outside / "metric.py").write_text(textwrap.dedent(METRIC))
    done = in_venv(venv, "python", "metric.py", "p.csv", "r.json", cwd=outside, **env)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["transfer"] == json.loads((outside / "s.json").read_text())
    assert result["admission"] is True and result["estimation"] is True
    listed = ", ".join(METRIC_CONFIGS)
    assert result["unknown"].endswith(f"known configs: {listed}"), result["unknown"]  # the configs tested are all


def test_cli_evaluation_from_standard_input(hub, venv, outside, snapshot):
    env = {"HF_HOME": str(outside / "hf")}
    done = in_venv(venv, "rlvrambench", "--source", str(snapshot), "baseline", "--output", "p.csv", cwd=outside, **env)
    assert done.returncode == 0, done.stderr
    lines = (outside / "p.csv").read_text().splitlines()
    jsonl = "".join(json.dumps(dict(zip(("query_id", "predicted_state"), r.split(",")))) + "\n" for r in lines[1:])
    done = run(
        [str(venv / "bin" / "rlvrambench"), "--source", str(snapshot), "evaluate", "--predictions", "-"],
        cwd=outside,
        env=cli_env(PYTHONPATH=None, **env),
        input=jsonl,
    )
    assert done.returncode == 0, done.stderr
    assert any(line.split()[:4] == ["overall", "400", "52", "352"] for line in done.stdout.splitlines()), done.stdout


def test_missing_extras_are_one_line_naming_the_pip_install(venv, outside, snapshot):
    source = ["--source", str(snapshot)]
    for argv in (["plot", "feasibility"], ["report", "--output", "site"]):
        done = in_venv(venv, "rlvrambench", *source, *argv, cwd=outside)
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines() == [
            "rlvrambench: error: drawing figures needs matplotlib, which is not installed: "
            "pip install 'rlvrambench-hf[plots]'"
        ]
    assert sorted(os.listdir(outside)) == []
    done = in_venv(
        venv, "rlvrambench", *source, "release", "build", "--version", "1.1.0", "--output", "rel", cwd=outside
    )
    assert done.returncode == 0, done.stderr
    done = in_venv(venv, "rlvrambench", "release", "verify", "rel", cwd=outside)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "pip install 'rlvrambench-hf[release]' (or skip it with --no-croissant)" in done.stderr
    done = in_venv(venv, "rlvrambench", "release", "verify", "rel", "--no-croissant", cwd=outside)
    assert done.returncode == 0 and "verified" in done.stdout, done.stderr


def test_loading_script_and_space_from_the_wheel(venv, outside, snapshot):
    find = "import rlvrambench_hf; print(rlvrambench_hf.loading_script_path())"
    script = in_venv(venv, "python", "-c", find, cwd=outside).stdout.strip()
    assert str(venv) in script
    done = in_venv(
        venv, "python", script, "admission_attempts", str(snapshot), cwd=outside, HF_HOME=str(outside / "hf")
    )
    assert done.returncode == 0 and "admission_attempts / recorded: 48 rows" in done.stdout, done.stderr
    done = in_venv(venv, "rlvrambench", "metric", "space", "--output", "rlvrambench", cwd=outside)
    assert done.returncode == 0, done.stderr
    check = "import evaluate; print(sorted(evaluate.load('rlvrambench', 'admission').features))"
    done = in_venv(venv, "python", "-c", check, cwd=outside, HF_HOME=str(outside / "hf"))
    assert done.returncode == 0 and done.stdout.strip() == "['candidate_ids', 'decisions']", done.stderr
