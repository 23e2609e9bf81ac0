"""Models named as users name them, offline and with nothing cached: the architecture facts the package ships give
sizes that equal the release's own model metadata, and Qwen2.5-1.5B-Instruct (measured by the release outside the
estimation pool) gets its measured records and a model prediction without a contradicting flag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvrambench_hf.advisor import advise, advise_planned, read_plans
from rlvrambench_hf.data.tables.reader import load_table
from rlvrambench_hf.estimation.hubmeta import architecture_metadata, fetch_model_metadata
from rlvrambench_hf.estimation.knownconfigs import KNOWN_CONFIGS, KNOWN_SOURCE

PLAN_SETTINGS = (
    "model_id", "workload_id", "gpu_count", "rollout_tp_size", "actor_micro_batch", "rollout_logprob_micro_batch",
    "ref_logprob_micro_batch", "vllm_gpu_memory_utilization", "parameter_offload", "optimizer_offload",
    "free_cache_engine", "max_prompt_length", "max_response_length", "max_model_len", "max_num_seqs", "rollout_n",
    "train_batch_size",
)  # fmt: skip


@pytest.fixture
def offline(monkeypatch, tmp_path: Path) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))


def test_shipped_facts_give_the_release_metadata_of_every_model_both_name(snapshot: Path) -> None:
    release = json.loads((snapshot / "benchmark/estimation/model_metadata.json").read_text())
    both = [m for m in release if m in KNOWN_CONFIGS]
    assert len(both) >= 2
    for model in both:
        derived = architecture_metadata(model, KNOWN_CONFIGS[model])
        assert {k: derived[k] for k in release[model] if k in derived} == {
            k: release[model][k] for k in release[model] if k in derived
        }, model


def test_offline_with_nothing_cached_a_known_model_is_read_from_the_shipped_facts(offline) -> None:
    metadata = fetch_model_metadata("Qwen/Qwen2.5-1.5B-Instruct")
    assert metadata["derived_from"] == KNOWN_SOURCE and metadata["num_hidden_layers"] == 28
    assert metadata["max_position_embeddings"] == 32768 and 1.5e9 < metadata["floating_checkpoint_elements"] < 1.6e9


def test_qwen2_5_1_5b_offline_gets_its_measurements_and_a_model_prediction(offline, snapshot: Path) -> None:
    configurations = load_table("configurations", snapshot).to_pylist()
    measured = [r for r in configurations if r["model_id"] == "Qwen/Qwen2.5-1.5B-Instruct"]
    assert len(measured) == 13
    plan = {k: measured[0][k] for k in PLAN_SETTINGS}
    (answer,) = advise_planned([plan], snapshot)["configurations"]
    assert answer["verdict"]["basis"] == "measured"
    assert measured[0]["configuration_id"] in [r["configuration_id"] for r in answer["measured"]]
    assert answer["phases"] and answer["predicted_peak_mib"] > 0  # the model's answer beside the measurement
    assert not [f for f in answer["scope_flags"] if "family not measured" in f]
    from rlvrambench_hf.cli.advise.details import details

    plans = read_plans([plan], source=snapshot)
    heading = details(advise(plans, snapshot).answer(0), plans, 0)[0]  # the readable answer says so too
    assert heading.endswith("Qwen/Qwen2.5-1.5B-Instruct (measured, outside the estimation families)"), heading
    twin = {**plan, "max_response_length": plan["max_response_length"] // 2}
    (other,) = advise_planned([twin], snapshot)["configurations"]
    assert other["verdict"]["basis"] in ("predicted", "floor") and other["phases"]
