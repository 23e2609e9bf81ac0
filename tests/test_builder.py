"""The datasets builder used the standard way, directly and through the loading-script module."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
from datasets.info import DatasetInfosDict

from rlvrambench_hf.data.builder import RLVRAMBench
from rlvrambench_hf.data.schema.card import read_front_matter
from rlvrambench_hf.data.schema.registry import REGISTRY, card_configs
from rlvrambench_hf.data.tables.reader import load_table
from rlvrambench_hf.errors import MissingFileError
from rlvrambench_hf.release.build import build_release

from conftest import REPO_ROOT, cli_env


def load_script_module():
    spec = importlib.util.spec_from_file_location(
        "rlvrambench_builder", REPO_ROOT / "loading_script" / "rlvrambench.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def built(snapshot, tmp_path_factory) -> Path:
    """The release as ``rlvrambench release build`` writes it: the builder is compared with its card's
    ``dataset_info`` and with what plain ``datasets`` reads from its Parquet files."""
    return build_release(tmp_path_factory.mktemp("built") / "release", "1.0.0", snapshot).folder


def config_set_problems(card_names: list[str], builder_names: list[str]) -> list[str]:
    """What differs between the configs a card names and the builder's configs, both ways."""
    problems = [f"the card names {n}, which has no builder config" for n in card_names if n not in builder_names]
    problems += [f"the card lacks {n}" for n in builder_names if n not in card_names]
    problems += [f"the card names {n} twice" for n in sorted({n for n in card_names if card_names.count(n) > 1})]
    return problems


@pytest.mark.unit
def test_the_config_check_sees_a_config_missing_either_way():
    names = [s.name for s in card_configs()]
    assert config_set_problems(names, names) == []
    assert config_set_problems(names[1:], names) == [f"the card lacks {names[0]}"]
    assert config_set_problems([*names, "extra"], names) == ["the card names extra, which has no builder config"]
    assert config_set_problems([*names, names[2]], names) == [f"the card names {names[2]} twice"]


def test_every_config_of_the_release_card_has_a_builder_config_with_its_split_and_file(snapshot, built, tmp_path):
    card = read_front_matter((snapshot / "README.md").read_text(encoding="utf-8"), "release card")
    named = [entry["config_name"] for entry in card["configs"]]
    card_builders = [c.name for c in RLVRAMBench.BUILDER_CONFIGS if REGISTRY[c.name].card]
    assert config_set_problems(named, card_builders) == []
    assert len(named) == 11 and named[0] == RLVRAMBench.DEFAULT_CONFIG_NAME
    built_card = read_front_matter((built / "README.md").read_text(encoding="utf-8"), "built card")
    infos = {i["config_name"]: i for i in built_card["dataset_info"]}
    available = []
    for entry in card["configs"]:
        name = entry["config_name"]
        (data_file,) = entry["data_files"]
        if not (snapshot / data_file["path"]).exists():  # made only from a file that is there, in one line
            with pytest.raises(MissingFileError, match=f"config {name}: .* is not in this revision"):
                RLVRAMBench(config_name=name, source=str(snapshot))
            continue
        available.append(name)
        builder = RLVRAMBench(config_name=name, source=str(snapshot), cache_dir=str(tmp_path / "cache"))
        assert builder.data_file == snapshot / data_file["path"]
        (published,) = DatasetInfosDict.from_dataset_card_data({"dataset_info": [infos[name]]}).values()
        assert builder.info.features == published.features, name
        assert list(published.splits) == [data_file["split"]]
        builder.download_and_prepare()
        prepared = builder.as_dataset(split=data_file["split"])
        plain = datasets.load_dataset(str(built), name, split=data_file["split"], cache_dir=str(tmp_path / "plain"))
        assert prepared.features == plain.features, name
        assert prepared.to_list() == plain.to_list(), name
        assert published.splits[data_file["split"]].num_examples == prepared.num_rows
    assert config_set_problems(list(infos), available) == []  # the built card describes every available config


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
