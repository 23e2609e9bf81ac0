"""Object ids of the Hub cache on a fabricated LFS layout, local folders that are never changed, and outputs
that never clobber inputs (each refused before any work, with one line, and a failed write leaves nothing)."""

from __future__ import annotations

import hashlib
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from rlvrambench_hf import IntegrityError, MissingFileError, load_table
from rlvrambench_hf.data.sources.hashing import UnreadableFile, hash_file
from rlvrambench_hf.data.sources.hubcache import repo_cache
from rlvrambench_hf.data.sources.local import LocalSource
from rlvrambench_hf.data.tables.output import check_outputs, write_atomic
from rlvrambench_hf.errors import OutputError, SourceError

from conftest import SNAPSHOT, cli_env

RUNS = "benchmark/runs.csv"
ABSENT = "tables/three-model-configurations.csv"


def fabricate_lfs_cache(repo_id: str, lfs: set[str]) -> tuple[Path, str]:
    """The cache huggingface_hub writes for ``repo_id`` at one commit, every snapshot file present, with the
    files of ``lfs`` stored as LFS objects (blob named by SHA-256) and the others as git blobs (SHA-1)."""
    storage = repo_cache(repo_id)
    commit = uuid.uuid4().hex + uuid.uuid4().hex[:8]
    for source in SNAPSHOT.rglob("*"):
        if not source.is_file():
            continue
        rel = source.relative_to(SNAPSHOT).as_posix()
        data = source.read_bytes()
        name = (
            hashlib.sha256(data).hexdigest()
            if rel in lfs
            else hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        )
        blob = storage / "blobs" / name
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        pointer = storage / "snapshots" / commit / rel
        pointer.parent.mkdir(parents=True, exist_ok=True)
        pointer.symlink_to(os.path.relpath(blob, pointer.parent))
    (storage / "refs").mkdir(exist_ok=True)
    (storage / "refs" / "main").write_text(commit)
    marker = storage / ".no_exist" / commit / ABSENT
    marker.parent.mkdir(parents=True)
    marker.touch()
    return storage, commit


@pytest.fixture
def offline(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


def test_lfs_objects_are_checked_by_sha256(offline):
    """olah serves only git blobs; an LFS file is stored under its SHA-256, which is what is checked."""
    repo_id = f"kobzaond/lfs-{uuid.uuid4().hex[:8]}"
    storage, commit = fabricate_lfs_cache(repo_id, {RUNS})
    sha256_blob = storage / "blobs" / hashlib.sha256((SNAPSHOT / RUNS).read_bytes()).hexdigest()
    assert load_table("eligible_runs", repo_id, commit).num_rows == 612
    assert load_table("eligible_runs", repo_id, "main").num_rows == 612
    with pytest.raises(MissingFileError, match=f"{ABSENT} is not in this revision"):
        load_table("configuration_feasibility", repo_id, "main")
    data = bytearray(sha256_blob.read_bytes())
    data[1000] ^= 1
    sha256_blob.write_bytes(bytes(data))
    corrupted = f"cached copy of {RUNS} .* corrupted: it has SHA-256 .*, not its object id"
    with pytest.raises(IntegrityError, match=corrupted):
        load_table("eligible_runs", repo_id, commit)
    assert not sha256_blob.exists() and not (storage / "snapshots" / commit / RUNS).exists()
    assert load_table("transfer_queries", repo_id, commit).num_rows == 400  # the other blobs are untouched


def test_hashing_never_blocks_on_a_fifo(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    outcome: list[object] = []

    def read() -> None:
        try:
            hash_file(fifo)
        except UnreadableFile as exc:
            outcome.append(str(exc))

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(10)
    assert outcome == ["is a FIFO, not a regular file"]


def test_local_folder_files_are_refused_and_never_changed(tmp_path):
    root = Path(shutil.copytree(SNAPSHOT, tmp_path / "release"))
    (root / RUNS).unlink()
    os.mkfifo(root / RUNS)
    with pytest.raises(SourceError, match=f"{RUNS} in {root} is not a regular file"):
        load_table("eligible_runs", root)
    (root / RUNS).unlink()
    (root / RUNS).symlink_to("runs.csv")
    with pytest.raises(SourceError, match=f"{RUNS} in {root} cannot be read"):
        load_table("eligible_runs", root)
    assert (root / RUNS).is_symlink()  # left as the user had it
    assert LocalSource(root).has("benchmark/queries.csv")


# --- outputs -------------------------------------------------------------------------------------------------


def run(*args: str, cwd: Path, limit: int | None = None) -> subprocess.CompletedProcess:
    def file_size_limit() -> None:  # a full disk: writes fail with EFBIG instead of killing the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    return subprocess.run(
        [sys.executable, "-m", "rlvrambench_hf", *args],
        capture_output=True,
        text=True,
        env=cli_env(),
        cwd=cwd,
        timeout=300,
        preexec_fn=file_size_limit if limit else None,
    )


def listing(folder: Path) -> dict[str, bytes | str]:
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() and not p.is_symlink() else "link/dir/fifo")
        for p in sorted(folder.rglob("*"))
        if "hf-home" not in p.parts
    }


@pytest.fixture
def work(tmp_path) -> Path:
    """A folder with inputs: predictions (and a hard and a symbolic link to them), a policy file, a release copy."""
    (tmp_path / "p.csv").write_text("query_id,predicted_state\n")
    os.link(tmp_path / "p.csv", tmp_path / "hard.csv")
    (tmp_path / "sym.csv").symlink_to("p.csv")
    (tmp_path / "pol.py").write_text("class P:\n    pass\n")
    (tmp_path / "f.csv").write_text("configuration_id,predicted_state\n")
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "index.html").write_text("old")
    os.mkfifo(tmp_path / "pipe")
    shutil.copytree(SNAPSHOT, tmp_path / "release")
    return tmp_path


S = str(SNAPSHOT)
OUTPUT_CASES = {
    "output is the predictions": (
        ["--source", S, "evaluate", "--predictions", "p.csv", "--output", "p.csv"],
        "output p.csv is the input --predictions p.csv",
    ),
    "output spelled differently": (
        ["--source", S, "evaluate", "--predictions", "p.csv", "--output", "./rep/../p.csv"],
        "is the input --predictions p.csv",
    ),
    "output is a hard link of the predictions": (
        ["--source", S, "evaluate", "--predictions", "p.csv", "--output", "hard.csv"],
        "output hard.csv is a hard link of the input --predictions p.csv",
    ),
    "predictions are a link to the output": (
        ["--source", S, "evaluate", "--predictions", "sym.csv", "--output", "p.csv"],
        "output p.csv is the input --predictions sym.csv",
    ),
    "follow-up predictions": (
        ["--source", S, "followup", "score", "--study", "larger_model", "--predictions", "f.csv", "--output", "f.csv"],
        "output f.csv is the input --predictions f.csv",
    ),
    "replay output twice": (
        ["--source", S, "replay", "--output", "s.json", "--summary", "rep/../s.json"],
        "output rep/../s.json is named twice (also as s.json)",
    ),
    "replay over the policy file": (
        ["--source", S, "replay", "--policy", "pol.py:P", "--output", "pol.py"],
        "output pol.py is the input --policy pol.py",
    ),
    "plot over the policy file": (
        ["--source", S, "plot", "admission", "--policy", "pol.py:P", "--output", "pol.py"],
        "output pol.py is the input --policy pol.py",
    ),
    "export into the source folder": (
        ["--source", "release", "export", "eligible_runs", "--format", "csv", "--output", "release/" + RUNS],
        "is inside the input --source",
    ),
    "build into the source folder": (
        ["--source", "release", "release", "build", "--version", "1.0.0", "--output", "release/out"],
        "is inside the input --source",
    ),
    "diff report into a compared folder": (
        ["release", "diff", "release", S, "--output", "release/diff.json"],
        "is inside the input OLD release",
    ),
    "export into the Hub cache": (
        ["--source", S, "export", "eligible_runs", "--format", "csv", "--output", "{hub}/x.csv"],
        "is inside the Hugging Face cache",
    ),
    "report under a file": (
        ["--source", S, "report", "--output", "rep/index.html/x"],
        "output rep/index.html/x: rep/index.html is a file, not a directory",
    ),
    "export under a file": (
        ["--source", S, "export", "eligible_runs", "--format", "csv", "--output", "p.csv/x.csv"],
        "output p.csv/x.csv: p.csv is a file, not a directory",
    ),
    "export under a file two levels up": (
        ["--source", S, "baseline", "--output", "p.csv/nowhere/x.csv"],
        "output p.csv/nowhere/x.csv: p.csv is a file, not a directory",
    ),
    "export over a FIFO": (
        ["--source", S, "export", "eligible_runs", "--format", "csv", "--output", "pipe"],
        "output pipe is not a regular file",
    ),
}


@pytest.mark.parametrize("case", OUTPUT_CASES)
def test_output_that_would_clobber_an_input_is_refused_before_any_work(work, case):
    from huggingface_hub import constants

    args, message = OUTPUT_CASES[case]
    args = [a.replace("{hub}", constants.HF_HUB_CACHE) for a in args]
    Path(constants.HF_HUB_CACHE).mkdir(parents=True, exist_ok=True)  # as any earlier download leaves it
    before = listing(work)
    result = run(*args, cwd=work)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert message in lines[0]
    assert listing(work) == before
    assert not list(Path(constants.HF_HUB_CACHE).glob("x.csv"))


def test_an_output_in_missing_folders_creates_them_and_a_failed_command_leaves_none(tmp_path):
    made = run("--source", S, "baseline", "--output", "scores/rules/baseline.csv", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "scores" / "rules" / "baseline.csv").read_text().startswith("query_id,predicted_state")
    (tmp_path / "bad.csv").write_text("query_id,predicted_state\nq,safe\n")
    failed = run("--source", S, "evaluate", "--predictions", "bad.csv", "--output", "new/deeper/s.json", cwd=tmp_path)
    assert failed.returncode == 2 and len(failed.stderr.strip().splitlines()) == 1, failed.stderr
    assert not (tmp_path / "new").exists()
    failed = run("--source", S, "release", "build", "--version", "x", "--output", "new/rel", cwd=tmp_path)
    assert failed.returncode == 2 and not (tmp_path / "new").exists(), failed.stderr
    built = run("--source", S, "release", "build", "--version", "1.0.0", "--output", "new/rel", cwd=tmp_path)
    assert built.returncode == 0 and (tmp_path / "new" / "rel" / "release.json").is_file(), built.stderr


FULL_DISK_CASES = {
    "export csv": (["export", "stage_measurements", "--format", "csv", "--output", "out.csv"], 100_000),
    "export jsonl": (["export", "stage_measurements", "--format", "jsonl", "--output", "out.jsonl"], 100_000),
    "export parquet": (["export", "stage_measurements", "--format", "parquet", "--output", "out.parquet"], 20_000),
    "report": (["report", "--output", "site"], 50_000),
    "release build": (["release", "build", "--version", "1.0.0", "--output", "built"], 100_000),
}


@pytest.mark.parametrize("case", FULL_DISK_CASES)
def test_failed_write_leaves_nothing_and_is_one_line(tmp_path, case):
    args, limit = FULL_DISK_CASES[case]
    result = run("--source", S, *args, cwd=tmp_path, limit=limit)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "File too large" in lines[0] and "nothing was written" in lines[0]
    assert list(tmp_path.iterdir()) == []


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_temporary_file_of_a_killed_writer_is_removed_by_the_next_write(tmp_path):
    stale = tmp_path / f".out.json.{dead_pid()}.abcd1234.tmp"
    stale.write_text('{"half": ')
    alive = tmp_path / f".out.json.{os.getpid()}.efgh5678.tmp"  # a writer still running
    alive.write_text("{")
    write_atomic(tmp_path / "out.json", "{}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == [alive.name, "out.json"]


def test_killed_build_between_its_two_renames_gets_its_previous_build_back(tmp_path):
    from rlvrambench_hf.release.build import build_release

    previous = tmp_path / "release"
    build_release(previous, "1.0.0", SNAPSHOT)
    pid = dead_pid()
    moved_aside = tmp_path / f".release.old-{pid}"
    os.replace(previous, moved_aside)  # where a kill -9 between the renames of an --overwrite build leaves it
    (tmp_path / f".release.{pid}.x1y2.building").mkdir()
    build_release(previous, "1.0.1", SNAPSHOT, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release"]
    assert '"version": "1.0.1"' in (previous / "release.json").read_text()


def test_output_guard_as_a_function(tmp_path):
    (tmp_path / "in.csv").write_text("x")
    with pytest.raises(OutputError, match="is the input --predictions"):
        check_outputs([tmp_path / "in.csv"], inputs={"--predictions": tmp_path / "in.csv"})
    with pytest.raises(OutputError, match="contains the input --predictions"):
        check_outputs(folders=[tmp_path], inputs={"--predictions": tmp_path / "in.csv"})
    check_outputs([tmp_path / "out.csv"], inputs={"--predictions": tmp_path / "in.csv", "--other": None})


@pytest.mark.parametrize(
    ("repo_id", "revision", "message"),
    [
        ("kobzaond/..", "main", "'kobzaond/..' is not a valid Hub dataset repository name"),
        ("kobzaond/RLVRAMBench", "../../../etc", "revision '../../../etc' is not a valid branch, tag or commit name"),
        ("kobzaond/RLVRAMBench", "main~1", "revision 'main~1' is not a valid branch, tag or commit name"),
    ],
)
def test_names_that_could_reach_outside_the_cache_are_refused(repo_id, revision, message):
    with pytest.raises(SourceError, match=re.escape(message)):
        load_table("eligible_runs", repo_id, revision)
