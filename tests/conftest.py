"""Test environment: an isolated Hugging Face cache and a real Hub-protocol server (olah) on loopback.

The environment is set before anything imports huggingface_hub (it reads HF_ENDPOINT and HF_HOME at import):
HF_HOME is a fresh temporary folder and HF_ENDPOINT points at the port the session's olah server will use.
The server itself starts on first use of the ``hub`` fixture.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from hubserver import REPO_ROOT, HubServer, free_port

SNAPSHOT = Path(os.environ.get("RLVRAMBENCH_SNAPSHOT") or REPO_ROOT.parent / "shared" / "rlvrambench" / "hub").resolve()
REPO_ID = "kobzaond/RLVRAMBench"
_SESSION_DIR = Path(tempfile.mkdtemp(prefix="rlvrambench-tests-"))
_PORT = free_port()

for _name in (
    "RLVRAMBENCH_SOURCE",
    "RLVRAMBENCH_REVISION",
    "HF_HUB_OFFLINE",
    "HF_DATASETS_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_TOKEN",
    "HF_DATASETS_CACHE",
    "HF_HUB_CACHE",
):
    os.environ.pop(_name, None)
os.environ.update(
    {
        "HF_HOME": str(_SESSION_DIR / "hf-home"),
        "HF_ENDPOINT": f"http://127.0.0.1:{_PORT}",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_ETAG_TIMEOUT": "10",
    }
)


@pytest.fixture(scope="session")
def snapshot() -> Path:
    """The real release files (read-only)."""
    if not (SNAPSHOT / "README.md").is_file():
        pytest.fail(f"release snapshot not found at {SNAPSHOT}; set RLVRAMBENCH_SNAPSHOT")
    return SNAPSHOT


@pytest.fixture(scope="session")
def hub(snapshot: Path):
    """An olah server whose repository kobzaond/RLVRAMBench is a git repository of the snapshot."""
    server = HubServer(_SESSION_DIR / "olah", port=_PORT)
    server.first_commit = server.add_repo(REPO_ID, snapshot)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def cli_env(**extra: str | None) -> dict[str, str]:
    """The test environment for a subprocess, with ``extra`` set (None removes a variable)."""
    env = dict(os.environ)
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: str | Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Run ``rlvrambench ARGS`` in a fresh interpreter, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "rlvrambench_hf", *args],
        capture_output=True,
        text=True,
        env=env or cli_env(),
        cwd=cwd,
        timeout=timeout,
    )


@pytest.fixture
def hf_home(tmp_path: Path) -> Path:
    """A fresh, empty Hugging Face home for one test (pass it to subprocesses as HF_HOME)."""
    home = tmp_path / "hf-home"
    home.mkdir()
    return home


from packagedverl import packaged_verl, verl_trainer_configs  # noqa: E402,F401  (session fixtures)
