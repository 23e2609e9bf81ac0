"""Network faults and concurrency through the olah-served Hub (bounded, loopback only)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from test_fault_matrix import cache_problems

from conftest import REPO_ID, SNAPSHOT, cli_env, run_cli
from faultproxy import CuttingProxy

RUNS_SHA256 = json.loads((SNAPSHOT / "benchmark/manifest.json").read_text())["files"]["runs.csv"]["sha256"]
LOAD_SCRIPT = """
import hashlib, json, sys
from rlvrambench_hf import load_dataset
ds = load_dataset("eligible_runs", "measured", source=sys.argv[1], revision="main")
print(json.dumps({"rows": ds.num_rows, "digest": hashlib.sha256(json.dumps(ds.to_list()).encode()).hexdigest()}))
"""


@pytest.fixture
def proxy(hub):
    cutting = CuttingProxy(hub.port, cut_marker=b"runs.csv", cut_after=20_000)
    yield cutting
    cutting.close()


def test_cut_download_fails_clearly_and_a_healthy_retry_succeeds(hub, proxy, hf_home):
    env = cli_env(HF_HOME=str(hf_home), HF_ENDPOINT=proxy.endpoint)
    started = time.monotonic()
    cut = run_cli("--revision", "main", "show", "eligible_runs", env=env, timeout=120)
    assert time.monotonic() - started < 120
    assert cut.returncode == 2 and proxy.cuts >= 1
    assert cut.stderr.strip().splitlines() == [cut.stderr.strip()]  # one line
    assert f"cannot fetch benchmark/runs.csv from {proxy.endpoint}" in cut.stderr and "Traceback" not in cut.stderr
    assert not [p for p in hf_home.rglob("runs.csv")]  # no truncated file is served from the snapshot
    healthy = run_cli("--revision", "main", "show", "eligible_runs", env=cli_env(HF_HOME=str(hf_home)))
    assert healthy.returncode == 0, healthy.stderr
    assert "612 rows" in healthy.stdout
    (served,) = hf_home.rglob("runs.csv")  # after the retry: one snapshot entry, pointing at one complete blob
    blobs = [p for p in hf_home.rglob("*") if p.is_file() and "blobs" in p.parts and p.suffix != ".incomplete"]
    assert served.resolve() in blobs
    assert hashlib.sha256(served.read_bytes()).hexdigest() == RUNS_SHA256


def test_closed_port_fails_within_a_bounded_time(hf_home):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = cli_env(HF_HOME=str(hf_home), HF_ENDPOINT=f"http://127.0.0.1:{port}")
    started = time.monotonic()
    result = run_cli("--revision", "main", "configs", env=env, timeout=120)
    assert time.monotonic() - started < 60
    assert result.returncode == 2 and "could not be reached" in result.stderr


def test_eight_processes_share_one_cold_cache(hub, hf_home):
    env = cli_env(HF_HOME=str(hf_home))

    def load(_: int) -> dict:
        out = subprocess.run(
            [sys.executable, "-c", LOAD_SCRIPT, REPO_ID], env=env, capture_output=True, text=True, timeout=300
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(load, range(8)))
    assert all(r == results[0] for r in results) and results[0]["rows"] == 612
    runs_blobs = [
        p for p in (hf_home / "hub").rglob("*") if p.is_file() and "blobs" in p.parts and p.stat().st_size == 517086
    ]
    assert len(runs_blobs) == 1
    prepared = [p for p in (hf_home / "datasets").rglob("*.arrow")]
    assert len({p.parent for p in prepared}) == 1
    assert not [p for p in hf_home.rglob("*.incomplete")]
    assert cache_problems(hf_home) == []  # every blob complete and matching its object id


METRIC_SCRIPT = """
import json, sys
import evaluate
from rlvrambench_hf import transfer
tables = transfer.load_transfer_tables()
rule = sys.argv[1]
predictions = transfer.reference_predictions(tables["queries"], tables["outcomes"], rule)
metric = evaluate.load(sys.argv[2])
scores = metric.compute(predictions=predictions.column("predicted_state").to_pylist(),
                        query_ids=predictions.column("query_id").to_pylist())
print(json.dumps(scores, sort_keys=True))
"""


def test_metric_from_two_processes_at_once_through_the_hub(hub, hf_home, snapshot, tmp_path):
    """Two independent training jobs evaluating at the same moment, one empty shared cache."""
    from rlvrambench_hf import transfer

    from conftest import REPO_ROOT

    env = cli_env(HF_HOME=str(hf_home), RLVRAMBENCH_SOURCE=REPO_ID, RLVRAMBENCH_REVISION="main")
    metric = str(REPO_ROOT / "metrics" / "rlvrambench")
    rules = ["source_label", "always_approve"]
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", METRIC_SCRIPT, rule, metric],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for rule in rules
    ]
    outputs = [w.communicate(timeout=300) for w in workers]
    for rule, worker, (out, err) in zip(rules, workers, outputs):
        assert worker.returncode == 0, err
        expected = transfer.reference_scores(rule, snapshot)
        assert json.loads(out.strip().splitlines()[-1]) == json.loads(json.dumps(expected, sort_keys=True))
