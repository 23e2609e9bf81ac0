"""The fault matrix: a damaged Hub cache, a failing server and killed processes, each a real process through the
olah-served Hub (and the fault proxy). Each case asserts the exit code, the one line on stderr and what is left
on disk: every blob of the cache matches its object id, nothing partial is left, and good data is never removed.

The olah mirror serves plain git blobs, so every object id seen here is a git blob SHA-1; the SHA-256 (LFS) path
is tested on a fabricated cache in ``test_integrity.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import REPO_ID, REPO_ROOT, SNAPSHOT, cli_env, invoke, run_cli
from faultproxy import FaultProxy

RUNS = "benchmark/runs.csv"
MANIFEST = "benchmark/manifest.json"
CARD = "README.md"
ABSENT = "tables/three-model-configurations.csv"
SHOW = ("--revision", "main", "show", "eligible_runs")


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def storage(home: Path) -> Path:
    return home / "hub" / "datasets--kobzaond--RLVRAMBench"


def entry(home: Path, rel: str) -> Path:
    (snapshot,) = (storage(home) / "snapshots").iterdir()
    return snapshot / rel


def blob(home: Path, rel: str) -> Path:
    return storage(home) / "blobs" / git_blob_id((SNAPSHOT / rel).read_bytes())


def cache_problems(home: Path) -> list[str]:
    """Everything in the cache that is not a complete blob matching its name, or a snapshot entry that does not
    link to one."""
    problems = []
    for path in (storage(home) / "blobs").iterdir():
        if path.is_symlink() or not path.is_file() or git_blob_id(path.read_bytes()) != path.name:
            problems.append(f"blob {path.name}")
    for path in (storage(home) / "snapshots").rglob("*"):
        if path.is_symlink() and not (path.resolve().parent.name == "blobs" and path.resolve().is_file()):
            problems.append(f"entry {path.name}")
        elif not path.is_symlink() and path.is_file():
            problems.append(f"plain entry {path.name}")
    return problems


def one_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def env(home: Path, offline: bool = False, **extra: str | None) -> dict[str, str]:
    return cli_env(HF_HOME=str(home), HF_HUB_OFFLINE="1" if offline else None, **extra)


@pytest.fixture
def slow_failures(hub, tmp_path_factory):
    """Two failures, run at once (they took about 20 s each while huggingface_hub's back-off ran in full; the
    retry budget now ends them within seconds):
    - ``broken``: a server answering 500 and then resetting every connection for runs.csv;
    - ``pinned``: a mirror that lacks the pinned default revision (olah answers 500 for an unknown commit)."""
    folder = tmp_path_factory.mktemp("slow")
    homes = {"broken": folder / "broken", "pinned": folder / "pinned"}
    assert run_cli("--revision", "main", "show", "transfer_queries", env=env(homes["broken"])).returncode == 0
    proxy = FaultProxy(hub.port, b"runs.csv", ["500", "reset"], methods=(b"HEAD", b"GET"))
    commands = {
        "broken": ([*SHOW], env(homes["broken"], HF_ENDPOINT=proxy.endpoint)),
        "pinned": (["configs"], env(homes["pinned"])),
    }
    started = time.monotonic()
    processes = {
        name: subprocess.Popen(
            [sys.executable, "-m", "rlvrambench_hf", *args], env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for name, (args, environ) in commands.items()
    }
    yield {"homes": homes, "proxy": proxy, "processes": processes, "started": started}
    for process in processes.values():
        if process.poll() is None:
            process.kill()
            process.wait()
    proxy.close()


@pytest.fixture(scope="module")
def warm(hub, tmp_path_factory) -> Path:
    """A Hugging Face home after one online `verify` (every file fetched, absent files recorded)."""
    home = tmp_path_factory.mktemp("warm") / "hf-home"
    result = run_cli("--revision", "main", "verify", env=env(home))
    assert result.returncode == 0, result.stderr
    return home


@pytest.fixture
def cache(warm, tmp_path) -> Path:
    """A private copy of the warm cache (links kept)."""
    home = tmp_path / "hf-home"
    shutil.copytree(warm, home, symlinks=True)
    return home


def flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))


def replace_with_loop(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.name)


def replace_with_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def replace_with_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


DAMAGE: dict[str, Callable[[Path], None]] = {
    "one changed byte": flip_byte,
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:1000]),
    "symbolic-link loop": replace_with_loop,
    "FIFO": replace_with_fifo,
    "directory": replace_with_directory,
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_damaged_data_blob_is_fetched_again_online(hub, cache, damage):
    others = {p.name: p.stat().st_ino for p in (storage(cache) / "blobs").iterdir() if p.name != blob(cache, RUNS).name}
    DAMAGE[damage](blob(cache, RUNS))
    result = run_cli(*SHOW, env=env(cache), timeout=60)
    assert result.returncode == 0, result.stderr
    assert "612 rows" in result.stdout and result.stderr == ""
    assert cache_problems(cache) == []
    assert entry(cache, RUNS).read_bytes() == (SNAPSHOT / RUNS).read_bytes()
    assert {p.name: p.stat().st_ino for p in (storage(cache) / "blobs").iterdir() if p.name in others} == others


@pytest.mark.parametrize("damage", DAMAGE)
def test_damaged_data_blob_offline_is_one_line_and_removed(hub, cache, damage):
    DAMAGE[damage](blob(cache, RUNS))
    result = run_cli(*SHOW, env=env(cache, offline=True), timeout=60)
    line = one_line(result)
    assert result.returncode == 2
    assert f"the cached copy of {RUNS} ({REPO_ID}@main) is corrupted" in line
    assert "needs a connection to the Hub (HF_HUB_OFFLINE is set)" in line
    assert not os.path.lexists(blob(cache, RUNS)) and not os.path.lexists(entry(cache, RUNS))
    assert cache_problems(cache) == []
    again = run_cli(*SHOW, env=env(cache, offline=True))
    assert again.returncode == 2 and "is not cached and HF_HUB_OFFLINE is set" in one_line(again)
    healed = run_cli(*SHOW, env=env(cache))
    assert healed.returncode == 0 and cache_problems(cache) == []


def test_corrupted_manifest_never_costs_the_good_data_blob(hub, cache):
    """One hex digit of runs.csv's digest changed inside the cached manifest: the manifest is the file blamed
    and fetched again; the runs.csv blob is neither removed nor blamed."""
    runs_inode = blob(cache, RUNS).stat().st_ino
    manifest = blob(cache, MANIFEST)
    text = manifest.read_text()
    digest = json.loads(text)["files"]["runs.csv"]["sha256"]
    manifest.write_text(text.replace(digest, ("0" if digest[0] != "0" else "1") + digest[1:]))
    offline = run_cli(*SHOW, env=env(cache, offline=True))
    line = one_line(offline)
    assert offline.returncode == 2 and f"the cached copy of {MANIFEST}" in line and "runs.csv" not in line
    assert blob(cache, RUNS).stat().st_ino == runs_inode
    online = run_cli(*SHOW, env=env(cache))
    assert online.returncode == 0 and online.stderr == ""
    assert blob(cache, RUNS).stat().st_ino == runs_inode and cache_problems(cache) == []


def test_manifest_that_is_no_longer_json_is_fetched_again(hub, cache):
    manifest = blob(cache, MANIFEST)
    manifest.write_bytes(manifest.read_bytes()[:100])
    result = run_cli(*SHOW, env=env(cache))
    assert result.returncode == 0 and result.stderr == "" and cache_problems(cache) == []


@pytest.mark.parametrize("damage", ["one changed byte", "plain file"])
def test_corrupted_card_is_checked_like_any_file(hub, cache, damage):
    """The card has no manifest digest; its object id still catches a change (before, it was used unchecked)."""
    if damage == "plain file":  # e.g. a tool wrote over the snapshot entry instead of its blob
        link = entry(cache, CARD)
        link.unlink()
        link.write_text((SNAPSHOT / CARD).read_text().replace("within_margin", "WITHIN_MARGIN", 1))
    else:
        flip_byte(blob(cache, CARD))
    offline = run_cli(*SHOW, env=env(cache, offline=True))
    assert offline.returncode == 2 and f"the cached copy of {CARD}" in one_line(offline)
    online = run_cli(*SHOW, env=env(cache))
    assert online.returncode == 0 and cache_problems(cache) == []
    assert entry(cache, CARD).is_symlink() and entry(cache, CARD).read_bytes() == (SNAPSHOT / CARD).read_bytes()


def test_corrupted_reference_offline_is_one_line(hub, cache):
    (storage(cache) / "refs" / "main").write_text("../../../../etc")
    offline = run_cli(*SHOW, env=env(cache, offline=True))
    assert offline.returncode == 2 and "cached reference refs/main" in one_line(offline)
    assert run_cli(*SHOW, env=env(cache)).returncode == 0
    assert (storage(cache) / "refs" / "main").read_text() == entry(cache, RUNS).parent.parent.name


def test_offline_commands_behave_as_online_for_everything_fetched_once(hub, cache):
    """After one online `verify`, `configs`, `verify`, `show` and the metric give the same output offline; the file the
    revision lacks is "not in this revision" offline exactly as online (olah answers 401 for it, so the package
    records the absence in `.no_exist/` as huggingface_hub does after the Hub's 404)."""
    (commit,) = [p.name for p in (storage(cache) / "snapshots").iterdir()]
    assert (storage(cache) / ".no_exist" / commit / ABSENT).is_file()
    for command in (["configs"], ["verify"], ["show", "admission_candidates", "--limit", "2"]):
        online = run_cli("--revision", "main", *command, env=env(cache))
        offline = run_cli("--revision", "main", *command, env=env(cache, offline=True))
        assert (offline.returncode, offline.stdout, offline.stderr) == (0, online.stdout, ""), command
    for offline in (False, True):
        missing = run_cli("--revision", "main", "show", "configuration_feasibility", env=env(cache, offline))
        assert missing.returncode == 2
        assert f"{ABSENT} is not in this revision ({REPO_ID}@main)" in one_line(missing)
    metric = [
        subprocess.run(
            [sys.executable, "-c", METRIC_SCRIPT, str(REPO_ROOT / "metrics" / "rlvrambench")],
            env=env(cache, offline, RLVRAMBENCH_SOURCE=REPO_ID, RLVRAMBENCH_REVISION="main"),
            capture_output=True,
            text=True,
            timeout=300,
        )
        for offline in (False, True)
    ]
    assert [r.returncode for r in metric] == [0, 0], metric[1].stderr
    assert metric[0].stdout == metric[1].stdout and "within_margin_recall" in metric[0].stdout


METRIC_SCRIPT = """
import json, sys
import evaluate
from rlvrambench_hf import load_table
queries = load_table("transfer_queries").column("query_id").to_pylist()
candidates = load_table("admission_candidates").column("candidate_id").to_pylist()
transfer = evaluate.load(sys.argv[1]).compute(predictions=["within_margin"] * len(queries), query_ids=queries)
admission = evaluate.load(sys.argv[1], "admission").compute(
    candidate_ids=candidates, decisions=["approve"] * len(candidates)
)
print(json.dumps([transfer, admission], sort_keys=True))
"""


LOAD_SCRIPT = """
import json, sys
from rlvrambench_hf import load_dataset
from rlvrambench_hf.errors import RLVRAMBenchError
out = {}
for config in ("eligible_runs", "configuration_feasibility"):
    try:
        out[config] = sum(load_dataset(config, source=sys.argv[1], revision=sys.argv[2]).num_rows.values())
    except RLVRAMBenchError as exc:
        out[config] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


def test_fabricated_no_exist_marker_is_read_offline(hub, cache):
    """The cache layout huggingface_hub writes after the Hub's 404 (`.no_exist/<commit>/<path>`), fabricated:
    `load_dataset`, `configs` and `show` read it offline, for the commit and for the branch that names it."""
    (commit,) = [p.name for p in (storage(cache) / "snapshots").iterdir()]
    shutil.rmtree(storage(cache) / ".no_exist")
    marker = storage(cache) / ".no_exist" / commit / ABSENT
    marker.parent.mkdir(parents=True)
    marker.touch()
    for revision in ("main", commit):
        out = subprocess.run(
            [sys.executable, "-c", LOAD_SCRIPT, REPO_ID, revision],
            env=env(cache, offline=True),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stderr
        loaded = json.loads(out.stdout.strip().splitlines()[-1])
        assert loaded["eligible_runs"] == 612
        assert loaded["configuration_feasibility"] == (
            f"MissingFileError: config configuration_feasibility: {ABSENT} is not in this revision "
            f"({REPO_ID}@{revision})"
        )
    configs = run_cli("--revision", "main", "configs", env=env(cache, offline=True))
    assert configs.returncode == 0 and configs.stderr == ""
    (row,) = [line.split()[:4] for line in configs.stdout.splitlines() if line.startswith("configuration_feasibility")]
    assert row == ["configuration_feasibility", "configurations", "10", "no"]  # no row count: not available


def test_server_that_corrupts_downloads_is_named(hub, cache):
    """A server (or proxy) that sends other bytes than the object it names: fetched again once, then refused
    with the file and the server; nothing of it is kept."""
    shutil.rmtree(storage(cache) / "blobs" / blob(cache, RUNS).name, ignore_errors=True)
    blob(cache, RUNS).unlink()
    proxy = FaultProxy(hub.port, b"runs.csv", ["flip"], cut_after=5000)
    try:
        result = run_cli(*SHOW, env=env(cache, HF_ENDPOINT=proxy.endpoint))
    finally:
        proxy.close()
    line = one_line(result)
    assert result.returncode == 2 and proxy.counts["flip"] == 2
    assert f"{RUNS} of {REPO_ID}@main is corrupted as served by {proxy.endpoint}" in line
    assert "also when downloaded again" in line
    assert not os.path.lexists(blob(cache, RUNS)) and cache_problems(cache) == []
    assert run_cli(*SHOW, env=env(cache)).returncode == 0 and cache_problems(cache) == []


def test_500_then_reset_once_is_retried(hub, hf_home):
    run_cli("--revision", "main", "show", "transfer_queries", env=env(hf_home))
    proxy = FaultProxy(hub.port, b"runs.csv", ["500", "reset", "pass"], methods=(b"HEAD", b"GET"))
    try:
        result = run_cli(*SHOW, env=env(hf_home, HF_ENDPOINT=proxy.endpoint), timeout=120)
    finally:
        proxy.close()
    assert result.returncode == 0 and "612 rows" in result.stdout and result.stderr == ""
    assert proxy.counts["500"] == 1 and proxy.counts["reset"] == 1
    assert cache_problems(hf_home) == [] and not list(hf_home.rglob("*.incomplete"))


def _kill_when_held(args: list[str], home: Path, proxy: FaultProxy) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "rlvrambench_hf", *args],
        env=env(home, HF_ENDPOINT=proxy.endpoint),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proxy.held.wait(120), "the download never started"
        time.sleep(0.3)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(30)
        proxy.close()


def test_kill_during_first_download_then_a_normal_run(hub, hf_home):
    proxy = FaultProxy(hub.port, b"runs.csv", ["hold"], cut_after=100_000)
    _kill_when_held(list(SHOW), hf_home, proxy)
    assert list(hf_home.rglob("*.incomplete"))  # what the killed download left
    assert not os.path.lexists(entry(hf_home, RUNS))
    result = run_cli(*SHOW, env=env(hf_home))
    assert result.returncode == 0 and "612 rows" in result.stdout and result.stderr == ""
    assert not list(hf_home.rglob("*.incomplete")) and cache_problems(hf_home) == []


def test_kill_during_release_build_then_a_normal_build(hub, hf_home, tmp_path):
    out = tmp_path / "release"
    assert run_cli("--revision", "main", "show", "transfer_queries", env=env(hf_home)).returncode == 0
    build = ["--revision", "main", "release", "build", "--version", "1.0.0", "--output", str(out)]
    proxy = FaultProxy(hub.port, b"runs.csv", ["hold"], cut_after=100_000)
    _kill_when_held(build, hf_home, proxy)
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.endswith(".building")]
    result = run_cli(*build, env=env(hf_home), timeout=300)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf-home", "release"]
    assert invoke("release", "verify", str(out)).returncode == 0
    assert not list(hf_home.rglob("*.incomplete")) and cache_problems(hf_home) == []


PROCESS_SCRIPT = """
import sys
from rlvrambench_hf import load_table
print(load_table("eligible_runs", sys.argv[1], "main").num_rows)
"""


def test_processes_sharing_a_cache_with_a_corrupted_blob_all_heal(hub, cache):
    """Four processes find the same damaged blob at once: each heals or sees the other's repair; none fails and
    none removes a copy another has just fetched."""
    flip_byte(blob(cache, RUNS))

    def load(_: int) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", PROCESS_SCRIPT, REPO_ID], env=env(cache), capture_output=True, text=True, timeout=120
        )

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(load, range(4)))
    assert [(r.returncode, r.stdout.strip(), r.stderr) for r in results] == [(0, "612", "")] * 4
    assert cache_problems(cache) == []


def test_persistent_500_then_reset_and_a_mirror_without_the_pinned_release(slow_failures):
    """Bounded, one line each: the failing server names the file and the server and leaves nothing of runs.csv
    in the cache; the mirror error names the pinned release and says how to choose another revision."""
    from rlvrambench_hf import DEFAULT_REVISION

    results = {}
    for name, process in slow_failures["processes"].items():
        out, err = process.communicate(timeout=120)
        results[name] = subprocess.CompletedProcess(process.args, process.returncode, out.decode(), err.decode())
    assert time.monotonic() - slow_failures["started"] < 120
    proxy, failing = slow_failures["proxy"], slow_failures["homes"]["broken"]
    line = one_line(results["broken"])
    assert results["broken"].returncode == 2 and proxy.counts["500"] == 1 and proxy.counts["reset"] >= 1
    assert f"cannot fetch {RUNS} from {proxy.endpoint}" in line
    assert not os.path.lexists(entry(failing, RUNS)) and not list(failing.rglob("*.incomplete"))
    assert cache_problems(failing) == []
    line = one_line(results["pinned"])
    assert results["pinned"].returncode == 2
    assert f"revision '{DEFAULT_REVISION}' does not exist in {REPO_ID}" in line
    assert "the release pinned by this version of rlvrambench-hf" in line
    assert "--revision" in line and "RLVRAMBENCH_REVISION" in line
