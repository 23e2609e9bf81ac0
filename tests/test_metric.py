"""The `evaluate` module metrics/rlvrambench: hidden labels, same numbers as the CLI, batches, two processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rlvrambench_hf import transfer
from rlvrambench_hf.errors import InputError

from conftest import REPO_ID, cli_env, invoke
from hubserver import REPO_ROOT

METRIC = str(REPO_ROOT / "metrics" / "rlvrambench")

evaluate = pytest.importorskip("evaluate")


@pytest.fixture(scope="module")
def rows(snapshot):
    tables = transfer.load_transfer_tables(snapshot)
    out = {}
    for rule in transfer.RULES:
        p = transfer.reference_predictions(tables["queries"], tables["outcomes"], rule)
        out[rule] = (p.column("query_id").to_pylist(), p.column("predicted_state").to_pylist())
    return out


@pytest.fixture(scope="module")
def cli_scores(snapshot, tmp_path_factory):
    """Score files written by `rlvrambench evaluate` for the three rules."""
    folder = tmp_path_factory.mktemp("cli")
    out = {}
    for rule in transfer.RULES:
        predictions, scores = folder / f"{rule}.csv", folder / f"{rule}.json"
        r = invoke("--source", str(snapshot), "baseline", "--rule", rule, "--output", str(predictions))
        assert r.returncode == 0, r.stderr
        r = invoke("--source", str(snapshot), "evaluate", "--predictions", str(predictions), "--output", str(scores))
        assert r.returncode == 0, r.stderr
        out[rule] = json.loads(scores.read_text())
    return out


@pytest.fixture
def local_source(snapshot, monkeypatch):
    monkeypatch.setenv("RLVRAMBENCH_SOURCE", str(snapshot))
    monkeypatch.delenv("RLVRAMBENCH_REVISION", raising=False)


@pytest.mark.parametrize("rule", transfer.RULES)
def test_metric_equals_cli_local(local_source, rows, cli_scores, rule):
    metric = evaluate.load(METRIC)
    ids, states = rows[rule]
    assert metric.compute(predictions=states, query_ids=ids, track="all") == cli_scores[rule]


@pytest.mark.parametrize("rule", transfer.RULES)
def test_metric_equals_cli_through_hub(hub, monkeypatch, rows, cli_scores, rule):
    monkeypatch.setenv("RLVRAMBENCH_SOURCE", REPO_ID)
    monkeypatch.setenv("RLVRAMBENCH_REVISION", "main")
    metric = evaluate.load(METRIC, "transfer")
    ids, states = rows[rule]
    assert metric.compute(predictions=states, query_ids=ids) == cli_scores[rule]


def test_metric_reuses_hub_cache_offline(hub, rows, cli_scores, tmp_path):
    """After one online use, the labels come from the huggingface_hub cache with the Hub unreachable."""
    ids, states = rows["always_reject"]
    (tmp_path / "rows.json").write_text(json.dumps([ids, states]))
    code = textwrap.dedent(f"""
        import json, evaluate
        ids, states = json.load(open({str(tmp_path / "rows.json")!r}))
        metric = evaluate.load({METRIC!r})
        print(json.dumps(metric.compute(predictions=states, query_ids=ids)))
    """)
    online = cli_env(RLVRAMBENCH_SOURCE=REPO_ID, RLVRAMBENCH_REVISION="main")
    offline = {**online, "HF_HUB_OFFLINE": "1", "HF_ENDPOINT": "http://127.0.0.1:9"}
    for env in (online, offline):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=180)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout.strip().splitlines()[-1]) == cli_scores["always_reject"]


def test_metric_source_argument_and_add_batch(snapshot, rows, cli_scores):
    metric = evaluate.load(METRIC, keep_in_memory=True)
    ids, states = rows["always_approve"]
    for start in range(0, len(ids), 128):
        metric.add_batch(predictions=states[start : start + 128], query_ids=ids[start : start + 128])
    assert metric.compute(source=str(snapshot)) == cli_scores["always_approve"]


def test_metric_track(local_source, rows, cli_scores):
    ids, states = rows["source_label"]
    queries = transfer.load_transfer_tables()["queries"].to_pylist()
    gpu = {q["query_id"] for q in queries if q["track"] == "gpu_count_transfer"}
    pairs = [(q, s) for q, s in zip(ids, states) if q in gpu]
    scores = evaluate.load(METRIC).compute(
        predictions=[s for _, s in pairs], query_ids=[q for q, _ in pairs], track="gpu_count_transfer"
    )
    assert scores["per_track"] == {"gpu_count_transfer": cli_scores["source_label"]["per_track"]["gpu_count_transfer"]}
    with pytest.raises(InputError, match="364 missing"):
        evaluate.load(METRIC).compute(predictions=[s for _, s in pairs], query_ids=[q for q, _ in pairs])


def test_metric_rejects_bad_predictions(local_source, rows):
    ids, states = rows["source_label"]
    with pytest.raises(InputError, match="1 duplicated"):
        evaluate.load(METRIC).compute(predictions=states + states[:1], query_ids=ids + ids[:1])
    with pytest.raises(InputError, match="outside"):
        evaluate.load(METRIC).compute(predictions=["approve"] * len(ids), query_ids=ids)


def test_metric_two_processes(snapshot, rows, cli_scores, tmp_path):
    ids, states = rows["source_label"]
    (tmp_path / "rows.json").write_text(json.dumps([ids, states]))
    script = tmp_path / "worker.py"
    script.write_text(
        textwrap.dedent(f"""
        import json, sys
        import evaluate
        process_id = int(sys.argv[1])
        ids, states = json.load(open({str(tmp_path / "rows.json")!r}))
        metric = evaluate.load({METRIC!r}, num_process=2, process_id=process_id, experiment_id="two-processes",
                               cache_dir={str(tmp_path / "cache")!r}, timeout=60)
        share = slice(process_id, None, 2)  # each process adds every other prediction, in two batches
        mine_ids, mine_states = ids[share], states[share]
        half = len(mine_ids) // 2
        metric.add_batch(predictions=mine_states[:half], query_ids=mine_ids[:half])
        metric.add_batch(predictions=mine_states[half:], query_ids=mine_ids[half:])
        result = metric.compute(track="all")
        print(json.dumps(result))
    """)
    )
    env = cli_env(RLVRAMBENCH_SOURCE=str(snapshot), RLVRAMBENCH_REVISION=None)
    workers = [
        subprocess.Popen(
            [sys.executable, str(script), str(i)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for i in (0, 1)
    ]
    outputs = [w.communicate(timeout=180) for w in workers]
    for w, (_, err) in zip(workers, outputs):
        assert w.returncode == 0, err
    assert json.loads(outputs[0][0].strip().splitlines()[-1]) == cli_scores["source_label"]
    assert outputs[1][0].strip().splitlines()[-1] == "null"


def test_metric_admission_config(local_source, snapshot):
    from rlvrambench_hf.admission import score_decisions
    from rlvrambench_hf.data.tables.reader import load_table

    candidates = load_table("admission_candidates", snapshot).column("candidate_id").to_pylist()
    decisions = ["approve"] * len(candidates)
    expected = score_decisions(candidates, decisions, source=str(snapshot))
    metric = evaluate.load(METRIC, "admission")
    assert set(metric.features) == {"candidate_ids", "decisions"}
    assert metric.compute(candidate_ids=candidates, decisions=decisions) == expected


def test_metric_unknown_config():
    from rlvrambench_hf import UnknownConfigError

    with pytest.raises(UnknownConfigError, match="known configs: transfer, admission, estimation$"):
        evaluate.load(METRIC, "leaderboard")


def test_the_card_the_description_and_the_help_name_every_config_of_the_table():
    import yaml

    from rlvrambench_hf.adapters.metric import METRIC_CONFIGS

    text = (Path(METRIC) / "README.md").read_text()
    assert text.startswith("---\n")
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["title"] == "RLVRAMBench" and "metric" in meta["tags"]
    helped = invoke("metric", "--help")
    assert helped.returncode == 0
    help_text = " ".join(helped.stdout.split())
    for name, config in METRIC_CONFIGS.items():
        assert f'Config "{name}"' in meta["description"], name
        assert f"configs {', '.join(METRIC_CONFIGS)}" in help_text
        loaded = evaluate.load(METRIC, name)
        assert f'"{name}"' in loaded.description and f'Args (config "{name}")' in loaded.inputs_description
        assert list(loaded.features) == list(config.features)


def test_a_compute_argument_the_config_does_not_take_is_one_line():
    from rlvrambench_hf import InputError

    metric = evaluate.load(METRIC, "admission")
    with pytest.raises(InputError, match="metric config 'admission' takes no argument 'track'; it takes candidate_ids"):
        metric.compute(candidate_ids=["x"], decisions=["approve"], track="all")


def test_the_metric_card_cites_the_article_as_the_package_does():
    from rlvrambench_hf.data.schema.pins import ARTICLE_TITLE, citation

    card = (REPO_ROOT / "metrics" / "rlvrambench" / "README.md").read_text(encoding="utf-8")
    assert citation() in card and ARTICLE_TITLE in citation()
    assert "{{RLVRAMBench}}" not in (REPO_ROOT / "metrics" / "rlvrambench" / "rlvrambench.py").read_text()
