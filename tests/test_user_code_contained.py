"""User code (``--policy``, ``--estimator``) contained from import to exit: it is imported, created and called in a
child process group that the command ends, whatever the code does and however the command ends. Each escape gives
one line and a non-zero exit with nothing written, and no process of the group is left (counted in /proc)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import hostile_driver
import pytest

from rlvrambench_hf.scoring import contained

from conftest import SNAPSHOT, cli_env
from hubserver import REPO_ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups are counted in /proc")

POLICY = """
import os, sys, threading, time

class Policy:
    name = "contained"

    def initial_decisions(self, task):
        return {c: "abstain" for c in task.candidate_ids}

    def next_action(self, task, revealed):
        return "stop"
"""


def living(group: int) -> list[int]:
    """The processes of process group ``group`` that still run (zombies are dead: they only wait to be reaped)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            found.append(int(entry.name))
    return found


@pytest.fixture
def groups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The process group of every child the package starts during the test (its leader's pid)."""
    started: list[int] = []
    original = contained.Child.__init__

    def recording(self: contained.Child, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        started.append(self.pid)

    monkeypatch.setattr(contained.Child, "__init__", recording)
    return started


def run_cli(argv: list[str], folder: Path) -> dict:
    """``argv`` run as the console script runs it, in this process, file descriptors 0-2 captured (pytest's own
    capture of ``sys.stdout`` and ``sys.stderr`` set aside meanwhile)."""
    saved = sys.stdout, sys.stderr
    sys.stdout = open(1, "w", closefd=False, encoding="utf-8")
    sys.stderr = open(2, "w", closefd=False, encoding="utf-8")
    try:
        return hostile_driver.run({"argv": argv, "cwd": str(folder), "stdin": None, "fifo": None})
    finally:
        sys.stdout, sys.stderr = saved


def run_policy(folder: Path, body: str, attr: str = "Policy") -> dict:
    (folder / "mine.py").write_text(POLICY + "\n" + body + "\n")
    argv = ["--source", str(SNAPSHOT), "replay", "--policy", f"mine.py:{attr}", "--budgets", "0"]
    argv += ["--timeout", "20", "--output", str(folder / "out.json")]
    return run_cli(argv, folder)


ESCAPES = {
    "os._exit(0) at import": ("os._exit(0)", "Policy", "ended the process it ran in (exit status 0)"),
    "a thread that never ends, started at import": (
        "threading.Thread(target=time.sleep, args=(3600,)).start()",
        "Policy",
        "left 1 thread(s) running",
    ),
    "a fork at import": ("if os.fork() == 0:\n    time.sleep(3600)", "Policy", "forked a process"),
    "a forked copy that also returns": (
        "class Forks(Policy):\n    def initial_decisions(self, task):\n        os.fork()\n"
        "        return super().initial_decisions(task)",
        "Forks",
        "initial_decisions forked a process",
    ),
    "a fork that sleeps in initial_decisions": (
        "class Sleeper(Policy):\n    def initial_decisions(self, task):\n        if os.fork() == 0:\n"
        "            time.sleep(3600)\n        return super().initial_decisions(task)",
        "Sleeper",
        "initial_decisions forked a process",
    ),
    "sys.exit(0) in initial_decisions": (
        "class Exits(Policy):\n    def initial_decisions(self, task):\n        sys.exit(0)",
        "Exits",
        "initial_decisions raised SystemExit",
    ),
}


@pytest.mark.parametrize("escape", list(ESCAPES))
def test_an_escape_is_one_line_with_nothing_written_and_no_process_left(
    tmp_path: Path, groups: list[int], escape: str
) -> None:
    body, attr, said = ESCAPES[escape]
    result = run_policy(tmp_path, body, attr)
    lines = result["stderr"].splitlines()
    assert result["status"] == 2, result
    assert len(lines) == 1 and said in lines[0], lines
    assert result["stdout"] == ""
    assert not (tmp_path / "out.json").exists()
    assert groups, "the policy did not run in a child process"
    assert all(living(group) == [] for group in groups), [living(g) for g in groups]


def test_what_user_code_prints_is_bounded_and_never_ahead_of_the_output(tmp_path: Path, groups: list[int]) -> None:
    body = (
        "class Loud(Policy):\n    def initial_decisions(self, task):\n"
        "        sys.stdout.write('x' * (100 << 20))\n        return super().initial_decisions(task)"
    )
    result = run_policy(tmp_path, body, "Loud")
    assert result["status"] == 0, result["stderr"][-2000:]
    assert "x" * 100 not in result["stdout"]  # the command's own output only
    assert len(result["stderr"]) < 4 * contained.OUTPUT_KEPT
    assert "policy contained printed" in result["stderr"] and "more bytes not shown" in result["stderr"]
    assert (tmp_path / "out.json").is_file()
    assert all(living(group) == [] for group in groups)


def test_user_code_memory_is_bounded(tmp_path: Path, groups: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(contained.MEMORY_ENV, "256")
    body = "class Hog(Policy):\n    def initial_decisions(self, task):\n        return bytearray(1 << 30)"
    result = run_policy(tmp_path, body, "Hog")
    lines = result["stderr"].splitlines()
    assert result["status"] == 2 and len(lines) == 1, result
    assert "MemoryError" in lines[0] and contained.MEMORY_ENV in lines[0], lines
    assert all(living(group) == [] for group in groups)


def test_an_estimator_that_exits_at_import(tmp_path: Path, groups: list[int]) -> None:
    (tmp_path / "est.py").write_text("import os\nos._exit(0)\n")
    argv = ["--source", str(SNAPSHOT), "estimate", "compare", "--estimator", "est.py:Estimator"]
    argv += ["--output", str(tmp_path / "out.json")]
    result = run_cli(argv, tmp_path)
    lines = result["stderr"].splitlines()
    assert result["status"] == 2 and len(lines) == 1 and "ended the process it ran in" in lines[0], result
    assert not (tmp_path / "out.json").exists()
    assert all(living(group) == [] for group in groups)


def test_a_killed_command_takes_its_policy_and_the_policys_forks_with_it(tmp_path: Path) -> None:
    marker = tmp_path / "group"
    body = (
        "class Stuck(Policy):\n    def initial_decisions(self, task):\n        if os.fork() == 0:\n"
        "            time.sleep(3600)\n"
        f"        open({str(marker)!r}, 'w').write(str(os.getpgid(0)))\n        time.sleep(3600)"
    )
    (tmp_path / "mine.py").write_text(POLICY + "\n" + body + "\n")
    command = [sys.executable, "-m", "rlvrambench_hf", "--source", str(SNAPSHOT), "replay", "--policy"]
    command += ["mine.py:Stuck", "--budgets", "0", "--output", str(tmp_path / "out.json")]
    env = cli_env(PYTHONPATH=str(REPO_ROOT))
    parent = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            if marker.is_file() and marker.read_text():
                break
            assert parent.poll() is None, "the command ended before its policy ran"
            time.sleep(0.05)
        group = int(marker.read_text())
        assert len(living(group)) == 2  # the policy's process and its fork
    finally:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
    for _ in range(200):
        if not living(group):
            break
        time.sleep(0.05)
    assert living(group) == []
    assert not (tmp_path / "out.json").exists()
