"""Loading through a real Hub-protocol server (olah on loopback), exactly as from huggingface.co."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from datasets.distributed import split_dataset_by_node

from rlvrambench_hf import load_dataset
from rlvrambench_hf.data.schema.registry import REGISTRY
from rlvrambench_hf.data.tables.reader import load_table
from rlvrambench_hf.errors import IntegrityError, MissingFileError, SourceError

from conftest import REPO_ID, cli_env, invoke, run_cli
from test_registry import ROWS

CARD_AVAILABLE = [n for n in ROWS if REGISTRY[n].card]
HOST_FILE = "benchmark/host_capacity/results/configurations_flat.csv"  # not covered by a manifest


@pytest.mark.parametrize("name", CARD_AVAILABLE)
def test_every_config_through_the_hub_equals_the_local_copy(hub, snapshot, tmp_path, name):
    spec = REGISTRY[name]
    remote = load_dataset(name, spec.split, source=REPO_ID, revision="main", cache_dir=str(tmp_path))
    local = load_dataset(name, spec.split, source=snapshot, cache_dir=str(tmp_path / "local"))
    assert remote.features == spec.features == local.features
    assert remote.to_list() == local.to_list()
    assert remote.num_rows == ROWS[name]


def test_cli_through_the_hub_with_the_default_repo_id(hub):
    result = invoke("--revision", "main", "configs", env=cli_env(RLVRAMBENCH_SOURCE=None))
    assert result.returncode == 0, result.stderr
    assert f"source: {REPO_ID}@main" in result.stdout
    counts = {line.split()[0]: line.split()[2] for line in result.stdout.splitlines()[3:]}
    assert counts == {**{n: str(ROWS[n]) for n in CARD_AVAILABLE}, "configuration_feasibility": "10"}
    missing = invoke("--revision", "main", "show", "configuration_feasibility")
    assert missing.returncode == 2
    assert missing.stderr.strip().endswith(f"is not in this revision ({REPO_ID}@main)")


def test_streaming_through_the_hub_matches_and_shards_across_ranks(hub, tmp_path):
    streamed = load_dataset("eligible_runs", "measured", source=REPO_ID, revision="main", streaming=True)
    rows = list(streamed)
    prepared = load_dataset("eligible_runs", "measured", source=REPO_ID, revision="main", cache_dir=str(tmp_path))
    assert rows == prepared.to_list()
    ranks = [[r["run_id"] for r in split_dataset_by_node(streamed, rank=rank, world_size=2)] for rank in (0, 1)]
    assert ranks[0] and ranks[1] and not set(ranks[0]) & set(ranks[1])
    assert sorted(ranks[0] + ranks[1]) == sorted(r["run_id"] for r in rows)


@pytest.fixture(scope="module")
def revisions(hub, snapshot):
    """A repository with two commits: v1 (the release) and v2 (one follow-up label edited), main at v2."""
    repo_id = "kobzaond/RLVRAMBench-revisions"
    first = hub.add_repo(repo_id, snapshot)
    hub.tag(repo_id, "v1")
    host = hub.repo_path(repo_id) / HOST_FILE
    lines = host.read_text().splitlines()
    assert ",unresolved," in lines[-1]
    lines[-1] = lines[-1].replace(",unresolved,", ",memory_failure,")
    host.write_text("\n".join(lines) + "\n")
    second = hub.commit(repo_id, "edit one label")
    hub.tag(repo_id, "v2")
    return repo_id, first, second


def last_state(table) -> str:
    return table.column("observed_state").to_pylist()[-1]


def test_second_commit_and_tag_are_seen_only_when_asked(revisions, tmp_path):
    repo_id, first, second = revisions
    pinned = load_table("expanded_host_configurations", repo_id, first, decode=True)
    assert last_state(pinned) == "unresolved"
    assert last_state(load_table("expanded_host_configurations", repo_id, "v1", decode=True)) == "unresolved"
    assert last_state(load_table("expanded_host_configurations", repo_id, "v2", decode=True)) == "memory_failure"
    assert last_state(load_table("expanded_host_configurations", repo_id, "main", decode=True)) == "memory_failure"
    old = load_dataset(
        "expanded_host_configurations", "measured", source=repo_id, revision="v1", cache_dir=str(tmp_path)
    )
    new = load_dataset(
        "expanded_host_configurations", "measured", source=repo_id, revision="v2", cache_dir=str(tmp_path)
    )
    names = REGISTRY["expanded_host_configurations"].features["observed_state"].names
    assert names[old[-1]["observed_state"]] == "unresolved" and names[new[-1]["observed_state"]] == "memory_failure"
    with pytest.raises(SourceError, match="revision 'v3' does not exist"):
        load_table("expanded_host_configurations", repo_id, "v3")


OFFLINE_SCRIPT = """
import json, sys
from rlvrambench_hf import load_dataset
from rlvrambench_hf.errors import RLVRAMBenchError
repo, revision = sys.argv[1], sys.argv[2]
try:
    ds = load_dataset("expanded_host_configurations", "measured", source=repo, revision=revision)
    names = ds.features["observed_state"].names
    print(json.dumps({"last": names[ds[-1]["observed_state"]]}))
except RLVRAMBenchError as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
"""


def run_offline_script(repo_id: str, revision: str, hf_home: Path, offline: bool) -> dict:
    env = cli_env(HF_HOME=str(hf_home), HF_HUB_OFFLINE="1" if offline else None)
    out = subprocess.run(
        [sys.executable, "-c", OFFLINE_SCRIPT, repo_id, revision], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_offline_reuse_keeps_the_pinned_revision(revisions, hf_home):
    """Upstream datasets#7928: offline, a pinned revision must not silently become the latest cached one."""
    repo_id, first, _second = revisions
    assert run_offline_script(repo_id, "v1", hf_home, offline=False) == {"last": "unresolved"}
    assert run_offline_script(repo_id, "main", hf_home, offline=False) == {"last": "memory_failure"}
    assert run_offline_script(repo_id, "v1", hf_home, offline=True) == {"last": "unresolved"}
    assert run_offline_script(repo_id, first, hf_home, offline=True) == {"last": "unresolved"}
    assert run_offline_script(repo_id, "main", hf_home, offline=True) == {"last": "memory_failure"}
    never = run_offline_script(repo_id, "never-cached", hf_home, offline=True)
    assert never["error"] == "SourceError" and "HF_HUB_OFFLINE is set" in never["message"]


def test_offline_with_nothing_cached_fails_clearly(hub, hf_home):
    result = run_cli(
        "--revision", "main", "show", "eligible_runs", env=cli_env(HF_HOME=str(hf_home), HF_HUB_OFFLINE="1")
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "not cached and HF_HUB_OFFLINE is set" in result.stderr


def test_corrupted_file_on_the_hub_is_refused_and_not_kept(hub, snapshot, tmp_path):
    repo_id = "kobzaond/RLVRAMBench-corrupted"
    hub.add_repo(repo_id, snapshot)
    runs = hub.repo_path(repo_id) / "benchmark" / "runs.csv"
    good = runs.read_bytes()
    bad = bytearray(good)
    bad[300] = ord("9") if bad[300] != ord("9") else ord("8")
    runs.write_bytes(bytes(bad))
    hub.commit(repo_id, "damage runs.csv")
    with pytest.raises(IntegrityError, match="benchmark/runs.csv does not match"):
        load_dataset("eligible_runs", source=repo_id, revision="main", cache_dir=str(tmp_path))
    assert not list(tmp_path.rglob("*.arrow"))
    with pytest.raises(IntegrityError):  # refused again: the bad copy was not kept as good
        load_table("eligible_runs", repo_id, "main")
    result = invoke("--source", repo_id, "--revision", "main", "verify")
    assert result.returncode == 2 and "benchmark/runs.csv" in result.stderr
    runs.write_bytes(good)
    hub.commit(repo_id, "restore runs.csv")
    repaired = load_dataset("eligible_runs", "measured", source=repo_id, revision="main", cache_dir=str(tmp_path))
    assert repaired.num_rows == 612


def test_missing_file_and_unknown_repository(hub):
    with pytest.raises(MissingFileError, match=f"is not in this revision \\({REPO_ID}@main\\)"):
        load_table("configuration_feasibility", REPO_ID, "main")
    with pytest.raises(SourceError, match="kobzaond/NoSuchDataset not found"):
        load_table("eligible_runs", "kobzaond/NoSuchDataset", "main")


PLAIN_SCRIPT = """
import json, sys
import datasets
ds = datasets.load_dataset(sys.argv[1], "expanded_host_configurations", split="measured", revision=sys.argv[2])
print(json.dumps({"last": ds[-1]["observed_state"]}))
"""


def test_plain_datasets_offline_ignores_the_pinned_revision(hub, snapshot, hf_home, tmp_path):
    """Why the package resolves revisions itself: with the same cache, plain `datasets.load_dataset` offline
    returns the most recently cached revision instead of the pinned one (huggingface/datasets#7928). If this
    test starts failing, upstream has fixed the bug and the workaround can be reconsidered."""
    import re
    import shutil

    repo_id = "kobzaond/RLVRAMBench-plain"
    folder = tmp_path / "plain"
    shutil.copytree(snapshot, folder)
    card = (folder / "README.md").read_text()
    (folder / "README.md").write_text(re.sub(r"- config_name: configuration_feasibility\n(  .*\n)+", "", card))
    hub.add_repo(repo_id, folder)
    hub.tag(repo_id, "v1")
    host = hub.repo_path(repo_id) / HOST_FILE
    host.write_text(host.read_text().replace(",unresolved,", ",memory_failure,"))
    hub.commit(repo_id, "edit labels")

    def plain(revision: str, offline: bool) -> str:
        env = cli_env(HF_HOME=str(hf_home), HF_HUB_OFFLINE="1" if offline else None)
        out = subprocess.run(
            [sys.executable, "-c", PLAIN_SCRIPT, repo_id, revision],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.strip().splitlines()[-1])["last"]

    assert plain("v1", offline=False) == "unresolved"
    assert plain("main", offline=False) == "memory_failure"
    assert plain("v1", offline=True) == "memory_failure"  # the upstream bug: the pin is lost offline
    assert run_offline_script(repo_id, "v1", hf_home, offline=False) == {"last": "unresolved"}
    assert plain("v1", offline=True) == "memory_failure"
    assert run_offline_script(repo_id, "v1", hf_home, offline=True) == {"last": "unresolved"}  # ours keeps it
