"""``release push`` and ``metric push`` for real: the package's push code, unchanged, through the real huggingface_hub
client against a Hub-protocol server that takes commits (:mod:`commitserver`) — preupload, the LFS batch API and
object upload, the NDJSON commit with its parent commit, refs and tags — and everything read back from it.

Every command runs as a user would run it (a fresh interpreter, ``HF_ENDPOINT`` at the server). The server speaks the
LFS transfer protocol, not Xet, so the environment sets ``HF_HUB_DISABLE_XET=1``, huggingface_hub's own switch.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlvrambench_hf.data.schema.registry import get_spec
from rlvrambench_hf.errors import InputError
from rlvrambench_hf.release.build import build_release
from rlvrambench_hf.release.layout import digest_file, folder_files, parquet_path
from rlvrambench_hf.release.push import push_release
from rlvrambench_hf.release.space import space_files

from commitserver import CommitServer
from conftest import cli_env, invoke, run_cli

DATASET_CONFIGS = ["eligible_runs", "stage_measurements", "admission_candidates"]
LARGE = "evidence/traces.jsonl"  # no LFS pattern matches it: its size alone takes it to LFS


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    hub = CommitServer(tmp_path_factory.mktemp("commit-hub")).start()
    try:
        yield hub
    finally:
        hub.stop()


@pytest.fixture(scope="module")
def release(snapshot, tmp_path_factory) -> Path:
    return build_release(tmp_path_factory.mktemp("push") / "rel", "1.1.0", snapshot).folder


def hub_env(server: CommitServer, home: Path, **extra: str | None) -> dict[str, str]:
    """The environment of a maintainer whose Hub is the commit server (token included)."""
    settings: dict[str, str | None] = {
        "HF_ENDPOINT": server.endpoint,
        "HF_TOKEN": server.token,
        "HF_HUB_DISABLE_XET": "1",
        "HF_HOME": str(home),
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    }
    return cli_env(**(settings | extra))


def push(server: CommitServer, home: Path, folder: Path, repo_id: str, *args: str, **env: str | None):
    done = run_cli("release", "push", str(folder), "--repo-id", repo_id, *args, env=hub_env(server, home, **env))
    assert server.token not in done.stdout + done.stderr  # a token is never printed
    return done


def remote_files(server: CommitServer, repo_id: str, revision: str = "main") -> dict:
    repo = server.store.get("dataset", repo_id)
    assert repo is not None
    return {e.path: e for e in repo.files(repo.resolve(revision))}


def head(server: CommitServer, repo_id: str, revision: str = "main") -> str | None:
    repo = server.store.get("dataset", repo_id)
    return repo.resolve(revision) if repo is not None else None


READ_BACK = """
import json, sys
import datasets, evaluate
import rlvrambench_hf
from rlvrambench_hf import load_dataset, load_table, transfer
from rlvrambench_hf.data.schema.registry import card_configs
repo, tag, snapshot, plain = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
out = {}
for spec in card_configs():
    name = spec.name
    try:
        ours = load_dataset(name, spec.split, source=repo, revision=tag)
    except rlvrambench_hf.RLVRAMBenchError as exc:
        out[name] = str(exc)
        continue
    typed = load_table(name, snapshot)
    same = ours.data.table.select(spec.column_names).cast(typed.schema).equals(typed)
    out[name] = [ours.features == spec.features, same]
    if name in plain:
        ds = datasets.load_dataset(repo, name, split=spec.split, revision=tag)
        stream = datasets.load_dataset(repo, name, split=spec.split, revision=tag, streaming=True)
        out[name] += [
            ds.features == spec.features,
            ds.data.table.select(spec.column_names).cast(typed.schema).equals(typed),
            list(stream) == typed.to_pylist(),
        ]
tables = transfer.load_transfer_tables(snapshot)
baseline = transfer.reference_predictions(tables["queries"], tables["outcomes"], "source_label")
ids, states = baseline["query_id"].to_pylist(), baseline["predicted_state"].to_pylist()
metric = evaluate.load(rlvrambench_hf.metric_path())
at_tag = metric.compute(predictions=states, query_ids=ids, track="all", source=repo, revision=tag)
local = metric.compute(predictions=states, query_ids=ids, track="all", source=snapshot)
out["metric"] = [at_tag == local, at_tag["overall"]["correct_three_state"]]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def pushed(server, snapshot, release, tmp_path_factory) -> tuple[str, str]:
    """kobzaond/RLVRAMBench on the server (the snapshot as its release commit), then release 1.1.0 pushed and tagged."""
    repo_id = "kobzaond/RLVRAMBench"
    before = server.seed(repo_id, snapshot)
    home = tmp_path_factory.mktemp("hf")
    done = push(server, home, release, repo_id, "--tag", "v1.1.0", "--message", "Release 1.1.0")
    assert done.returncode == 0, done.stderr
    return repo_id, before


def test_a_release_is_pushed_as_one_commit_with_its_tag(server, pushed, release):
    repo_id, before = pushed
    repo = server.store.get("dataset", repo_id)
    refs = repo.refs()
    assert {t["name"]: t["targetCommit"] for t in refs["tags"]} == {"v1.1.0": head(server, repo_id)}
    assert repo.git("rev-parse", "main^").strip() == before  # one commit on top of the planned parent
    assert repo.git("log", "-1", "--format=%s", "main").strip() == "Release 1.1.0"
    files = remote_files(server, repo_id)
    assert sorted(files) == sorted([*folder_files(release), ".gitattributes"])  # the Hub's own file is kept
    for rel in folder_files(release):
        digest = digest_file(release / rel)
        if files[rel].lfs_oid is not None:
            assert (files[rel].lfs_oid, files[rel].size) == (digest.sha256, digest.size_bytes), rel
        else:
            assert repo.blob(files[rel].oid) == (release / rel).read_bytes(), rel
    parquet = [rel for rel in files if rel.endswith(".parquet")]
    assert len(parquet) == 10 and all(files[rel].lfs_oid for rel in parquet)  # by the .gitattributes pattern
    assert all(files[rel].lfs_oid is None for rel in files if rel.endswith((".csv", ".json", ".md")))
    assert server.calls("/info/lfs/objects/batch")
    assert {path.rsplit("/", 1)[1] for path in server.uploads() if repo_id in path} == {
        files[rel].lfs_oid for rel in parquet
    }


def test_the_pushed_release_reads_back_at_the_new_tag(pushed, snapshot, server, tmp_path):
    repo_id, _ = pushed
    done = subprocess.run(
        [sys.executable, "-c", READ_BACK, repo_id, "v1.1.0", str(snapshot), ",".join(DATASET_CONFIGS)],
        capture_output=True,
        text=True,
        timeout=600,
        env=hub_env(server, tmp_path / "hf"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result.pop("metric") == [True, 352]
    assert result.pop("configuration_feasibility").startswith("config configuration_feasibility: ")
    for name, checks in result.items():
        assert checks == [True] * (5 if name in DATASET_CONFIGS else 2), name


def test_a_push_with_nothing_to_change_makes_no_commit(pushed, release, server, tmp_path):
    repo_id, _ = pushed
    commits, refs = len(server.calls("/commit/")), server.store.get("dataset", repo_id).refs()
    done = push(server, tmp_path / "hf", release, repo_id)
    assert done.returncode == 0, done.stderr
    assert f"0 to add, 0 to replace, 0 to delete, {len(folder_files(release))} unchanged" in done.stdout
    assert f"nothing to commit: {repo_id}@main already holds this folder" in done.stdout
    assert len(server.calls("/commit/")) == commits and server.store.get("dataset", repo_id).refs() == refs


def test_an_existing_tag_is_refused_before_any_upload(pushed, snapshot, server, tmp_path):
    repo_id, _ = pushed
    newer = build_release(tmp_path / "rel-1.2.0", "1.2.0", snapshot).folder  # README, release.json, croissant differ
    before, seen = head(server, repo_id), len(server.requests)
    done = push(server, tmp_path / "hf", newer, repo_id, "--tag", "v1.1.0")
    assert done.returncode == 2 and done.stderr.strip() == f"rlvrambench: error: tag v1.1.0 already exists in {repo_id}"
    asked = [path for _, path in server.requests[seen:]]
    assert not [p for p in asked if "/preupload/" in p or "/lfs" in p or "/commit/" in p or "/tag/" in p], asked
    assert head(server, repo_id) == before


def test_a_push_to_a_revision_that_is_not_a_branch_is_refused(pushed, release, server, tmp_path):
    repo_id, _ = pushed
    done = push(server, tmp_path / "hf", release, repo_id, "--revision", "v1.1.0")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "--revision 'v1.1.0' is not a branch of kobzaond/RLVRAMBench (branches: main)" in done.stderr


def test_a_tag_with_a_pull_request_is_refused_without_contacting_the_hub(release):
    with pytest.raises(InputError, match="cannot be combined with --create-pr"):
        push_release(release, "kobzaond/RLVRAMBench", tag="v1.2.0", create_pr=True)


def test_a_pull_request_leaves_the_branch_alone(server, snapshot, release, tmp_path):
    repo_id = "rlvrambench-tests/pull-request"
    before = server.seed(repo_id, snapshot)
    done = push(server, tmp_path / "hf", release, repo_id, "--create-pr")
    assert done.returncode == 0, done.stderr
    assert f"committed: {server.endpoint}/datasets/{repo_id}/discussions/1" in done.stdout
    assert head(server, repo_id) == before
    assert sorted(remote_files(server, repo_id, "refs/pr/1")) == sorted([*folder_files(release), ".gitattributes"])


def test_a_large_file_takes_the_lfs_path(server, snapshot, tmp_path):
    source = tmp_path / "src"
    shutil.copytree(snapshot, source)
    large = source / LARGE
    large.parent.mkdir()
    line = b'{"stage": "rollout", "device": 0, "used_mib": 35730.0, "note": "' + b"x" * 200 + b'"}\n'
    large.write_bytes(line * (11 * 1024 * 1024 // len(line) + 1))  # past the Hub's 10 MiB limit for regular files
    folder = build_release(tmp_path / "rel", "1.1.0", source).folder
    repo_id = "rlvrambench-tests/large-file"
    server.seed(repo_id, snapshot)
    uploads = len(server.uploads())
    done = push(server, tmp_path / "hf", folder, repo_id, "--tag", "v1.1.0")
    assert done.returncode == 0, done.stderr
    digest = digest_file(large)
    entry = remote_files(server, repo_id)[LARGE]
    assert (entry.lfs_oid, entry.size) == (digest.sha256, digest.size_bytes) and entry.pointer_size < 200
    assert f"/lfs/datasets/{repo_id}/{digest.sha256}" in server.uploads()[uploads:]
    fetch = (
        "import sys; from huggingface_hub import hf_hub_download; "
        "print(hf_hub_download(sys.argv[1], sys.argv[2], repo_type='dataset', revision='v1.1.0'))"
    )
    got = subprocess.run(
        [sys.executable, "-c", fetch, repo_id, LARGE],
        capture_output=True,
        text=True,
        timeout=300,
        env=hub_env(server, tmp_path / "hf-read"),
    )
    assert got.returncode == 0, got.stderr[-2000:]
    assert Path(got.stdout.strip().splitlines()[-1]).read_bytes() == large.read_bytes()
    again = push(server, tmp_path / "hf", folder, repo_id, "--dry-run", "--json")
    plan = json.loads(again.stdout[: again.stdout.rindex("}") + 1])
    assert LARGE in plan["unchanged"] and plan["add"] == plan["replace"] == []  # compared by SHA-256


def test_the_server_failing_in_the_middle_of_a_commit_leaves_the_remote_unchanged(server, snapshot, release, tmp_path):
    repo_id = "rlvrambench-tests/mid-commit"
    before = server.seed(repo_id, snapshot)
    files = {path: entry.oid for path, entry in remote_files(server, repo_id).items()}
    server.break_next("commit", "drop")  # objects of half the files written, then the connection closes
    done = push(server, tmp_path / "hf", release, repo_id, "--tag", "v1.1.0")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert f"push to {repo_id}@main failed: " in done.stderr
    assert "a commit applies all of its changes or none, so run the same push again" in done.stderr
    repo = server.store.get("dataset", repo_id)
    assert head(server, repo_id) == before and repo.refs()["tags"] == []
    assert {path: entry.oid for path, entry in remote_files(server, repo_id).items()} == files
    uploads = len(server.uploads())
    assert uploads > 0  # the Parquet files went up before the commit failed
    done = push(server, tmp_path / "hf", release, repo_id, "--tag", "v1.1.0")
    assert done.returncode == 0, done.stderr
    assert "tagged" in done.stdout and repo.resolve("v1.1.0") == head(server, repo_id) != before
    assert server.uploads()[uploads:] == []  # the objects were already there: nothing is sent twice
    assert sorted(remote_files(server, repo_id)) == sorted([*folder_files(release), ".gitattributes"])


def test_an_upload_refused_by_the_storage_leaves_the_remote_unchanged(server, snapshot, release, tmp_path):
    repo_id = "rlvrambench-tests/upload-refused"
    before = server.seed(repo_id, snapshot)
    server.break_next("lfs-upload", "reject")  # one Parquet file refused; huggingface_hub does not retry a 400
    done = push(server, tmp_path / "hf", release, repo_id)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert f"push to {repo_id}@main failed: the server answered 400" in done.stderr
    assert head(server, repo_id) == before and "croissant.json" not in remote_files(server, repo_id)
    done = push(server, tmp_path / "hf", release, repo_id)
    assert done.returncode == 0, done.stderr
    assert sorted(remote_files(server, repo_id)) == sorted([*folder_files(release), ".gitattributes"])


def test_a_commit_that_lands_after_the_plan_is_not_overwritten(server, snapshot, release, tmp_path):
    from commitstore import Operation

    repo_id = "rlvrambench-tests/race"
    server.seed(repo_id, snapshot)

    def concurrent(repo) -> None:
        server.before_commit = None
        parent = repo.branch_head("main")
        commit = repo.make_commit(parent, [Operation("add", "NOTES.md", content=b"a colleague's edit\n")], "notes")
        assert repo.move_ref("refs/heads/main", commit, parent)

    server.before_commit = concurrent
    done = push(server, tmp_path / "hf", release, repo_id)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert f"{repo_id}@main moved after the plan" in done.stderr and "nothing was committed" in done.stderr
    assert "NOTES.md" in remote_files(server, repo_id) and "croissant.json" not in remote_files(server, repo_id)


def test_a_token_that_cannot_write_is_told_apart(server, snapshot, release, tmp_path):
    repo_id = "rlvrambench-tests/read-only"
    before = server.seed(repo_id, snapshot)
    done = push(server, tmp_path / "hf", release, repo_id, HF_TOKEN="hf_not_the_right_one")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "the server answered 401" in done.stderr and "cannot write to this repository" in done.stderr
    assert "hf_not_the_right_one" not in done.stderr and head(server, repo_id) == before


def test_a_push_to_a_new_repository_creates_it_private_when_asked(server, release, tmp_path):
    repo_id = "rlvrambench-tests/brand-new"
    assert server.store.get("dataset", repo_id) is None
    done = push(server, tmp_path / "hf", release, repo_id, "--private", "--tag", "v1.1.0")
    assert done.returncode == 0, done.stderr
    assert f"created the dataset repository {repo_id} (private)" in done.stdout
    assert ("dataset", repo_id) in server.private and head(server, repo_id, "v1.1.0") == head(server, repo_id)
    files = remote_files(server, repo_id)
    assert {p for p in folder_files(release)} <= set(files)
    again = push(server, tmp_path / "hf", release, repo_id)  # exists now: planned against it, nothing to commit
    assert again.returncode == 0 and "created" not in again.stdout and "nothing to commit" in again.stdout


def test_a_new_repository_is_created_public_by_default_and_only_on_main(server, release, tmp_path):
    repo_id = "rlvrambench-tests/public-new"
    refused = push(server, tmp_path / "hf", release, repo_id, "--revision", "dev")
    assert refused.returncode == 2 and "does not exist yet" in refused.stderr
    assert server.store.get("dataset", repo_id) is None
    done = push(server, tmp_path / "hf", release, repo_id)
    assert done.returncode == 0, done.stderr
    assert f"created the dataset repository {repo_id}\n" in done.stdout and ("dataset", repo_id) not in server.private


EVALUATE_SPACE = """
import json, sys, evaluate
ids, states = json.load(open(sys.argv[2]))
metric = evaluate.load(sys.argv[1])  # the Space by name, from the Hub
print(json.dumps(metric.compute(predictions=states, query_ids=ids)))
"""


def test_metric_push_of_the_space_folder(server, snapshot, tmp_path):
    space_id = "rlvrambench-tests/rlvmetric"
    env = hub_env(server, tmp_path / "hf", RLVRAMBENCH_SOURCE=str(snapshot))
    folder = tmp_path / "rlvmetric"
    done = run_cli("metric", "space", "--output", str(folder), "--repo-id", space_id, env=env)
    assert done.returncode == 0, done.stderr
    done = run_cli("metric", "push", str(folder), "--repo-id", space_id, env=env)
    assert done.returncode == 0, done.stderr
    assert "plan for rlvrambench-tests/rlvmetric@main (remote commit none): 4 to add" in done.stdout
    assert f"committed: {server.endpoint}/spaces/{space_id}/commit/" in done.stdout
    repo = server.store.get("space", space_id)
    assert repo is not None and repo.sdk == "gradio"
    files = {e.path: repo.blob(e.oid) for e in repo.files(repo.resolve("main"))}
    assert {k: v for k, v in files.items() if k != ".gitattributes"} == space_files(space_id)
    again = run_cli("metric", "push", str(folder), "--repo-id", space_id, env=env)
    assert again.returncode == 0 and "nothing to commit" in again.stdout

    predictions, scores = tmp_path / "p.csv", tmp_path / "s.json"
    assert invoke("--source", str(snapshot), "baseline", "--output", str(predictions)).returncode == 0
    assert invoke("--source", str(snapshot), "evaluate", "--predictions", str(predictions), "--output", str(scores))
    ids, states = zip(*(line.split(",") for line in predictions.read_text().splitlines()[1:]))
    (tmp_path / "rows.json").write_text(json.dumps([ids, states]))
    loaded = subprocess.run(
        [sys.executable, "-c", EVALUATE_SPACE, space_id, str(tmp_path / "rows.json")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=hub_env(server, tmp_path / "hf-evaluate", RLVRAMBENCH_SOURCE=str(snapshot)),
    )
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert json.loads(loaded.stdout.strip().splitlines()[-1]) == json.loads(scores.read_text())


def test_the_parquet_files_are_read_through_the_redirect_to_storage(pushed, server, release, tmp_path):
    """An LFS file is served as the Hub serves it: a redirect carrying its SHA-256 to another (storage) origin."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    repo_id, _ = pushed
    rel = parquet_path(get_spec("eligible_runs"))
    url = hf_hub_url(repo_id, rel, repo_type="dataset", revision="v1.1.0", endpoint=server.endpoint)
    meta = get_hf_file_metadata(url)
    assert meta.etag == digest_file(release / rel).sha256 and meta.location.startswith(server.storage_endpoint)
    assert meta.commit_hash == head(server, repo_id) and meta.size == (release / rel).stat().st_size


# ---- malformed answers (issue 38, item 4): a small Hub of this test's own, whose answers to one request at a time
# lack fields, have fields of the wrong types, are not JSON, or are larger than any answer may be. Every such
# answer is one line naming the request and what was wrong, exit 2, nothing committed. Each case pushes to a
# repository of its own (me/case-N), whose one request the Hub answers wrongly; the pushes run as command lines in
# one interpreter (``hostile_driver.py``, as the hostile harness runs its cases), with that Hub as HF_ENDPOINT.

SHA = "a" * 40
VALID_REFS = {"branches": [{"name": "main", "ref": "refs/heads/main", "targetCommit": SHA}], "converts": [], "tags": []}
HTML = b"<!DOCTYPE html><html><body><h1>Sign in</h1></body></html>"
DRIVER = Path(__file__).with_name("hostile_driver.py")


class MalformedHub:
    """A Hub that answers every request a push makes validly but, for the repository ``me/case-N``, the request
    ``wrong[N]`` (repository information, file list, refs, commit), which it answers with its body."""

    def __init__(self, wrong: list[tuple[str, bytes]]) -> None:
        import http.server
        import re
        import threading

        self.wrong, self.calls = wrong, {i: [] for i in range(len(wrong))}
        hub = self
        repo = r"^/api/datasets/me/case-(?P<case>\d+)"
        routes = {
            "info": re.compile(repo + r"(/revision/[^/]+)?$"),
            "tree": re.compile(repo + r"/tree/"),
            "refs": re.compile(repo + r"/refs"),
            "preupload": re.compile(repo + r"/preupload/"),
            "commit": re.compile(repo + r"/commit/"),
        }

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                payload = self.rfile.read(length) if length else b""
                path = self.path.split("?")[0]
                matched = [(n, m) for n, r in routes.items() if (m := r.match(path))]
                body = None
                if matched:
                    name, m = matched[0]
                    case = int(m.group("case"))
                    hub.calls[case].append(name)
                    request, wrong = hub.wrong[case]
                    body = wrong if name == request else hub.valid(name, case, payload)
                elif path.startswith("/api/validate-yaml"):
                    body = json.dumps({"errors": [], "warnings": []}).encode()
                self.send_response(404 if body is None else 200)
                self.send_header("Content-Type", "text/html" if body == HTML else "application/json")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            do_GET = do_POST = do_HEAD = _answer

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def valid(self, name: str, case: int, payload: bytes) -> bytes:
        if name == "preupload":
            files = json.loads(payload)["files"]
            modes = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]
            return json.dumps({"files": modes, "commitOid": SHA}).encode()
        info = {"id": f"me/case-{case}", "sha": SHA, "siblings": [], "private": False}
        commit = {"commitOid": "b" * 40, "commitUrl": f"{self.endpoint}/datasets/me/case-{case}/commit/x"}
        return json.dumps({"info": info, "tree": [], "refs": VALID_REFS}.get(name, commit)).encode()

    def close(self) -> None:
        self.server.shutdown()


MALFORMED = {
    "repository information without a commit": ("info", b'{"id": "me/data"}', "its commit is None"),
    "repository information without an id": ("info", b'{"sha": "' + SHA.encode() + b'"}', "without the field 'id'"),
    "repository information with a number for the commit": ("info", b'{"id": "me/data", "sha": 5}', "its commit is 5"),
    "repository information that is a list": ("info", b"[]", "an answer of the wrong shape"),
    "repository information that is an HTML page": ("info", HTML, "an answer that is not JSON"),
    "repository information of 9 MiB": ("info", b'{"sha": "' + b"a" * (9 << 20) + b'"}', "with more than it may"),
    "a file list entry without its size": (
        "tree",
        b'[{"type": "file", "path": "a", "oid": "' + SHA.encode() + b'"}]',
        "without the field 'size'",
    ),
    "a file list entry whose size is text": (
        "tree",
        json.dumps([{"type": "file", "path": "a", "size": "big", "oid": SHA}]).encode(),
        "its size of a is 'big', not a number of bytes",
    ),
    "a file list entry whose object id is a number": (
        "tree",
        json.dumps([{"type": "file", "path": "a", "size": 3, "oid": 7}]).encode(),
        "its object id of a is 7",
    ),
    "a file list that is text": ("tree", b"not json", "an answer that is not JSON"),
    "refs without tags": ("refs", b'{"branches": [], "converts": []}', "without the field 'tags'"),
    "refs whose branch name is a number": (
        "refs",
        json.dumps({**VALID_REFS, "branches": [{"name": 3, "ref": "refs/heads/main", "targetCommit": SHA}]}).encode(),
        "its ref is 3, not a name",
    ),
    "a commit answer without its URL": (
        "commit",
        b'{"commitOid": "' + b"b" * 40 + b'"}',
        "without the field 'commitUrl'",
    ),
    "a commit answer whose commit id is a number": (
        "commit",
        b'{"commitOid": 5, "commitUrl": "https://huggingface.co/datasets/me/data/commit/' + b"b" * 40 + b'"}',
        "its commit id is 5",
    ),
    "a commit answer that is an HTML page": ("commit", HTML, "an answer that is not JSON"),
}
REQUESTS = {"info": "repository information", "tree": "file list", "refs": "refs", "commit": "commit"}


@pytest.fixture(scope="module")
def malformed_pushes(release, tmp_path_factory) -> dict[str, tuple[dict, list[str], str]]:
    """Case name -> (the push's result: status, stdout, stderr; the requests the Hub saw; the Hub's endpoint)."""
    names = list(MALFORMED)
    hub = MalformedHub([MALFORMED[n][:2] for n in names])
    work = tmp_path_factory.mktemp("malformed")
    cases = [
        {
            "argv": ["release", "push", str(release), "--repo-id", f"me/case-{i}"]
            + (["--tag", "v9.9.9"] if MALFORMED[name][0] == "refs" else []),
            "cwd": str(work),
        }
        for i, name in enumerate(names)
    ]
    (work / "cases.json").write_text(json.dumps(cases))
    env = cli_env(HF_ENDPOINT=hub.endpoint, HF_TOKEN="hf_" + "x" * 30, HF_HOME=str(work / "hf"))
    try:
        done = subprocess.run(
            [sys.executable, str(DRIVER), str(work / "cases.json"), str(work / "results.json")],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
    finally:
        hub.close()
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((work / "results.json").read_text())
    return {name: (results[i], hub.calls[i], hub.endpoint) for i, name in enumerate(names)}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_answer_of_the_hub_is_one_line_naming_the_request(malformed_pushes, case):
    request, _, said = MALFORMED[case]
    result, calls, endpoint = malformed_pushes[case]
    lines = result["stderr"].splitlines()
    assert result["status"] == 2 and len(lines) == 1, result["stderr"][-2000:]
    assert "internal error" not in lines[0] and "Traceback" not in result["stderr"]
    assert f"answered its {REQUESTS[request]}" in lines[0] or f"answered the {REQUESTS[request]}" in lines[0], lines
    assert said in lines[0] and endpoint in lines[0], lines
    assert "hf_xxx" not in result["stderr"] + result["stdout"]
    assert request in calls  # the request answered wrongly was made
    if request != "commit":
        assert "commit" not in calls  # refused before anything was committed
    else:
        assert "run the same push again" in lines[0]
