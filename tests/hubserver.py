"""A real Hub-protocol server for the tests: olah serving git repositories made from release folders.

``HubServer`` lays out an olah mirrors folder (``datasets/<org>/<name>`` git repositories, and ``models/...`` or
``spaces/...`` ones when asked with ``repo_type``), starts
``olah-cli`` in offline mode on a loopback port and waits until it answers. Repositories can get new commits and
tags while it runs; the clients see them through ``HF_ENDPOINT`` exactly as they would see huggingface.co.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


_REFUSING: list[socket.socket] = []


def closed_port() -> int:
    """A loopback port that refuses every connection for as long as this process lives: bound and never listening,
    so no other process (another worker's server) can take it between the choice and the test's connection."""
    if not _REFUSING:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        _REFUSING.append(sock)
    return int(_REFUSING[0].getsockname()[1])


def olah_cli() -> str:
    """The olah-cli executable: $OLAH_CLI, the project's .venv-olah, or PATH."""
    candidates = [
        os.environ.get("OLAH_CLI"),
        str(REPO_ROOT / ".venv-olah" / "bin" / "olah-cli"),
        shutil.which("olah-cli"),
    ]
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            return str(Path(candidate).resolve())
    raise RuntimeError("olah-cli not found: run `make test` (it installs olah into .venv-olah) or set OLAH_CLI")


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": "2026-09-15T00:00:00Z", "GIT_COMMITTER_DATE": "2026-09-15T00:00:00Z"}
    out = subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=rlvrambench-tests",
            "-c",
            "user.email=tests@localhost",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return out.stdout.strip()


class HubServer:
    def __init__(self, workdir: Path, port: int | None = None) -> None:
        self.workdir = Path(workdir)
        self.mirrors = self.workdir / "mirrors"
        self.mirrors.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def repo_path(self, repo_id: str, repo_type: str = "dataset") -> Path:
        return self.mirrors / f"{repo_type}s" / repo_id

    def add_repo(self, repo_id: str, folder: Path, message: str = "release", repo_type: str = "dataset") -> str:
        """Create ``repo_id`` (a ``dataset``, ``model`` or ``space`` repository) from the files of ``folder``;
        returns the commit id."""
        repo = self.repo_path(repo_id, repo_type)
        shutil.copytree(folder, repo, ignore=shutil.ignore_patterns(".git"))
        for path in repo.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        git(repo, "init", "-q", "-b", "main")
        return self.commit(repo_id, message, repo_type)

    def commit(self, repo_id: str, message: str, repo_type: str = "dataset") -> str:
        """Commit every change in the repository's work tree; returns the new commit id."""
        repo = self.repo_path(repo_id, repo_type)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", message)
        return git(repo, "rev-parse", "HEAD")

    def tag(self, repo_id: str, name: str, rev: str = "HEAD") -> None:
        git(self.repo_path(repo_id), "tag", name, rev)

    def start(self, timeout: float = 60.0) -> HubServer:
        config = self.workdir / "olah.toml"
        config.write_text(f"""[basic]
host = "127.0.0.1"
port = {self.port}
repos-path = "{self.workdir / "olah-cache"}"
mirror-scheme = "http"
mirror-netloc = "127.0.0.1:{self.port}"
mirror-lfs-netloc = "127.0.0.1:{self.port}"
mirrors-path = ["{self.mirrors}"]
[accessibility]
offline = true
""")
        log = open(self.workdir / "olah.log", "wb")
        self.process = subprocess.Popen(
            [olah_cli(), "-c", str(config)],
            cwd=self.workdir,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"olah exited early; see {self.workdir / 'olah.log'}")
            try:
                with urllib.request.urlopen(f"{self.endpoint}/api/datasets/_probe/_probe/revision/main", timeout=2):
                    return self
            except urllib.error.HTTPError:
                return self  # it answers: the server is up
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"olah did not answer on {self.endpoint} within {timeout:.0f} s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None


if __name__ == "__main__":  # manual use: python tests/hubserver.py SNAPSHOT WORKDIR
    server = HubServer(Path(sys.argv[2]))
    server.add_repo("kobzaond/RLVRAMBench", Path(sys.argv[1]))
    server.start()
    print(server.endpoint, flush=True)
    try:
        server.process.wait()
    finally:
        server.stop()
