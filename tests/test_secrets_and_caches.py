"""Secrets never leave, and caches that cannot be written are named — through the olah-served Hub.

A mirror behind basic authentication (``HF_ENDPOINT=http://user:password@host``) and a token: every byte that
failing commands write (stdout, stderr, output folders; with and without ``--debug``) is searched for them.
A read-only Hugging Face home (simulated for root by dropping the capabilities that let root write anywhere) is one
line naming the folder and the variables that move it; a complete read-only cache keeps working where the
libraries allow it, and a corrupted copy that cannot be removed is reported as exactly that.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from test_fault_matrix import blob, flip_byte

from conftest import REPO_ID, SNAPSHOT, cli_env, run_cli
from faultproxy import FaultProxy
from hubserver import closed_port

PASSWORD = "pa55-w0rd-of-the-mirror"
TOKEN = "hf_" + "Qz7Rw2" * 6
SHOW = ("--revision", "main", "show", "eligible_runs")


def credentialed(port: int) -> str:
    return f"http://mirror-user:{PASSWORD}@127.0.0.1:{port}"


def written(result: subprocess.CompletedProcess, folder: Path) -> bytes:
    """Every byte a command wrote: its stdout, its stderr and the files under ``folder``."""
    files = [p.read_bytes() for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]
    return b"\n".join([result.stdout.encode(), result.stderr.encode(), *files])


def leaks(data: bytes) -> list[str]:
    return [s for s in (PASSWORD, TOKEN, TOKEN[3:], "mirror-user:") if s.encode() in data]


@pytest.mark.parametrize("debug", [False, True], ids=["plain", "debug"])
def test_no_credential_appears_in_what_failing_commands_write(hub, tmp_path: Path, debug: bool) -> None:
    (tmp_path / "p.csv").write_text("query_id,predicted_state\nq,within_margin\n")
    proxy = FaultProxy(hub.port, b"runs.csv", ["flip"], cut_after=5000)
    flag = ["--debug"] if debug else []
    scenarios = {
        "unreachable": (closed_port(), ["--revision", "main", "configs"]),
        "unreachable evaluate": (closed_port(), ["evaluate", "--predictions", "p.csv", "--output", "out/s.json"]),
        "corrupting server": (proxy.port, list(SHOW)),
        "bad revision": (hub.port, ["--revision", "v9.9.9", "show", "eligible_runs"]),
        "missing file": (hub.port, ["--revision", "main", "show", "configuration_feasibility"]),
    }
    try:
        for name, (port, args) in scenarios.items():
            work = tmp_path / name.replace(" ", "-")
            (work / "out").mkdir(parents=True)
            shutil.copy(tmp_path / "p.csv", work)
            env = cli_env(HF_HOME=str(work / "hf"), HF_ENDPOINT=credentialed(port), HF_TOKEN=TOKEN)
            result = run_cli(*flag, *args, env=env, cwd=work, timeout=120)
            assert result.returncode == 2, (name, result.stderr[-500:])
            assert leaks(written(result, work)) == [], name
            line = result.stderr.strip().splitlines()[-1]
            assert line.startswith("rlvrambench: error: "), line
            if name != "missing file":  # these name the server: without its credentials
                assert f"http://***@127.0.0.1:{port}" in line, line
            assert ("Traceback" in result.stderr) == debug
    finally:
        proxy.close()


def test_a_credentialed_mirror_still_works_and_prints_no_credential(hub, tmp_path: Path) -> None:
    env = cli_env(HF_HOME=str(tmp_path / "hf"), HF_ENDPOINT=credentialed(hub.port), HF_TOKEN=TOKEN)
    result = run_cli(
        "--revision", "main", "export", "eligible_runs", "--format", "csv", "--output", "r.csv", env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert leaks(written(result, tmp_path)) == [] and (tmp_path / "r.csv").stat().st_size > 0


# ---- read-only caches -------------------------------------------------------------------------------------------


def read_only_prefix() -> list[str]:
    """How to run a process for which a folder without write permission is read-only: as is for a normal user;
    for root, without the capabilities that let it write anywhere."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be simulated")
    prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner,-linux_immutable"]
    probe = subprocess.run([*prefix, "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"setpriv cannot drop capabilities here: {probe.stderr.decode().strip()}")
    return prefix


@pytest.fixture
def read_only():
    """Make folders read-only for the test's processes (restored afterwards, so that they can be removed)."""
    made: list[Path] = []

    def make(folder: Path) -> list[str]:
        folder.mkdir(parents=True, exist_ok=True)
        for path in [folder, *folder.rglob("*")]:
            if not path.is_symlink():
                path.chmod(stat.S_IMODE(path.stat().st_mode) & ~0o222)
        made.append(folder)
        return read_only_prefix()

    yield make
    for folder in made:
        for path in [folder, *folder.rglob("*")]:
            if not path.is_symlink():
                path.chmod(stat.S_IMODE(path.stat().st_mode) | 0o200)


def python(prefix: list[str], code: str, env: dict, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*prefix, sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


API = """
import sys
from rlvrambench_hf.errors import RLVRAMBenchError
try:
    {body}
except RLVRAMBenchError as exc:
    print(type(exc).__name__ + ": " + str(exc))
    sys.exit(2)
"""


def test_python_on_a_read_only_home_names_the_folder_and_the_variables(tmp_path: Path, read_only) -> None:
    home = tmp_path / "hf-home"
    prefix = read_only(home)
    env = cli_env(HF_HOME=str(home), RLVRAMBENCH_SOURCE=str(SNAPSHOT))
    loaded = python(
        prefix, API.format(body="from rlvrambench_hf import load_dataset\n    load_dataset('eligible_runs')"), env
    )
    assert loaded.returncode == 2, loaded.stderr
    assert loaded.stdout.strip() == (
        f"SourceError: the datasets cache {home / 'datasets'} cannot be written (Permission denied): set "
        "HF_DATASETS_CACHE (or HF_HOME) to a writable folder"
    )
    metric = python(
        prefix, API.format(body="import evaluate, rlvrambench_hf\n    evaluate.load(rlvrambench_hf.metric_path())"), env
    )
    assert metric.returncode == 2, metric.stderr
    assert metric.stdout.startswith(f"SourceError: the evaluate modules cache {home / 'modules'} cannot be written")
    assert "set HF_MODULES_CACHE (or HF_HOME) to a writable folder" in metric.stdout
    moved = cli_env(HF_HOME=str(home), RLVRAMBENCH_SOURCE=str(SNAPSHOT), HF_DATASETS_CACHE=str(tmp_path / "ds"))
    assert (
        python(
            prefix, API.format(body="from rlvrambench_hf import load_dataset\n    load_dataset('eligible_runs')"), moved
        ).returncode
        == 0
    )  # the variable the line names moves it


def test_the_command_line_on_a_read_only_home(hub, tmp_path: Path, read_only) -> None:
    home = tmp_path / "hf-home"
    prefix = read_only(home)
    result = subprocess.run(
        [*prefix, sys.executable, "-m", "rlvrambench_hf", *SHOW],
        env=cli_env(HF_HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert f"the Hugging Face Hub cache {home / 'hub'} cannot be written" in result.stderr
    assert "set HF_HUB_CACHE (or HF_HOME) to a writable folder" in result.stderr


@pytest.fixture
def warm_home(hub, tmp_path: Path) -> Path:
    home = tmp_path / "hf-home"
    assert run_cli("--revision", "main", "verify", env=cli_env(HF_HOME=str(home))).returncode == 0
    return home


def test_a_complete_read_only_cache_keeps_working(warm_home: Path, read_only, tmp_path: Path) -> None:
    expected = run_cli(*SHOW, env=cli_env(HF_HOME=str(warm_home)))
    prefix = read_only(warm_home)
    for offline in ("1", None):
        env = cli_env(HF_HOME=str(warm_home), HF_HUB_OFFLINE=offline)
        result = subprocess.run(
            [*prefix, sys.executable, "-m", "rlvrambench_hf", *SHOW],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (result.returncode, result.stdout, result.stderr) == (0, expected.stdout, ""), offline
    api = (
        "from rlvrambench_hf import load_table\nprint(load_table('eligible_runs', '" + REPO_ID + "', 'main').num_rows)"
    )
    done = python(prefix, api, cli_env(HF_HOME=str(warm_home), HF_HUB_OFFLINE="1"))
    assert done.returncode == 0 and done.stdout.strip() == "612", done.stderr


def test_a_corrupted_copy_that_cannot_be_removed_is_named_as_such(warm_home: Path, read_only) -> None:
    flip_byte(blob(warm_home, "benchmark/runs.csv"))
    prefix = read_only(warm_home)
    for offline in (None, "1"):
        env = cli_env(HF_HOME=str(warm_home), HF_HUB_OFFLINE=offline)
        result = subprocess.run(
            [*prefix, sys.executable, "-m", "rlvrambench_hf", *SHOW],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        line = result.stderr.strip()
        assert result.returncode == 2 and len(line.splitlines()) == 1, result.stderr
        assert "the cached copy of benchmark/runs.csv (kobzaond/RLVRAMBench@main) is corrupted and cannot be " in line
        assert "as served by" not in line and "HF_HUB_CACHE" in line
    assert blob(warm_home, "benchmark/runs.csv").read_bytes() != (SNAPSHOT / "benchmark/runs.csv").read_bytes()
