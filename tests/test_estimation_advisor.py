"""The advisor (planned runs), model metadata from Hub headers, and the estimator commands' bad inputs.

The release's four models: the counts of model_metadata.json are reproduced from tensor shapes derived from each
model's configuration (no weights). An unseen model is served by olah from a small repository the tests generate.
Bad inputs run the CLI in a fresh interpreter: one line on stderr, exit 2, nothing written.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from rlvrambench_hf import advisor, estimation
from rlvrambench_hf.estimation.features import FEATURE_SETTINGS
from rlvrambench_hf.estimation.hubmeta import metadata_from_shapes

from conftest import cli_env, invoke, run_cli
from tinymodel import llama_like_shapes, tiny_model_folder

TINY_REPO = "acme/tiny-lm"
COUNTS = (
    "floating_checkpoint_elements",
    "floating_checkpoint_bytes",
    "all_linear_layer_adapter_elements",
    "largest_transformer_layer_elements",
    "non_transformer_layer_elements",
    "largest_weight_tensor_elements",
    "tensor_count",
)
KNOWN = "cfg-2afbe250af9cd3e1"  # granite, 4 GPUs, math c3 (ESTIMATION.md's worked example)
#: The settings of targets.csv a planned configuration gives (the device comes from the hardware).
PLANNED_SETTINGS = (
    "model_id",
    "workload_id",
    "configuration_level",
    *(s for s in FEATURE_SETTINGS if s not in ("device_capacity_mib", "margin_limit_mib")),
)


@pytest.fixture(scope="module")
def metadata(snapshot: Path) -> dict:
    return json.loads((snapshot / "benchmark/estimation/model_metadata.json").read_text())


@pytest.fixture(scope="module")
def inputs(snapshot: Path):
    return estimation.load_inputs(snapshot)


@pytest.mark.parametrize(
    "model",
    [
        "Qwen/Qwen2.5-3B-Instruct",
        "Qwen/Qwen2.5-7B-Instruct",
        "ibm-granite/granite-3.3-2b-instruct",
        "microsoft/Phi-4-mini-instruct",
    ],
)
def test_counts_of_the_four_models_follow_from_their_shapes(metadata: dict, model: str) -> None:
    published = metadata[model]
    config = {k: published[k] for k in ("hidden_size", "intermediate_size", "num_attention_heads", "vocab_size")}
    config.update(
        num_key_value_heads=published["num_key_value_heads"],
        num_hidden_layers=published["num_hidden_layers"],
        head_dim=published["head_dim"],
        tie_word_embeddings=published["tie_word_embeddings"],
    )
    # Qwen2 attention has q/k/v biases; Phi-3-style models fuse qkv_proj and gate_up_proj
    shapes = llama_like_shapes(config, attention_bias=model.startswith("Qwen/"), fused="Phi" in model)
    derived = metadata_from_shapes(model, config, {name: ("BF16", shape) for name, shape in shapes.items()})
    assert {k: derived[k] for k in COUNTS} == {k: published[k] for k in COUNTS}


def plan_of(row: dict) -> dict:
    return {k: row[k] for k in PLANNED_SETTINGS}


def test_advice_on_a_measured_configuration(inputs) -> None:
    row = next(r for r in inputs.pool.rows if r["configuration_id"] == KNOWN)
    advice = advisor.advise_planned([plan_of(row)], inputs.source)
    assert advice["statement"].startswith("Measurement first") and "not measurements" in advice["statement"]
    (only,) = advice["configurations"]
    assert only["verdict"]["basis"] == "measured" and only["verdict"]["state"] == row["observed_state"]
    assert any(r["configuration_id"] == KNOWN for r in only["measured"])
    donor = only["donor"]
    measured = {r["configuration_id"]: r for r in inputs.pool.rows}[donor["configuration_id"]]
    assert (donor["workload_id"], donor["configuration_level"]) == (row["workload_id"], row["configuration_level"])
    assert (donor["observed_state"], donor["max_completed_run_peak_mib"]) == (
        measured["observed_state"],
        measured["max_completed_run_peak_mib"],
    )
    assert only["predictions"]["donor_copy"]["donor_configuration_id"] == donor["configuration_id"]
    assert only["nearest_measured"][0]["distance"] == 0
    assert KNOWN in {n["configuration_id"] for n in only["nearest_measured"] if n["distance"] == 0}
    assert only["scope_flags"] == []
    assert set(only["predictions"]) == set(estimation.METHODS)
    assert only["startup_check"]["applicable"] is True


def test_advice_on_the_prospective_targets_equals_the_final_predictions(snapshot: Path, tmp_path: Path) -> None:
    """targets.csv itself is a planned-configurations CSV; the advisor's fit is the final fit."""
    advice = advisor.advise_planned(snapshot / "benchmark/estimation/targets.csv", snapshot)
    published = json.loads((snapshot / "benchmark/estimation/predictions.json").read_text())
    for c in advice["configurations"]:
        mine = {m: p["predicted_state"] for m, p in c["predictions"].items()}
        theirs = {
            r["method"]: r["predicted_state"] for r in published if r["configuration_id"] == c["configuration_id"]
        }
        assert mine == theirs, c["configuration_id"]
        assert c["scope_flags"][0].startswith("model outside the references' fitting pool: Qwen/Qwen2.5-7B-Instruct")
        assert "floating_checkpoint_elements=7615616512" in c["scope_flags"][1]


def test_cli_advise_from_yaml_with_other_hardware(snapshot: Path, tmp_path: Path, inputs) -> None:
    row = next(r for r in inputs.pool.rows if r["configuration_id"] == KNOWN)
    planned = tmp_path / "plan.yaml"
    planned.write_text(yaml.safe_dump({**plan_of(row), "configuration_id": "my-run", "max_response_length": 4096}))
    output = tmp_path / "advice.json"
    result = invoke(
        "--source",
        str(snapshot),
        "estimate",
        "advise",
        "--planned",
        str(planned),
        "--device-capacity-mib",
        "81920",
        "--output",
        str(output),
        "--details",
    )
    assert result.returncode == 0, result.stderr
    advice = json.loads(output.read_text())
    (c,) = advice["configurations"]
    assert c["configuration_id"] == "my-run" and c["settings"]["device_capacity_mib"] == 81920
    assert c["settings"]["margin_limit_mib"] == 77824  # 95 % of the capacity, as the card defines the margin
    assert any(f.startswith("hardware not measured: 81920 MiB devices") for f in c["scope_flags"])
    assert any("max_response_length=4096 (measured 512-2048)" in f for f in c["scope_flags"])
    assert "basis: floor (arithmetic that cannot hold" in result.stdout  # max_model_len < prompt + response
    assert "scope: hardware not measured" in result.stdout  # the flag in full, under --details


@pytest.fixture(scope="module")
def tiny_model(hub, tmp_path_factory) -> str:
    hub.add_repo(TINY_REPO, tiny_model_folder(tmp_path_factory.mktemp("tiny")), repo_type="model")
    return TINY_REPO


def test_advice_on_an_unseen_model_through_the_hub(snapshot: Path, tmp_path: Path, inputs, tiny_model: str) -> None:
    row = next(r for r in inputs.pool.rows if r["configuration_id"] == KNOWN)
    planned = tmp_path / "plan.csv"
    with open(planned, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=PLANNED_SETTINGS)
        writer.writeheader()
        writer.writerow({**plan_of(row), "model_id": tiny_model})
    output = tmp_path / "advice.json"
    result = run_cli(
        "--source",
        str(snapshot),
        "estimate",
        "advise",
        "--planned",
        str(planned),
        "--device-capacity-mib",
        "24576",
        "--output",
        str(output),
        env=cli_env(HF_HOME=str(tmp_path / "hf")),
    )
    assert result.returncode == 0, result.stderr
    (c,) = json.loads(output.read_text())["configurations"]
    assert c["model_family"] is None
    flags = c["scope_flags"]
    assert flags[0].startswith(f"model family not measured: {tiny_model}")
    assert (
        flags[1].startswith("settings outside the measured ranges") and "floating_checkpoint_elements=6736" in flags[1]
    )
    assert flags[2].startswith("hardware not measured: 24576 MiB devices")
    assert c["donor"]["workload_id"] == row["workload_id"] and c["donor"]["gpu_count_matches"] is True
    # the metadata came from the headers: the tiny model's counts, not the release's
    derived = estimation.fetch_model_metadata(tiny_model)
    assert derived["floating_checkpoint_elements"] == 6736 and derived["all_linear_layer_adapter_elements"] == 32768
    assert "family not measured" in result.stdout


ESTIMATORS = """
class Raises:
    def fit(self, training):
        raise RuntimeError("estimator exploded")
    def predict(self, targets):
        return []

class Short:
    def fit(self, training):
        pass
    def predict(self, targets):
        return ["within_margin"] * (len(targets) - 1)

class Unknown:
    def fit(self, training):
        pass
    def predict(self, targets):
        return ["fits"] * len(targets)
"""


def _bad_case(work: Path, snapshot: Path, case: str) -> tuple[list[str], dict, str]:
    """(arguments, environment changes, expected message) of one bad input."""
    (work / "estimators.py").write_text(ESTIMATORS)
    plan = {
        "model_id": "Qwen/Qwen2.5-3B-Instruct",
        "workload_id": "gsm8k",
        "configuration_level": "c2",
        "gpu_count": 2,
    }
    (work / "partial.yaml").write_text(yaml.safe_dump(plan))
    (work / "hardware.yaml").write_text(yaml.safe_dump({**_full_plan(snapshot), "device_capacity_mib": 81920}))
    compare = ["estimate", "compare", "--estimator"]
    cases = {
        "missing settings": (
            ["estimate", "advise", "--planned", "partial.yaml"],
            {},
            "missing setting(s) rollout_tp_size, actor_micro_batch",
        ),
        "other hardware without the option": (
            ["estimate", "advise", "--planned", "hardware.yaml"],
            {},
            "device_capacity_mib=81920 is not the benchmark's 40960",
        ),
        "estimator raises": (
            [*compare, "estimators:Raises"],
            {},
            "estimator Raises, fold granite33: fit raised RuntimeError: estimator exploded",
        ),
        "estimator returns the wrong length": (
            [*compare, "estimators:Short"],
            {},
            "estimator Short, fold granite33: predict returned 29 labels for 30 targets",
        ),
        "estimator returns an unknown label": (
            [*compare, "estimators:Unknown"],
            {},
            "estimator Unknown, fold granite33: predict returned unknown label(s) 'fits'",
        ),
    }
    return cases[case]


def _full_plan(snapshot: Path) -> dict:
    with open(snapshot / "benchmark/estimation/targets.csv", newline="") as handle:
        row = next(csv.DictReader(handle))
    return {k: row[k] for k in PLANNED_SETTINGS}


BAD_CASES = [
    "missing settings",
    "other hardware without the option",
    "estimator raises",
    "estimator returns the wrong length",
    "estimator returns an unknown label",
]


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_inputs_are_one_line_errors_and_write_nothing(snapshot: Path, tmp_path: Path, case: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    arguments, env, message = _bad_case(work, snapshot, case)
    before = sorted(p.name for p in work.iterdir())
    home = tmp_path / "hf"
    home.mkdir()
    result = run_cli(
        "--source",
        str(snapshot),
        *arguments,
        "--output",
        str(work / "out.json"),
        env=cli_env(HF_HOME=str(home), PYTHONPATH=str(work), **env),
        cwd=work,
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert message in lines[0], lines[0]
    assert sorted(p.name for p in work.iterdir() if p.name != "__pycache__") == before
    assert not [p for p in home.rglob("*") if p.is_file()]
