"""The metric by name: the installed module's path, its Hub Space folder, and ``evaluate.load("<owner>/<name>")``
through a Hub that serves the Space (olah serves ``spaces/`` mirrors like dataset ones)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import rlvrambench_hf
from rlvrambench_hf.errors import InputError, IntegrityError
from rlvrambench_hf.release.space import DEFAULT_SPACE_ID, check_space, push_space, space_files, write_space

from conftest import cli_env, invoke, run_cli
from hubserver import REPO_ROOT

SPACE_ID = "rlvrambench-tests/rlvmetric"
evaluate = pytest.importorskip("evaluate")


@pytest.fixture(scope="module")
def baseline(snapshot, tmp_path_factory) -> tuple[Path, dict]:
    """source_label predictions (CSV) and the score file `rlvrambench evaluate` writes for them."""
    folder = tmp_path_factory.mktemp("baseline")
    predictions, scores = folder / "p.csv", folder / "s.json"
    assert invoke("--source", str(snapshot), "baseline", "--output", str(predictions)).returncode == 0
    done = invoke("--source", str(snapshot), "evaluate", "--predictions", str(predictions), "--output", str(scores))
    assert done.returncode == 0, done.stderr
    return predictions, json.loads(scores.read_text())


@pytest.fixture(scope="module")
def space(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("space") / "rlvmetric"  # named like the module, as evaluate.load(dir) wants
    result = invoke("metric", "space", "--output", str(folder), "--repo-id", SPACE_ID)
    assert result.returncode == 0, result.stderr
    return folder


def test_metric_path_is_the_module_folder_in_the_package():
    path = Path(rlvrambench_hf.metric_path())
    assert path.name == "rlvrambench" and (path / "rlvrambench.py").is_file() and (path / "README.md").is_file()
    assert (path / "rlvrambench.py").read_bytes() == (REPO_ROOT / "metrics/rlvrambench/rlvrambench.py").read_bytes()
    assert invoke("metric", "path").stdout.strip() == str(path)
    script = Path(rlvrambench_hf.loading_script_path())
    assert script.read_bytes() == (REPO_ROOT / "loading_script/rlvrambench.py").read_bytes()
    assert invoke("metric", "path", "--loading-script").stdout.strip() == str(script)


def test_space_folder_has_module_card_app_and_requirements(space):
    assert sorted(p.name for p in space.iterdir()) == ["README.md", "app.py", "requirements.txt", "rlvmetric.py"]
    assert (space / "rlvmetric.py").read_bytes() == (REPO_ROOT / "metrics/rlvrambench/rlvrambench.py").read_bytes()
    app = (space / "app.py").read_text()
    assert f'evaluate.load("{SPACE_ID}")' in app and "launch_gradio_widget(module)" in app
    requirements = (space / "requirements.txt").read_text().splitlines()
    assert f"rlvrambench-hf=={rlvrambench_hf.__version__}" in requirements
    from rlvrambench_hf.data.schema.card import read_front_matter

    card = (space / "README.md").read_text()
    meta = read_front_matter(card, "space card")
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py" and {"evaluate", "metric"} <= set(meta["tags"])
    assert f'evaluate.load("{SPACE_ID}")' in card and DEFAULT_SPACE_ID not in card
    check_space(space, SPACE_ID)


def test_evaluate_load_of_the_space_folder_equals_the_cli(snapshot, space, baseline, monkeypatch):
    monkeypatch.setenv("RLVRAMBENCH_SOURCE", str(snapshot))
    predictions, expected = baseline
    ids, states = zip(*(line.split(",") for line in predictions.read_text().splitlines()[1:]))
    metric = evaluate.load(str(space))
    assert metric.compute(predictions=list(states), query_ids=list(ids)) == expected
    admission = evaluate.load(str(space), "admission")
    assert set(admission.features) == {"candidate_ids", "decisions"}


def test_space_check_refuses_stale_or_foreign_folders(space, tmp_path):
    with pytest.raises(IntegrityError, match="README.md: differs from what rlvrambench-hf writes for other/rlvmetric"):
        check_space(space, "other/rlvmetric")  # the same module name, but card and app name another Space
    copy = write_space(tmp_path / "copy", SPACE_ID)
    (copy / "rlvmetric.py").write_text("# an older module\n")
    (copy / "notes.txt").write_text("x")
    with pytest.raises(IntegrityError, match=r"rlvmetric.py: differs .* 1 more problem\(s\)\)"):
        check_space(copy, SPACE_ID)
    with pytest.raises(InputError, match="is not empty"):
        write_space(copy, SPACE_ID)
    write_space(copy, SPACE_ID, overwrite=True)
    (copy / "notes.txt").unlink()
    check_space(copy, SPACE_ID)
    with pytest.raises(InputError, match="must be OWNER/NAME"):
        space_files("no-owner")


@pytest.fixture(scope="module")
def served_space(hub, space) -> str:
    """The Space folder as a Space repository of the olah-served Hub."""
    return hub.add_repo(SPACE_ID, space, message="metric", repo_type="space")


LOAD_BY_NAME = """
import json, sys, evaluate
ids, states = json.load(open(sys.argv[1]))
metric = evaluate.load({space_id!r})  # the documented line: the Space by name
print(json.dumps(metric.compute(predictions=states, query_ids=ids)))
"""


def test_evaluate_load_by_name_through_the_hub(snapshot, served_space, baseline, tmp_path):
    predictions, expected = baseline
    ids, states = zip(*(line.split(",") for line in predictions.read_text().splitlines()[1:]))
    (tmp_path / "rows.json").write_text(json.dumps([ids, states]))
    # evaluate first asks for the revision named after its own version (v0.4.6) and falls back to main on a 404;
    # olah answers 401 for an unknown revision, so the tests name the branch with evaluate's HF_SCRIPTS_VERSION.
    env = cli_env(RLVRAMBENCH_SOURCE=str(snapshot), HF_SCRIPTS_VERSION="main", HF_HOME=str(tmp_path / "hf"))
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(LOAD_BY_NAME.format(space_id=SPACE_ID)), str(tmp_path / "rows.json")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == expected
    cached = list((tmp_path / "hf").rglob("rlvmetric.py"))
    assert cached and cached[0].read_bytes() == (REPO_ROOT / "metrics/rlvrambench/rlvrambench.py").read_bytes()


def test_metric_push_dry_run_plans_against_the_space(hub, served_space, space, tmp_path):
    env = cli_env(HF_TOKEN=None, HF_HOME=str(tmp_path / "hf"))
    done = run_cli("metric", "push", str(space), "--repo-id", SPACE_ID, "--dry-run", "--json", env=env)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout[: done.stdout.rindex("}") + 1])
    assert plan["remote_commit"] == served_space
    assert (plan["add"], plan["replace"], plan["delete"]) == ([], [], [])
    assert sorted(plan["unchanged"]) == ["README.md", "app.py", "requirements.txt", "rlvmetric.py"]
    assert "dry run: nothing was changed" in done.stdout
    other = write_space(tmp_path / "other", "rlvrambench-tests/not-there")
    result = push_space(other, "rlvrambench-tests/not-there", dry_run=True)  # a Space that does not exist yet
    assert result.plan.remote_commit is None and sorted(result.plan.add) == sorted(space_files("a/not-there"))


def test_metric_push_refuses_a_folder_that_fails_verification_and_needs_a_token(space, tmp_path):
    copy = write_space(tmp_path / "copy", SPACE_ID)
    (copy / "app.py").write_text("print('hello')\n")
    done = invoke("metric", "push", str(copy), "--repo-id", SPACE_ID, "--dry-run")
    assert done.returncode == 2 and "app.py: differs" in done.stderr and len(done.stderr.splitlines()) == 1
    env = cli_env(HF_TOKEN=None, HF_HOME=str(tmp_path / "hf"), HF_TOKEN_PATH=str(tmp_path / "no-token"))
    done = run_cli("metric", "push", str(space), "--repo-id", SPACE_ID, env=env)
    assert done.returncode == 2 and "no Hugging Face token found" in done.stderr
