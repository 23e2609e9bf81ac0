"""Test environment: an isolated Hugging Face cache and a real Hub-protocol server (olah) on loopback.

The environment is set before anything imports huggingface_hub (it reads HF_ENDPOINT and HF_HOME at import):
HF_HOME is a fresh temporary folder and HF_ENDPOINT points at the port the session's olah server will use.
The server itself starts on first use of the ``hub`` fixture. Under pytest-xdist every worker imports this module
in its own interpreter, so each worker has its own folder, HF_HOME, port and server.

Commands run two ways: :func:`run_cli` starts ``rlvrambench`` in a fresh interpreter (for what the process
boundary decides: imports, the environment read at import, signals, exit of the process), :func:`invoke` calls
:func:`rlvrambench_hf.cli.main` in this one (for everything else; far cheaper).
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from hubserver import REPO_ROOT, HubServer, free_port


def release_copy() -> Path:
    """The release folder the tests read and serve: ``$RLVRAMBENCH_SOURCE`` when it names a folder (``make test``
    passes it), else ``$RLVRAMBENCH_SNAPSHOT`` (its older name), else ``../shared/rlvrambench/hub`` beside the
    checkout. (The tests then set ``RLVRAMBENCH_SOURCE`` themselves, where an example or a command reads it.)"""
    given = os.environ.get("RLVRAMBENCH_SOURCE")
    if given and Path(given).expanduser().is_dir():
        return Path(given).expanduser().resolve()
    return Path(os.environ.get("RLVRAMBENCH_SNAPSHOT") or REPO_ROOT.parent / "shared" / "rlvrambench" / "hub").resolve()


SNAPSHOT = release_copy()
os.environ["RLVRAMBENCH_SNAPSHOT"] = str(SNAPSHOT)  # for pytest-xdist's workers: RLVRAMBENCH_SOURCE is cleared below
REPO_ID = "kobzaond/RLVRAMBench"
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")  # gw0, gw1, ... under pytest-xdist
_SESSION_DIR = Path(tempfile.mkdtemp(prefix=f"rlvrambench-tests-{_WORKER}-"))
atexit.register(shutil.rmtree, _SESSION_DIR, ignore_errors=True)  # the Hub server and HF_HOME of this session
_PORT = free_port()

for _name in (
    "RLVRAMBENCH_SOURCE",
    "RLVRAMBENCH_REVISION",
    "RLVRAMBENCH_HUB_DEADLINE",
    "RLVRAMBENCH_USER_MEMORY_MIB",
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
        pytest.fail(f"release copy not found at {SNAPSHOT}; set RLVRAMBENCH_SOURCE to the release folder")
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


#: Variables that huggingface_hub, datasets, evaluate or Python read when they are imported: a command run in this
#: interpreter would not see a change of them, so :func:`invoke` refuses one (use :func:`run_cli`).
_READ_AT_IMPORT = re.compile(r"^(HF_|HUGGINGFACE_|TRANSFORMERS_|PYTHON|XDG_|HOME$|TMPDIR$|LANG$|LC_)")


def invoke(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    input: str | bytes | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess:
    """Run ``rlvrambench ARGS`` in this interpreter through :func:`rlvrambench_hf.cli.main`, as the console script
    does, and return what :func:`run_cli` returns (``returncode``, text ``stdout`` and ``stderr``).

    Standard input is ``input`` (else empty); file descriptors 0, 1 and 2 are redirected too, so that what a child
    process or a library writes is captured as a separate process would have it. ``env`` (a whole environment, as
    :func:`cli_env` gives) and ``cwd`` apply during the call and are restored after it; warnings are shown as a
    fresh interpreter shows them. ``timeout`` is accepted for the same signature and not enforced."""
    from rlvrambench_hf.cli import main

    _refuse_import_time_variables(env)
    with _environment(env), _directory(cwd), _captured(input) as (out, err), _fresh_warnings():
        try:
            status: object = main(list(args))
        except SystemExit as exc:  # argparse's own exits (--help, usage errors)
            status = exc.code
            if isinstance(status, str):
                print(status, file=sys.stderr)
    code = 0 if status is None else status if isinstance(status, int) else 1
    return subprocess.CompletedProcess(["rlvrambench", *args], code, _text(out), _text(err))


def _refuse_import_time_variables(env: Mapping[str, str] | None) -> None:
    changed = {k for k in {*env, *os.environ} if env.get(k) != os.environ.get(k)} if env is not None else set()
    refused = sorted(k for k in changed if _READ_AT_IMPORT.match(k))
    if refused:
        raise ValueError(f"invoke cannot apply {refused}: they are read at import; use run_cli")


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    saved = dict(os.environ)
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _directory(cwd: str | Path | None) -> Iterator[None]:
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(here)


#: Text streams over file descriptors 1 and 2, kept for the session: a logging handler made during a call keeps
#: writing to the descriptor (pytest's capture once the call is over), never to a closed stream.
_STREAMS: dict[int, io.TextIOWrapper] = {}


def _stream(fd: int) -> io.TextIOWrapper:
    if fd not in _STREAMS:
        errors = "strict" if fd == 1 else "backslashreplace"
        _STREAMS[fd] = io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding="utf-8", errors=errors)
    return _STREAMS[fd]


@contextlib.contextmanager
def _captured(input: str | bytes | None) -> Iterator[tuple[object, object]]:
    out, err, stdin = tempfile.TemporaryFile(), tempfile.TemporaryFile(), tempfile.TemporaryFile()
    stdin.write(input.encode() if isinstance(input, str) else input or b"")
    stdin.seek(0)
    saved_fds = [os.dup(fd) for fd in (0, 1, 2)]
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        for fd, handle in zip((0, 1, 2), (stdin, out, err)):
            os.dup2(handle.fileno(), fd)
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8")
        sys.stdout, sys.stderr = _stream(1), _stream(2)
        yield out, err
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(ValueError, OSError):
                stream.flush()
        for fd, copy in zip((0, 1, 2), saved_fds):
            os.dup2(copy, fd)
            os.close(copy)
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        stdin.close()


@contextlib.contextmanager
def _fresh_warnings() -> Iterator[None]:
    """Python's default warning filters, warnings printed to standard error (not recorded by pytest)."""

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    with warnings.catch_warnings():
        warnings.resetwarnings()
        for category in (ResourceWarning, ImportWarning, PendingDeprecationWarning, DeprecationWarning):
            warnings.simplefilter("ignore", category)
        warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
        warnings.showwarning = show
        yield


def _text(handle: object) -> str:
    """What ``subprocess.run(..., text=True)`` gives: decoded, universal newlines."""
    handle.seek(0)  # type: ignore[attr-defined]
    data = handle.read()  # type: ignore[attr-defined]
    handle.close()  # type: ignore[attr-defined]
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


from packagedverl import packaged_verl, verl_trainer_configs  # noqa: E402,F401  (session fixtures)
