"""Every exchange with the Hub is bounded (issue 29, item 2; issue 27, item 3): hostile servers on loopback, started
here on ports of their own, end a command within its deadline, in bounded memory, writing nothing beyond the sizes
declared; a refused connection is asked once; retries stay within their budget.

The behaviour of huggingface_hub that the bounds rely on is pinned here too: an update that changes it fails these
tests instead of the users."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_fault_matrix import one_line

from rlvrambench_hf.data.sources import hubnet
from rlvrambench_hf.data.sources.hub import HubSource
from rlvrambench_hf.errors import SourceError

from conftest import REPO_ID, cli_env
from faultproxy import HostileServer
from hubserver import closed_port

CONFIGS = ("--revision", "main", "configs")
MEMORY_BOUND_MIB = 300


def run_measured(
    home: Path, *args: str, timeout: float = 90, **env: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    """``rlvrambench ARGS`` in a fresh interpreter (killed after ``timeout`` s) and its peak memory in MiB."""
    out, err = home.parent / "stdout", home.parent / "stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "rlvrambench_hf", *args],
            stdout=stdout,
            stderr=stderr,
            env=cli_env(HF_HOME=str(home), **env),
        )
        killer = threading.Timer(timeout, lambda: os.kill(process.pid, signal.SIGKILL))
        killer.start()
        try:
            status, high_water_kib = _wait_with_high_water(process.pid)
        finally:
            killer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
    peak = high_water_kib / 1024
    assert process.returncode != -signal.SIGKILL, f"still running after {timeout} s"
    return subprocess.CompletedProcess(process.args, process.returncode, out.read_text(), err.read_text()), peak


def _wait_with_high_water(pid: int) -> tuple[int, int]:
    """Wait for ``pid``; its exit status and the high-water mark of its resident memory (KiB), read from
    ``/proc/PID/status`` while it runs. The kernel's ``ru_maxrss`` would not do: a child of a large process (a
    pytest worker) inherits that process's mark through fork and exec."""
    high = 0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status, high
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    high = max(high, int(line.split()[1]))
        time.sleep(0.02)


def written_files(home: Path) -> dict[str, int]:
    return {str(p.relative_to(home)): p.stat().st_size for p in home.rglob("*") if p.is_file() and not p.is_symlink()}


@pytest.fixture
def server(request):
    hostile = HostileServer(*request.param[:1], **request.param[1])
    yield hostile
    hostile.close()


@pytest.mark.parametrize("server", [("trickle", {"interval": 0.5})], indirect=True)
def test_a_trickling_server_ends_the_command_at_the_deadline(server, hf_home):
    result, peak = run_measured(hf_home, *CONFIGS, HF_ENDPOINT=server.endpoint, RLVRAMBENCH_HUB_DEADLINE="3")
    line = one_line(result)
    assert result.returncode == 2 and "could not be reached" in line and server.endpoint in line, line
    assert "(no answer within RLVRAMBENCH_HUB_DEADLINE=3 s)" in line, line
    assert peak < MEMORY_BOUND_MIB and server.requests >= 1


@pytest.mark.parametrize("server", [("endless", {"declared": 1000})], indirect=True)
def test_an_endless_download_stops_at_the_size_the_hub_declared(server, hf_home):
    result, peak = run_measured(hf_home, *CONFIGS, HF_ENDPOINT=server.endpoint)
    line = one_line(result)
    assert result.returncode == 2 and f"cannot fetch README.md from {server.endpoint}" in line, line
    assert "more than the 1,000 bytes expected" in line, line
    files = written_files(hf_home)
    assert max(files.values(), default=0) <= 1000, files  # the partial download, the reference, the locks
    assert sum(size for name, size in files.items() if "blobs" in name) <= 1000, files
    assert peak < MEMORY_BOUND_MIB


@pytest.mark.parametrize("server", [("endless", {})], indirect=True)
def test_an_endless_metadata_answer_is_capped(server):
    """huggingface_hub reads an API answer whole into memory: the cap stops it at the metadata bound."""
    from huggingface_hub import HfApi

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with hubnet.hub_traffic(), pytest.raises(hubnet.HubTrafficError, match=f"{hubnet.METADATA_CAP:,} bytes"):
        HfApi(endpoint=server.endpoint).list_repo_refs(REPO_ID, repo_type="dataset")
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 4 * hubnet.METADATA_CAP / 2**20


@pytest.mark.parametrize("server", [("status", {"status": 500})], indirect=True)
def test_a_failing_mirror_is_retried_within_the_budget(server, hf_home):
    result, _ = run_measured(hf_home, *CONFIGS, HF_ENDPOINT=server.endpoint)
    line = one_line(result)
    assert result.returncode == 2 and "README.md" in line and server.endpoint in line, line
    # the card: one attempt, then huggingface_hub's retry within the budget; the references: one attempt
    assert server.requests <= hubnet.RETRIES + 1 + 1, server.requests


@pytest.mark.parametrize("server", [("status", {"status": 429, "headers": [("Retry-After", "3600")]})], indirect=True)
def test_a_wait_beyond_the_deadline_is_not_waited_for(server, hf_home):
    result, _ = run_measured(hf_home, *CONFIGS, HF_ENDPOINT=server.endpoint)
    line = one_line(result)
    assert result.returncode == 2 and "asking to wait 3600 s, beyond RLVRAMBENCH_HUB_DEADLINE=120 s" in line, line
    assert server.requests == 1


def test_the_closed_port_line_names_the_refusal_and_how_to_give_a_source(hf_home):
    """No source given (neither --source nor $RLVRAMBENCH_SOURCE) and the Hub refuses: the line says how to give
    one, and blames no seal (issue 26, item 5); the time it takes is in bench/bench_hub.py."""
    endpoint = f"http://127.0.0.1:{closed_port()}"
    for args in (["configs"], ["estimate", "retrospective"]):
        result, _ = run_measured(hf_home, *args, HF_ENDPOINT=endpoint)
        line = one_line(result)
        assert result.returncode == 2 and f"{endpoint} could not be reached (connection refused)" in line, line
        assert "--source" in line and "$RLVRAMBENCH_SOURCE" in line and "seal" not in line, line


def test_a_given_source_gets_no_hint(hf_home):
    endpoint = f"http://127.0.0.1:{closed_port()}"
    result, _ = run_measured(hf_home, "--source", REPO_ID, *CONFIGS, HF_ENDPOINT=endpoint)
    line = one_line(result)
    assert result.returncode == 2 and "could not be reached (connection refused)" in line and "--source" not in line


def test_an_invalid_deadline_is_one_line(hf_home):
    endpoint = f"http://127.0.0.1:{closed_port()}"
    result, _ = run_measured(hf_home, *CONFIGS, HF_ENDPOINT=endpoint, RLVRAMBENCH_HUB_DEADLINE="soon")
    line = one_line(result)
    assert result.returncode == 2 and "RLVRAMBENCH_HUB_DEADLINE='soon' is not a positive number of seconds" in line


# ---- huggingface_hub's behaviour that the bounds rely on ----------------------------------------------------------


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path / "hub"


def test_a_refused_connection_is_asked_once_and_never_retried(empty_cache, monkeypatch):
    """huggingface_hub asks for the card twice (its cache fallback, then its retry with back-off): the second time
    is refused by the bounded client before any connection, with an error huggingface_hub does not retry."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    with hubnet.hub_traffic() as traffic:
        with pytest.raises(SourceError, match=r"could not be reached \(connection refused\)"):
            HubSource(REPO_ID, "main").check_card()
    assert traffic.sends == 2 and len(traffic.refused) == 1


def test_the_bounded_client_keeps_huggingface_hubs_request_hooks():
    """Offline mode is enforced by huggingface_hub's request hook: the bounded client must keep it."""
    from huggingface_hub import get_session

    hubnet.install()
    session = get_session()
    assert type(session).__name__ == "BoundedClient"
    assert len(session.event_hooks["request"]) >= 1 and hubnet._bound_response in session.event_hooks["response"]


def test_the_cache_layout_the_integrity_checks_read(hub, empty_cache):
    """The repository folder, the snapshot links named by commit, blobs named by their object id (git blob SHA-1,
    or SHA-256 for LFS), and the "recorded as absent" answer of try_to_load_from_cache."""
    import hashlib

    from huggingface_hub import hf_hub_download, scan_cache_dir, try_to_load_from_cache

    from rlvrambench_hf.data.sources.hubcache import GIT_BLOB_ID, LFS_ID, repo_cache

    path = Path(hf_hub_download(REPO_ID, "README.md", repo_type="dataset", revision="main"))
    (repo,) = scan_cache_dir(empty_cache).repos
    assert repo.repo_path == repo_cache(REPO_ID)
    assert path.is_symlink() and path.parent.parent.name == "snapshots"
    target = path.resolve()
    data = target.read_bytes()
    assert target.parent == repo_cache(REPO_ID) / "blobs"
    if GIT_BLOB_ID.fullmatch(target.name):
        assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == target.name
    else:
        assert LFS_ID.fullmatch(target.name) and hashlib.sha256(data).hexdigest() == target.name
    commit = path.parent.name
    assert (repo_cache(REPO_ID) / "refs" / "main").read_text() == commit
    marker = repo_cache(REPO_ID) / ".no_exist" / commit / "no/such/file.csv"  # as huggingface_hub records a 404
    marker.parent.mkdir(parents=True)
    marker.touch()
    absent = try_to_load_from_cache(REPO_ID, "no/such/file.csv", revision="main", repo_type="dataset")
    assert absent is not None and not isinstance(absent, str)


@pytest.mark.parametrize(
    "server",
    [
        (
            "status",
            {
                "status": 200,
                "headers": [
                    ("X-Repo-Commit", HostileServer.COMMIT),
                    ("ETag", '"e1"'),
                    ("X-Xet-Hash", "f" * 64),
                    ("X-Xet-Refresh-Route", "/xet-token"),
                ],
            },
        )
    ],
    indirect=True,
)
def test_xet_is_left_to_http_inside_the_package_only(server):
    """huggingface_hub hands a file with Xet headers to hf_xet, whose transport the bounds cannot reach: inside the
    package's traffic the headers are dropped (plain HTTP), outside it a program's own request is unchanged."""
    from huggingface_hub import get_hf_file_metadata

    hubnet.install()
    url = f"{server.endpoint}/datasets/{REPO_ID}/resolve/main/README.md"
    assert get_hf_file_metadata(url).xet_file_data is not None
    with hubnet.hub_traffic():
        assert get_hf_file_metadata(url).xet_file_data is None


@pytest.mark.parametrize(
    "server", [("status", {"status": 200, "headers": [("Content-Encoding", "gzip")]})], indirect=True
)
def test_a_compressed_answer_that_was_not_asked_for_is_refused(server):
    """The bytes counted must be the bytes written: answers are asked for uncompressed, so a gzip bomb cannot pass
    the cap by its compressed size."""
    from huggingface_hub import HfApi

    with hubnet.hub_traffic(), pytest.raises(hubnet.HubTrafficError, match="gzip-encoded answer, which was not asked"):
        HfApi(endpoint=server.endpoint).list_repo_refs(REPO_ID, repo_type="dataset")
