"""The datasets builder used the standard way, directly and through the loading-script module."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from rlvrambench_hf.data.builder import RLVRAMBench
from rlvrambench_hf.data.schema.card import read_front_matter
from rlvrambench_hf.data.schema.registry import REGISTRY
from rlvrambench_hf.data.tables.reader import load_table
from rlvrambench_hf.errors import MissingFileError

from conftest import REPO_ROOT, cli_env


def load_script_module():
    spec = importlib.util.spec_from_file_location(
        "rlvrambench_builder", REPO_ROOT / "loading_script" / "rlvrambench.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_config_of_the_release_card_has_a_builder_config_with_its_split_and_file(snapshot):
    card = read_front_matter((snapshot / "README.md").read_text(encoding="utf-8"), "release card")
    builder_configs = {c.name: c for c in RLVRAMBench.BUILDER_CONFIGS}
    named = [entry["config_name"] for entry in card["configs"]]
    assert len(named) == 11 and named[0] == RLVRAMBench.DEFAULT_CONFIG_NAME
    for entry in card["configs"]:
        name = entry["config_name"]
        assert name in builder_configs, f"the card names {name}, which has no builder config"
        (data_file,) = entry["data_files"]
        if not (snapshot / data_file["path"]).exists():  # made only from a file that is there, in one line
            with pytest.raises(MissingFileError, match=f"config {name}: .* is not in this revision"):
                RLVRAMBench(config_name=name, source=str(snapshot))
            continue
        builder = RLVRAMBench(config_name=name, source=str(snapshot))
        assert builder.data_file == snapshot / data_file["path"]
        assert (builder.info.features, REGISTRY[name].split, REGISTRY[name].path) == (
            REGISTRY[name].features,
            data_file["split"],
            data_file["path"],
        )


def test_loading_script_builder_prepares_and_streams(snapshot, tmp_path):
    module = load_script_module()
    builder = module.RLVRAMBench(config_name="transfer_queries", source=str(snapshot), cache_dir=str(tmp_path))
    builder.download_and_prepare()
    prepared = builder.as_dataset(split="evaluation")
    assert prepared.features == REGISTRY["transfer_queries"].features
    assert prepared.to_list() == load_table("transfer_queries", snapshot).to_pylist()
    assert list(builder.as_streaming_dataset(split="evaluation")) == prepared.to_list()
    assert list(tmp_path.rglob("*.arrow"))


def test_builder_through_the_hub(hub, tmp_path):
    builder = RLVRAMBench(
        config_name="admission_candidates", source="kobzaond/RLVRAMBench", revision="main", cache_dir=str(tmp_path)
    )
    builder.download_and_prepare()
    assert builder.as_dataset(split="test").num_rows == 12


def test_loading_script_as_a_command(snapshot, tmp_path):
    script = str(REPO_ROOT / "loading_script" / "rlvrambench.py")
    env = cli_env(HF_HOME=str(tmp_path))
    ok = subprocess.run(
        [sys.executable, script, "admission_attempts", str(snapshot)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert ok.returncode == 0, ok.stderr
    assert "admission_attempts / recorded: 48 rows" in ok.stdout
    bad = subprocess.run(
        [sys.executable, script, "configuration_feasibility", str(snapshot)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert bad.returncode == 2 and "three-model-configurations.csv is not in this revision" in bad.stderr
