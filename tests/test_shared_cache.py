"""Two users share one Hugging Face cache: the package removes nothing it has not proved bad, and nothing of the other
user's, whatever it finds.

The cache is filled online by this process (root); a second user (``nobody``) then runs commands on it offline.
Every folder of the cache is made writable to everyone, so a removal the package attempted would succeed: what stays
is what the package chose to leave.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest
from test_fault_matrix import RUNS, SHOW, blob, flip_byte, one_line, storage

from conftest import REPO_ROOT, cli_env, run_cli

OTHER_UID = 65534  # nobody: a user that owns no file of the cache

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="running a command as a second user needs root"
)


@pytest.fixture(scope="module")
def filled(hub):
    """A Hugging Face home filled online by this process, in a folder the second user can reach."""
    folder = Path(tempfile.mkdtemp(prefix="rlvrambench-shared-"))
    folder.chmod(0o755)
    result = run_cli(*SHOW, env=cli_env(HF_HOME=str(folder / "hf")))
    assert result.returncode == 0, result.stderr
    yield folder / "hf"
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def shared(filled):
    """A private copy of the filled home; every folder writable to everyone, every file root's."""
    folder = Path(tempfile.mkdtemp(prefix="rlvrambench-shared-"))
    folder.chmod(0o777)
    home = folder / "hf"
    shutil.copytree(filled, home, symlinks=True)
    for path in [home, *home.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o777)
    yield home
    shutil.rmtree(folder, ignore_errors=True)


def entries(home: Path) -> dict[str, tuple[int, int]]:
    """Every entry of the cache with its inode and size (a removed or replaced entry changes this)."""
    return {str(p.relative_to(home)): (p.lstat().st_ino, p.lstat().st_size) for p in home.rglob("*")}


def _as_other(argv: list[str], **env: str) -> subprocess.CompletedProcess:
    path = os.pathsep.join([str(REPO_ROOT), sysconfig.get_paths()["purelib"]])  # this environment's packages
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        env=cli_env(PYTHONPATH=path, **env),
        cwd=env.get("HOME", "/"),
        timeout=120,
        user=OTHER_UID,
        group=OTHER_UID,
        extra_groups=[],
    )


@pytest.fixture(scope="module")
def interpreter() -> str:
    """A Python the second user can run with this environment's packages: this one, or the system's of the same
    version (this one may live in a folder only root can enter)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in dict.fromkeys([sys.executable, shutil.which(version), f"/usr/bin/{version}"]):
        if candidate is None:
            continue
        try:
            probe = _as_other([candidate, "-c", "import rlvrambench_hf.cli"], HOME="/")
        except OSError:
            continue
        if probe.returncode == 0:
            return candidate
    pytest.skip(f"no {version} that user {OTHER_UID} can run with this environment's packages")


def as_other_user(interpreter: str, home: Path, *args: str) -> subprocess.CompletedProcess:
    return _as_other(
        [interpreter, "-m", "rlvrambench_hf", *args], HF_HOME=str(home), HF_HUB_OFFLINE="1", HOME=str(home.parent)
    )


def test_an_unreadable_blob_is_named_and_nothing_is_removed(shared, interpreter):
    target = blob(shared, RUNS)
    target.chmod(0o600)
    before = entries(shared)
    result = as_other_user(interpreter, shared, *SHOW)
    line = one_line(result)
    assert result.returncode == 2 and str(target) in line and "cannot be read" in line, line
    assert "HF_HUB_CACHE" in line and "corrupted" not in line
    assert entries(shared) == before


def test_an_unreadable_reference_is_named_and_nothing_is_removed(shared, interpreter):
    """The reported case: refs/main unreadable to the second user was called corrupted and removed, with a blob."""
    ref = storage(shared) / "refs" / "main"
    ref.chmod(0o600)
    before = entries(shared)
    result = as_other_user(interpreter, shared, *SHOW)
    line = one_line(result)
    assert result.returncode == 2 and str(ref) in line and "cannot be read" in line, line
    assert "HF_HUB_CACHE" in line and "corrupted" not in line
    assert entries(shared) == before


def test_a_corrupted_blob_of_another_user_is_reported_and_left(shared, interpreter):
    target = blob(shared, RUNS)
    flip_byte(target)
    before = entries(shared)
    result = as_other_user(interpreter, shared, *SHOW)
    line = one_line(result)
    assert result.returncode == 2 and "is corrupted and cannot be removed" in line, line
    assert "belongs to another user" in line and target.name in line and "HF_HUB_CACHE" in line, line
    assert entries(shared) == before


def test_a_corrupted_reference_of_another_user_is_reported_and_left(shared, interpreter):
    ref = storage(shared) / "refs" / "main"
    ref.write_text("not a commit")
    before = entries(shared)
    result = as_other_user(interpreter, shared, *SHOW)
    line = one_line(result)
    assert result.returncode == 2 and "cached reference refs/main" in line and "belongs to another user" in line
    assert entries(shared) == before and ref.read_text() == "not a commit"


def test_the_owner_still_repairs_what_it_proved_bad(shared):
    """The same corrupted blob, found by the user who owns it: removed, as before."""
    target = blob(shared, RUNS)
    flip_byte(target)
    result = run_cli(*SHOW, env=cli_env(HF_HOME=str(shared), HF_HUB_OFFLINE="1"))
    assert result.returncode == 2 and "it was removed" in one_line(result)
    assert not os.path.lexists(target)
