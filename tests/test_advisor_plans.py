"""Plans read from a user's own config: the planned CSV, a VERL launch script and YAML, a TRL GRPOConfig.

The equivalence of the three ways to write one run, the round trip of every configuration of the release through
the VERL mapping table, VERL's defaults from a real packaged VERL trainer config, and the TRL mapping with its
flags. Bad inputs are in tests/test_advisor_bad_inputs.py.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from rlvrambench_hf import advisor
from rlvrambench_hf.advisor import TRL_MAPPING, VERL_MAPPING, Plans, read_plans
from rlvrambench_hf.advisor.output.document import document
from rlvrambench_hf.advisor.plan.knobs import KNOB_BY_NAME
from rlvrambench_hf.advisor.plan.mapping import NO_REFERENCE_FLAG, TRL_STACK_FLAG
from rlvrambench_hf.advisor.plan.plans import RowLabels
from rlvrambench_hf.advisor.read.measured import LEVEL_PATTERN, LEVEL_SETTINGS
from rlvrambench_hf.data.tables.reader import load_table
from rlvrambench_hf.errors import InputError

from conftest import run_cli

MEASURED = "cfg-338d9224eb9d2f3a"  # Qwen2.5-3B, gsm8k, c2, 2 GPUs, boundary study
#: The settings of a plan in the dataset's vocabulary (a row of configurations.csv, ids and names aside).
PLANNED_COLUMNS = ("model_id", "workload_id", *(m.setting for m in VERL_MAPPING[1:] if m.setting not in KNOB_BY_NAME))


@pytest.fixture(scope="module")
def configurations(snapshot: Path) -> list[dict]:
    return load_table("configurations", snapshot, decode=True).to_pylist()


def row_of(configurations: list[dict], configuration_id: str) -> dict:
    return next(r for r in configurations if r["configuration_id"] == configuration_id)


def verl_overrides(row: dict) -> list[str]:
    """The row written as VERL overrides through the mapping table's ``write`` (absent settings left out)."""
    words = []
    for mapped in VERL_MAPPING:
        value = row.get(mapped.setting)
        if value is None:
            continue
        for key, written in zip(mapped.keys, mapped.write(value, row)):
            if written is not None:  # None: the write leaves that key as it is
                words.append(f"{key}={_hydra(written)}")
    return words + [
        "actor_rollout_ref.actor.use_kl_loss=true",  # the release's runs computed a fixed reference's log-probs
        f"actor_rollout_ref.actor.ppo_mini_batch_size={row['train_batch_size']}",
        "actor_rollout_ref.rollout.name=vllm",
        "actor_rollout_ref.actor.strategy=fsdp",
        "actor_rollout_ref.model.target_modules=all-linear",
        "actor_rollout_ref.hybrid_engine=true",
    ]


def _level_of(row: dict) -> tuple:
    return tuple(row[k] for k in ("workload_id", *LEVEL_SETTINGS))


def _hydra(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def nested(overrides: list[str]) -> dict:
    """The same overrides as a nested VERL config mapping, values typed as YAML would type them."""
    tree: dict = {}
    for word in overrides:
        key, _, text = word.partition("=")
        *parents, leaf = key.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = yaml.safe_load(text)
    return tree


def launch_script(overrides: list[str], *, model_variable: bool = True) -> str:
    lines = ["#!/usr/bin/env bash", "set -x", 'MODEL_PATH="$HOME/models/Qwen2.5-3B-Instruct"', "export GPUS=2", ""]
    lines.append("python3 -m verl.trainer.main_ppo \\")
    for word in overrides:
        key, _, value = word.partition("=")
        if key == "actor_rollout_ref.model.path" and model_variable:
            value = "$MODEL_PATH"
        elif key == "trainer.n_gpus_per_node":
            value = "${GPUS}"
        elif key == "actor_rollout_ref.rollout.gpu_memory_utilization":
            value = f"'{value}'"
        lines.append(f"    {key}={value} \\")
    lines.append('    trainer.experiment_name="grpo $(date +%s)" # a name the script computes, unused here')
    return "\n".join(lines) + "\n"


def same_plans(a: Plans, b: Plans, ignore: tuple[str, ...] = ()) -> None:
    """The same settings (and the same knobs where both readers give them: a planned CSV gives none), but those in
    ``ignore``."""
    shared = [n for n in a.table.column_names if n in b.table.column_names and n not in ignore]
    kept = [[n for n in t.table.column_names if n not in ignore] for t in (a, b)]
    assert shared in kept
    left, right = a.table.select(shared), b.table.select(shared)
    assert left.equals(right), [n for n in shared if not left[n].equals(right[n])]
    assert [a.row_flags(i) for i in range(len(a))] == [b.row_flags(i) for i in range(len(b))]


def test_a_verl_launch_script_the_equivalent_yaml_and_the_planned_csv_give_the_same_plans(
    snapshot: Path, tmp_path: Path, configurations: list[dict]
) -> None:
    row = row_of(configurations, MEASURED)
    overrides = verl_overrides(row)
    script = tmp_path / "run_grpo.sh"
    script.write_text(launch_script(overrides))
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(nested(overrides)))
    planned = tmp_path / "plans.csv"
    columns = ["model_id", "workload_id", *(m.setting for m in VERL_MAPPING[1:] if m.setting not in KNOB_BY_NAME)]
    with open(planned, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerow({c: row[c] for c in columns})

    env = {"HOME": "/home/someone"}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        from_script = read_plans(script, kind="verl", workload="gsm8k", source=snapshot)
    from_yaml = read_plans(config, kind="verl", workload="gsm8k", source=snapshot)
    from_csv = read_plans(planned, source=snapshot)
    same_plans(from_script, from_yaml)
    # what the measured row leaves blank, a VERL run takes from VERL's defaults (this package ships them)
    unset = tuple(c for c in columns if row[c] is None)
    assert unset and all(from_script.source(c, 0).startswith("VERL 0.9.1's default") for c in unset)
    same_plans(from_script, from_csv, ignore=unset)
    # the local folder named as a measured model is that model; the level is inferred from the settings
    settings = from_script.settings(0)
    assert settings["model_id"] == "Qwen/Qwen2.5-3B-Instruct" and settings["configuration_level"] == "c2"
    assert from_script.row_flags(0) == []
    assert from_script.origins[0] == f"{script} line 6"
    assert from_script.as_written("rollout_n", 0) == f"actor_rollout_ref.rollout.n ({script} line 6)"
    assert from_csv.as_written("rollout_n", 0) == f"column 'rollout_n' ({planned} row 1)"
    # and the same advice (the advisor's output for the three)
    advice = [advisor.advise_planned(p, snapshot)["configurations"][0] for p in (from_script, from_yaml, from_csv)]
    for entry in advice:
        entry.pop("origin")  # where each plan came from: the script, the YAML, the CSV
        for name in unset:
            entry["settings"].pop(name, None)
    # the script and the YAML also say the knobs a planned CSV leaves out, each as the release's stack ran it
    knobs = [{k: entry["settings"].pop(k, None) for k in KNOB_BY_NAME} for entry in advice]
    assert knobs[0] == knobs[1] and set(knobs[2].values()) == {None}
    odd = {
        k: (knobs[0][k], from_script.source(k, 0))
        for k, knob in KNOB_BY_NAME.items()
        if not (knobs[0][k] in (None, knob.measured) or from_script.source(k, 0).startswith("VERL 0.9.1's default"))
    }
    assert not odd, odd  # fmt: skip
    assert advice[0] == advice[1]
    # the same answer from the CSV; the model's arithmetic says where the knobs came from (VERL's defaults or not)
    assert _figures(advice[0]) == _figures(advice[2])
    assert advice[0]["donor"]["configuration_id"] == MEASURED
    assert advice[0]["verdict"]["basis"] == "measured"
    assert MEASURED in [r["configuration_id"] for r in advice[0]["measured"]]


def _figures(entry: object) -> object:
    """An answer without the words of its arithmetic (the numbers stay)."""
    if isinstance(entry, dict):
        return {k: _figures(v) for k, v in entry.items() if k not in ("arithmetic", "source")}
    if isinstance(entry, list):
        return [_figures(v) for v in entry]
    return entry


def _through_a_fifo(path: Path, folder: Path, **options: object) -> Plans:
    """``read_plans`` of a FIFO (no suffix) that a writer thread feeds with ``path``'s bytes."""
    fifo = folder / f"fifo-{path.stem}"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(path.read_bytes()))
    writer.start()
    try:
        return read_plans(fifo, **options)
    finally:
        writer.join(timeout=30)


def test_plans_through_a_pipe_read_as_the_file_does(snapshot: Path, tmp_path: Path, configurations: list[dict]) -> None:
    row = row_of(configurations, MEASURED)
    overrides = verl_overrides(row)
    files = {
        "script": (tmp_path / "run.sh", launch_script(overrides, model_variable=False), {"kind": "verl"}),
        "verl yaml": (tmp_path / "config.yaml", yaml.safe_dump(nested(overrides)), {"kind": "verl"}),
        "trl yaml": (tmp_path / "grpo.yaml", yaml.safe_dump(TRL_YAML), {"kind": "trl", "workload": "math"}),
        "planned yaml": (tmp_path / "plan.yaml", yaml.safe_dump({c: row[c] for c in PLANNED_COLUMNS}), {}),
        "planned csv": (tmp_path / "plans.csv", _csv_text([{c: row[c] for c in PLANNED_COLUMNS}] * 3), {}),
    }
    for name, (path, text, options) in files.items():
        path.write_text(text)
        options = {"workload": "gsm8k", **options, "source": snapshot}
        from_file = read_plans(path, **options)  # type: ignore[arg-type]
        piped = _through_a_fifo(path, tmp_path, **options)
        assert piped.table.equals(from_file.table), name
        assert [piped.row_flags(i) for i in range(len(piped))] == [from_file.row_flags(i) for i in range(len(piped))]
    # the command line, the CSV on standard input given as /dev/stdin
    with open(files["planned csv"][0], "rb") as stdin:
        result = subprocess.run(
            [sys.executable, "-m", "rlvrambench_hf", "--source", str(snapshot), "estimate", "advise",
             "--planned", "/dev/stdin"],
            stdin=stdin, capture_output=True, text=True, env=_env(), timeout=300,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    headlines = [f"planned-{i}: fits on A100 40GB (40,960 MiB per GPU)" for i in (1, 2, 3)]
    assert [line for line in result.stdout.splitlines() if line.startswith("planned-")] == headlines


def _csv_text(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def test_every_configuration_of_the_release_round_trips_through_the_verl_reader(
    snapshot: Path, configurations: list[dict]
) -> None:
    """Each of the 212 rows written as a VERL command line and read back gives the row's settings."""
    mapped = [m.setting for m in VERL_MAPPING if m.setting not in KNOB_BY_NAME]
    levels = 0
    for row in configurations:
        line = "python3 -m verl.trainer.main_ppo " + " ".join(verl_overrides(row))
        plans = read_plans(line, kind="verl", workload=row["legacy_dataset_id"], source=snapshot)
        back = plans.table.to_pylist()[0]
        unset = [k for k in mapped if row[k] is None]  # what the row leaves blank, VERL's defaults give
        assert all(plans.source(k, 0).startswith("VERL 0.9.1's default") for k in unset), row["configuration_id"]
        assert {k: back[k] for k in mapped if k not in unset} == {k: row[k] for k in mapped if k not in unset}, row[
            "configuration_id"]  # fmt: skip
        assert back["workload_id"] == row["workload_id"]
        if re.match(LEVEL_PATTERN, row["configuration_level"]):
            assert back["configuration_level"] == row["configuration_level"], row["configuration_id"]
        no_level = [
            f"configuration level: none (no measured level of {row['workload_id']} has these settings): no donor"
        ]
        assert plans.row_flags(0) == ([] if back["configuration_level"] else no_level), row["configuration_id"]
        same = {r["configuration_level"] for r in configurations if _level_of(r) == _level_of(row)}
        expected = sorted(level for level in same if re.match(LEVEL_PATTERN, level))
        assert [back["configuration_level"]] == (expected or [None]), row["configuration_id"]
        levels += bool(expected)
    assert levels == 150  # the other 62 are named settings (safe_margin, external_b8, ...) equal to no level


def test_named_settings_are_not_levels_but_equal_settings_infer_one(snapshot: Path, configurations: list[dict]) -> None:
    joint = next(r for r in configurations if r["configuration_level"] == "joint" and r["workload_id"] == "math")
    c3 = next(r for r in configurations if r["configuration_level"] == "c3" and r["workload_id"] == "math")
    assert {k: joint[k] for k in LEVEL_SETTINGS} == {k: c3[k] for k in LEVEL_SETTINGS}
    plan = {k: joint[k] for k in ("model_id", "workload_id", "gpu_count", *LEVEL_SETTINGS)}
    assert read_plans([plan], source=snapshot).settings(0)["configuration_level"] == "c3"
    other = read_plans([{**plan, "max_response_length": 4096, "max_model_len": 4608}], source=snapshot)
    assert "configuration_level" not in other.settings(0)
    assert other.row_flags(0) == ["configuration level: none (no measured level of math has these settings): no donor"]


def test_absent_settings_take_the_installed_verls_defaults(
    snapshot: Path, tmp_path: Path, packaged_verl: Path, monkeypatch
) -> None:
    generated = yaml.safe_load((packaged_verl / "verl/trainer/config/_generated_ppo_trainer.yaml").read_text())
    script = tmp_path / "short.sh"
    script.write_text(
        "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_batch_size=32 \\\n"
        "  actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct actor_rollout_ref.model.lora_rank=64 \\\n"
        "  actor_rollout_ref.actor.ppo_mini_batch_size=16 \\\n"
        "  actor_rollout_ref.rollout.name=vllm trainer.n_gpus_per_node=2 \\\n"
        "  actor_rollout_ref.rollout.tensor_model_parallel_size=1 \\\n"
        "  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \\\n"
        "  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \\\n"
        "  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4\n"
    )
    monkeypatch.syspath_prepend(str(packaged_verl))
    plans = read_plans(script, kind="verl", workload="gsm8k", source=snapshot)
    got = plans.settings(0)
    rollout, data = generated["actor_rollout_ref"]["rollout"], generated["data"]
    assert got["vllm_gpu_memory_utilization"] == rollout["gpu_memory_utilization"] == 0.5
    assert (got["max_prompt_length"], got["max_response_length"]) == (data["max_prompt_length"], 512)
    assert got["max_model_len"] == 32768  # null: VERL 0.7 and later give vLLM the model's own context length
    assert plans.source("max_model_len", 0) == (
        "not set: VERL 0.7.1 and later give vLLM the model's own context length, max_position_embeddings 32,768 "
        "(its config.json, as the release's model metadata has it)"
    )
    assert got["rollout_n"] == rollout["n"] == 1 and got["max_num_seqs"] == rollout["max_num_seqs"]
    assert got["parameter_offload"] is False and got["free_cache_engine"] is True
    assert got["gpu_count"] == 2 * generated["trainer"]["nnodes"]
    assert "configuration_level" not in got
    # each value says where it came from: the script's line, or VERL's defaults
    assert plans.source("rollout_n", 0) == "VERL 0.9.1's default (verl/trainer/config/_generated_ppo_trainer.yaml)"
    assert plans.source("actor_micro_batch", 0) == f"{script} line 6"
    assert plans.source("model_id", 0) == f"{script} line 2"
    assert plans.row_flags(0) == [
        NO_REFERENCE_FLAG,  # VERL's defaults turn no KL term on, so it loads no reference policy
        "configuration level: none (no measured level of gsm8k has these settings): no donor",
    ]
    assert plans.row_notes(0)[0] == "for VERL 0.9.1 (installed here)"
    # with LoRA, VERL computes the reference log-probabilities in the actor at the rollout's micro-batch
    script.write_text(script.read_text().replace("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4", ""))
    no_ref = read_plans(script, kind="verl", workload="gsm8k", source=snapshot).settings(0)
    assert no_ref["ref_logprob_micro_batch"] == no_ref["rollout_logprob_micro_batch"] == 4
    # VERL's own defaults leave the per-GPU log-prob micro-batches null: then they are missing, named
    script.write_text(script.read_text().replace("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4", ""))
    result = run_cli("--source", str(snapshot), "estimate", "advise", "--verl", str(script),
                     env={**_env(), "PYTHONPATH": str(packaged_verl)})  # fmt: skip
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "missing VERL setting(s) actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu: not set, and " \
           "null in VERL 0.9.1's defaults" in result.stderr  # fmt: skip


def _env() -> dict[str, str]:
    from conftest import cli_env

    return cli_env()


@dataclass
class FakeGRPOConfig:
    """Enough of TRL's GRPOConfig for the duck-typed API (field names and defaults as trl 1.16 has them)."""

    per_device_train_batch_size: int = 8
    gradient_accumulation_steps: int = 1
    num_generations: int = 8
    max_completion_length: int = 512
    vllm_gpu_memory_utilization: float = 0.3
    vllm_tensor_parallel_size: int = 1
    vllm_max_model_length: int | None = None
    use_vllm: bool = False
    vllm_mode: str = "colocate"
    steps_per_generation: int | None = None
    max_steps: int = -1
    save_steps: int = 500
    beta: float = 0.0
    learning_rate: float = 1e-6


TRL_YAML = {
    "model_name_or_path": "Qwen/Qwen2.5-3B-Instruct",
    "dataset_name": "EleutherAI/hendrycks_math",
    "output_dir": "grpo-out",
    "use_peft": True,
    "lora_r": 64,
    "lora_target_modules": "all-linear",
    "num_processes": 2,
    "use_vllm": True,
    "vllm_mode": "colocate",
    "vllm_gpu_memory_utilization": 0.6,
    "max_prompt_length": 512,
    "max_completion_length": 512,
    "num_generations": 2,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 8,
    "vllm_tensor_parallel_size": 1,
    "max_steps": 100,
    "save_steps": 50,
    "gradient_checkpointing": True,
}


def test_a_trl_config_maps_where_the_meaning_holds_with_a_flag_on_the_stack(snapshot: Path, tmp_path: Path) -> None:
    config = tmp_path / "grpo.yaml"
    config.write_text(yaml.safe_dump(TRL_YAML))
    plans = read_plans(config, kind="trl", workload="math", source=snapshot)
    got = plans.settings(0)
    assert got["train_batch_size"] == 8 * 2 * 8 // 2  # completions per generation round / generations
    assert (got["actor_micro_batch"], got["rollout_logprob_micro_batch"], got["ref_logprob_micro_batch"]) == (8, 8, 8)
    assert (got["gpu_count"], got["rollout_n"], got["max_model_len"]) == (2, 2, 32768)  # TRL: the model's own
    assert (got["total_training_steps"], got["save_freq"], got["adaptation"]) == (100, 50, "LoRA")
    assert "configuration_level" not in got and got["parameter_offload"] is False
    assert plans.row_flags(0) == [
        TRL_STACK_FLAG,
        "configuration level: none (no measured level of math has these settings): no donor",
    ]
    with_length = read_plans(config, kind="trl", workload="math", source=snapshot,
                             settings={"max_model_len": 1024}).settings(0)  # fmt: skip
    assert with_length["configuration_level"] == "c2"
    # the knobs the memory model reads, with accelerate's meaning (no accelerate config: plain data parallelism)
    knobs = {k: got[k] for k in ("strategy", "gradient_checkpointing", "lora_rank", "rollout_engine", "vllm_mode")}
    assert knobs == {"strategy": "ddp", "gradient_checkpointing": True, "lora_rank": 64, "rollout_engine": "vllm",
                     "vllm_mode": "colocate"}  # fmt: skip
    assert plans.source("gpu_count", 0) == str(config) and plans.source("rollout_tp_size", 0) == str(config)
    assert plans.source("max_model_len", 0).startswith("not set: TRL give vLLM the model's own context length")
    batch = next(m for m in TRL_MAPPING if m.setting == "train_batch_size")
    assert plans.written["train_batch_size"] == batch.written == ", ".join(batch.keys)
    # JSON, as trl grpo --config also takes it, gives the same plans
    as_json = tmp_path / "grpo.json"
    as_json.write_text(json.dumps(TRL_YAML))
    same_plans(plans, read_plans(as_json, kind="trl", workload="math", source=snapshot))


def test_a_grpoconfig_object_is_read_by_its_fields(snapshot: Path) -> None:
    config = FakeGRPOConfig(use_vllm=True, num_generations=2, vllm_mode="server", learning_rate=1e-5, beta=0.04)
    given = {"model_id": "Qwen/Qwen2.5-3B-Instruct", "gpu_count": 2, "max_prompt_length": 512}
    plans = read_plans(config, settings=given, workload="math", source=snapshot)
    got = plans.settings(0)
    assert (got["train_batch_size"], got["max_response_length"], got["max_model_len"]) == (8, 512, 1024)
    flags = plans.row_flags(0)
    assert flags[0] == TRL_STACK_FLAG
    assert "vllm_mode 'server': generation on other GPUs (the measurements colocate it)" in flags
    assert "use_peft not given (measured: True)" in flags and "adaptation" not in got  # an object: not known
    # only the fields that differ from GRPOConfig's defaults are said, once; learning_rate is not memory
    # beta > 0 is read: TRL loads a reference model (with PEFT the base model: no extra weights)
    assert got["reference_model"] is True and not any("not taken into account: beta" in f for f in flags)
    with pytest.raises(Exception, match=r"TRL config: missing TRL setting\(s\) model_name_or_path, num_processes"):
        read_plans(config, source=snapshot)


def test_a_trl_1_16_config_reads_as_trl_grpo_runs_it(snapshot: Path, tmp_path: Path) -> None:
    """What recent TRL takes: no max_prompt_length (given with settings= / --setting), generation_batch_size, and
    GRPOConfig's defaults for what the file leaves out."""
    config = tmp_path / "grpo.yaml"
    minimal = {k: TRL_YAML[k] for k in ("model_name_or_path", "num_processes", "use_peft", "lora_r", "use_vllm")}
    config.write_text(yaml.safe_dump({**minimal, "lora_target_modules": "all-linear"}))
    with pytest.raises(InputError, match=r"max_prompt_length: not set \(this TRL does not cap prompts: .*--setting"):
        read_plans(config, kind="trl", workload="math", source=snapshot)
    got = read_plans(config, kind="trl", workload="math", settings={"max_prompt_length": "512"}, source=snapshot)
    settings = got.settings(0)
    # GRPOConfig 1.16: 8 completions per device, 8 generations, 512-token completions, utilization 0.3, TP 1
    assert (settings["actor_micro_batch"], settings["rollout_n"], settings["max_response_length"]) == (8, 8, 512)
    assert (settings["vllm_gpu_memory_utilization"], settings["rollout_tp_size"]) == (0.3, 1)
    assert settings["free_cache_engine"] is False and settings["train_batch_size"] == 8 * 2 * 1 // 8
    assert settings["max_prompt_length"] == 512 and settings["adaptation"] == "LoRA"
    assert not any(f.startswith("vllm_mode") for f in got.row_flags(0))  # colocate is GRPOConfig's default
    # generation_batch_size: completions per round (TRL derives steps_per_generation from it)
    config.write_text(yaml.safe_dump({**TRL_YAML, "generation_batch_size": 64, "gradient_accumulation_steps": 1}))
    assert read_plans(config, kind="trl", workload="math", source=snapshot).settings(0)["train_batch_size"] == 32
    # without use_peft, trl grpo trains the whole model
    config.write_text(yaml.safe_dump({k: v for k, v in TRL_YAML.items() if k != "use_peft"}))
    full = read_plans(config, kind="trl", workload="math", source=snapshot)
    assert full.settings(0)["adaptation"] == "none"
    assert "use_peft False: full fine-tuning (the measurements train LoRA adapters)" in full.row_flags(0)


def test_an_sft_config_is_refused_by_what_it_is_and_a_grpo_config_with_a_stray_field_is_not(
    snapshot: Path, tmp_path: Path
) -> None:
    config = tmp_path / "sft.yaml"
    config.write_text(yaml.safe_dump({"model_name_or_path": "Qwen/Qwen2.5-3B-Instruct", "num_processes": 2,
                                      "packing": True, "dataset_text_field": "text", "max_length": 4096}))  # fmt: skip
    with pytest.raises(InputError, match=r"an SFTConfig \(dataset_text_field, max_length, packing\), not a GRPOConfig"):
        read_plans(config, kind="trl", workload="math", source=snapshot)
    config.write_text(yaml.safe_dump({**TRL_YAML, "packing": True}))
    flags = read_plans(config, kind="trl", workload="math", source=snapshot).row_flags(0)
    assert any(f.startswith("TRL settings with no counterpart") and "packing" in f for f in flags)


def test_a_trl_python_script_is_read_as_source_never_run(snapshot: Path, tmp_path: Path) -> None:
    """TRL's quickstart shape: GRPOConfig(...) keywords, the trainer's model, a LoraConfig (peft's rank 8 when it
    gives none). A field the advisor reads must be a value; one it does not read may be computed; nothing runs."""
    script = tmp_path / "train.py"
    marker = tmp_path / "ran"
    head = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\nN = 4\n"
    script.write_text(head + (
        "args = GRPOConfig(output_dir=f'{N}-out', per_device_train_batch_size=N, num_generations=N,\n"
        "                  max_completion_length=256, num_processes=2, use_vllm=True)\n"
        "trainer = GRPOTrainer(model='Qwen/Qwen2.5-3B-Instruct', args=args, peft_config=LoraConfig())\n"
    ))  # fmt: skip
    plans = read_plans(script, kind="trl", workload="math", settings={"max_prompt_length": 256}, source=snapshot)
    got = plans.settings(0)
    assert (got["model_id"], got["actor_micro_batch"], got["rollout_n"], got["gpu_count"]) == (
        "Qwen/Qwen2.5-3B-Instruct", 4, 4, 2)  # fmt: skip
    assert (got["adaptation"], got["lora_rank"]) == ("LoRA", 8) and not marker.exists()
    script.write_text(head + "GRPOConfig(per_device_train_batch_size=N * 2)\nGRPOTrainer(model='m')\n")
    with pytest.raises(InputError, match=r"train.py line 4: per_device_train_batch_size is computed when the script"):
        read_plans(script, kind="trl", workload="math", source=snapshot)
    for text, reason in (("x = GRPOConfig()\ny = GRPOConfig()\n", "2 GRPOConfig\\(...\\) calls"),
                         ("print('no config')\n", "no GRPOConfig"),
                         ("def broken(:\n", "not a Python script \\(line 1\\)"),
                         ("x = " + "(" * 5000 + ")" * 5000 + "\n", "not a Python script")):  # fmt: skip
        script.write_text(text)
        with pytest.raises(InputError, match=reason):
            read_plans(script, kind="trl", workload="math", source=snapshot)


def test_row_labels_are_made_when_asked() -> None:
    labels = RowLabels("plans.csv", 100_000)
    assert len(labels) == 100_000 and labels[0] == "plans.csv row 1" and labels[-1] == "plans.csv row 100000"
    assert labels[1:3] == ["plans.csv row 2", "plans.csv row 3"]
    with pytest.raises(IndexError):
        labels[100_000]


def test_docs_print_the_one_mapping_table() -> None:
    """docs/advisor.md shows every row of the module's tables, as the module has it."""
    from rlvrambench_hf.advisor import TRL_SCOPE, VERL_SCOPE

    text = (Path(__file__).resolve().parents[1] / "docs" / "advisor.md").read_text(encoding="utf-8")
    for mapped in (*VERL_MAPPING, *TRL_MAPPING):
        keys = (" × " if mapped.conversion.startswith("product") else ", ").join(f"`{k}`" for k in mapped.keys)
        assert f"| {keys} | `{mapped.setting}` | {mapped.conversion} |" in text, mapped
    for scope in (*VERL_SCOPE, *TRL_SCOPE):
        assert f"| `{scope.key}` | {', '.join(map(str, scope.measured))} |" in text, scope


def test_a_launch_with_its_own_config_name_reads_that_yaml_under_the_overrides(
    snapshot: Path, tmp_path: Path, configurations: list[dict]
) -> None:
    overrides = verl_overrides(row_of(configurations, MEASURED))
    data = [o for o in overrides if o.startswith("data.")]
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "my_grpo.yaml").write_text(
        yaml.safe_dump({"defaults": ["ppo_trainer", "_self_"], **nested(data + ["data.train_batch_size=999"])})
    )
    rest = [o for o in overrides if not o.startswith("data.")] + ["data.train_batch_size=32"]
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo --config-path=conf --config-name=my_grpo " + " ".join(rest))
    from_base = read_plans(script, workload="gsm8k", source=snapshot)
    script.write_text("python3 -m verl.trainer.main_ppo " + " ".join(overrides))
    same_plans(from_base, read_plans(script, workload="gsm8k", source=snapshot))
    script.write_text("python3 -m verl.trainer.main_ppo --config-name=elsewhere " + " ".join(rest))
    refused = r"run.sh line 1: --config-name 'elsewhere': no elsewhere.yaml under VERL's trainer module \(VERL is not "
    with pytest.raises(Exception, match=refused + r"installed here\) nor under '.*config'"):
        read_plans(script, workload="gsm8k", source=snapshot)


# --- launch files as they exist: Hydra's config names, TRL with accelerate, models as users name them (issue 25) ---

CORPUS = Path(__file__).parent / "advisor_corpus"


def test_a_packaged_config_name_is_found_beside_verls_trainer_module(
    snapshot: Path, tmp_path: Path, packaged_verl: Path, monkeypatch
) -> None:
    """``--config-path=config --config-name=ppo_megatron_trainer.yaml`` as Hydra resolves it: from VERL's trainer
    module, whose composed Megatron config then gives the defaults; the run is read as a Megatron one."""
    monkeypatch.syspath_prepend(str(packaged_verl))
    script = tmp_path / "run_megatron.sh"  # no config/ folder beside it
    script.write_text((CORPUS / "verl" / "grpo_megatron_qwen2_5_7b.sh").read_text())
    plans = read_plans(script, kind="verl", workload="gsm8k", source=snapshot)
    got = plans.settings(0)
    assert got["strategy"] == "megatron" and got["parameter_offload"] is False
    assert plans.source("vllm_gpu_memory_utilization", 0) == f"{script} line 23"
    assert (
        plans.source("max_num_seqs", 0)
        == "VERL 0.9.1's default (verl/trainer/config/_generated_ppo_megatron_trainer.yaml)"
    )
    assert "actor strategy 'megatron' (the measurements train with FSDP)" in plans.row_flags(0)


def _trl(name: str, snapshot: Path, accelerate: str | None = None, **settings: object) -> Plans:
    config = CORPUS / "trl" / name
    launcher = CORPUS / "accelerate" / accelerate if accelerate else None
    return read_plans(config, kind="trl", workload="gsm8k", source=snapshot, accelerate_config=launcher,
                      settings=settings or None)  # fmt: skip


def test_trl_runs_as_accelerate_launches_them(snapshot: Path, tmp_path: Path) -> None:
    # open-r1 keeps the processes in the accelerate config; its num_processes is the total over all machines
    zero2 = _trl("openr1_qwen2_5_1_5b_grpo_zero2.yaml", snapshot, "zero2.yaml").settings(0)
    assert (zero2["gpu_count"], zero2["strategy"], zero2["zero_stage"], zero2["lora_rank"]) == (8, "deepspeed", 2, 0)
    four = _trl("grpo_multinode_zero3.yaml", snapshot, "zero3_four_nodes.yaml")
    assert (four.settings(0)["gpu_count"], four.settings(0)["nnodes"]) == (32, 4)
    assert four.source("gpu_count", 0) == f"the accelerate config {CORPUS / 'accelerate' / 'zero3_four_nodes.yaml'}"
    # save_steps below 1 is a ratio of the run's steps, as transformers takes it
    ratio = _trl("grpo_save_ratio.yaml", snapshot, "ddp.yaml")
    assert ratio.settings(0)["save_freq"] == 20 and ratio.settings(0)["strategy"] == "ddp"
    # vLLM's server mode, no vLLM, a 4-bit base: facts for the memory model, flags that agree with each other
    server = _trl("openr1_qwen2_5_math_7b_grpo_zero3_server.yaml", snapshot, "zero3.yaml")
    assert (server.settings(0)["vllm_mode"], server.settings(0)["optimizer_offload"]) == ("server", True)
    plain = _trl("grpo_without_vllm.yaml", snapshot, "ddp.yaml")
    assert plain.settings(0)["rollout_engine"] == "hf" and "vllm_mode" not in plain.settings(0)
    assert not any("vllm_max_model_length" in f or "vllm_mode" in f for f in plain.row_flags(0))
    quantized = _trl("grpo_qlora_4bit.yaml", snapshot, gpu_count=1).settings(0)
    assert (quantized["base_quant_bits"], quantized["lora_rank"], quantized["adaptation"]) == (4, 16, "LoRA")
    full = _trl("grpo_fsdp2_qwen2_5_3b.yaml", snapshot, "fsdp.yaml")
    assert full.settings(0)["strategy"] == "fsdp2"
    assert not any(f.startswith(("LoRA rank", "LoRA target")) for f in full.row_flags(0))  # no PEFT: no rank flag
    # the processes given twice must agree
    clash = tmp_path / "clash.yaml"
    clash.write_text((CORPUS / "trl" / "grpo_peft_lora_ddp.yaml").read_text() + "num_processes: 4\n")
    with pytest.raises(Exception, match=r"clash.yaml: num_processes = 4 but the accelerate config .*ddp.yaml gives 2"):
        read_plans(clash, kind="trl", workload="gsm8k", source=snapshot,
                   accelerate_config=CORPUS / "accelerate" / "ddp.yaml")  # fmt: skip
    with pytest.raises(Exception, match=r"an accelerate config goes with a TRL run"):
        read_plans(CORPUS / "verl" / "grpo_dumped_config.yaml", accelerate_config=CORPUS / "accelerate" / "ddp.yaml",
                   source=snapshot)  # fmt: skip


def _release_configs(snapshot: Path) -> dict[str, dict]:
    """config.json of each model the release has metadata for, written from the release's own numbers and the
    architecture each model's card names (model_type)."""
    metadata = json.loads((snapshot / "benchmark" / "estimation" / "model_metadata.json").read_text())
    types = {"Qwen": "qwen2", "microsoft": "phi3", "ibm-granite": "granite"}
    configs = {}
    for model, meta in metadata.items():
        configs[model] = {
            "model_type": types[model.split("/")[0]],
            "torch_dtype": "bfloat16",
            **{k: meta[k] for k in ("hidden_size", "intermediate_size", "num_attention_heads", "num_hidden_layers",
                                    "vocab_size", "num_key_value_heads", "head_dim", "tie_word_embeddings")},
        }  # fmt: skip
    return configs


def test_sizes_from_config_json_match_the_releases_model_metadata(snapshot: Path) -> None:
    from rlvrambench_hf.advisor.read.models import architecture_metadata

    metadata = json.loads((snapshot / "benchmark" / "estimation" / "model_metadata.json").read_text())
    counts = ("floating_checkpoint_elements", "floating_checkpoint_bytes", "all_linear_layer_adapter_elements",
              "largest_transformer_layer_elements", "non_transformer_layer_elements",
              "largest_weight_tensor_elements", "tensor_count")  # fmt: skip
    configs = _release_configs(snapshot)
    assert len(configs) == 4
    for model, config in configs.items():
        derived = architecture_metadata(model, config)
        assert {k: derived[k] for k in counts} == {k: metadata[model][k] for k in counts}, model
    qwen3b = architecture_metadata("Qwen/Qwen2.5-3B-Instruct", configs["Qwen/Qwen2.5-3B-Instruct"])
    assert qwen3b["kv_cache_bytes_per_token"] == 2 * 36 * 2 * 128 * 2  # keys and values, 36 layers, 2 KV heads, bf16


def test_a_local_folder_is_read_for_its_config_and_safetensors_headers(snapshot: Path, tmp_path: Path) -> None:
    from rlvrambench_hf.advisor.read.models import local_model_metadata

    folder = tmp_path / "Qwen2.5-3B-local"
    folder.mkdir()
    config = _release_configs(snapshot)["Qwen/Qwen2.5-3B-Instruct"]
    (folder / "config.json").write_text(json.dumps(config))
    only_config = local_model_metadata(folder)
    assert only_config["floating_checkpoint_elements"] == 3085938688 and "derived_from" in only_config
    tensors = {"model.embed_tokens.weight": {"dtype": "BF16", "shape": [151936, 2048], "data_offsets": [0, 0]}}
    for i in range(2):
        for name, shape in (("self_attn.q_proj", [2048, 2048]), ("mlp.down_proj", [2048, 11008])):
            tensors[f"model.layers.{i}.{name}.weight"] = {"dtype": "BF16", "shape": shape, "data_offsets": [0, 0]}
    header = json.dumps(tensors).encode()
    (folder / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header)
    from_headers = local_model_metadata(folder)
    assert from_headers["tensor_count"] == 5 and "derived_from" not in from_headers
    assert from_headers["largest_transformer_layer_elements"] == 2048 * 2048 + 2048 * 11008


def test_a_local_folder_with_only_config_json_gets_floors_and_a_model_answer(snapshot: Path, tmp_path: Path) -> None:
    from rlvrambench_hf.advisor.assess.context import load_context

    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(_release_configs(snapshot)["Qwen/Qwen2.5-7B-Instruct"]))
    tree = yaml.safe_load((CORPUS / "verl" / "grpo_dumped_config.yaml").read_text())
    tree["actor_rollout_ref"]["model"]["path"] = str(folder)
    plans = read_plans(tree, workload="gsm8k", source=snapshot)
    assert plans.settings(0)["model_id"] == str(folder)
    answer = document(advisor.advise(plans, snapshot, context=load_context(snapshot)))["configurations"][0]
    floors = {f["check"]: f for f in answer["floors"]}
    assert all("no model metadata" not in str(f) for f in floors.values())
    assert floors["generation_weights"]["holds"] is not None  # checked with the sizes config.json gives
    phases = {p["phase"]: p for p in answer["phases"]}  # and the per-phase model's answer, from the same sizes
    assert set(phases) == {"initializing", "rollout", "reference_logprob", "actor_update", "weight_sync"}
    assert answer["predicted_peak_mib"] == max(p["peak_mib"] for p in phases.values())


def test_offline_a_measured_model_without_metadata_gets_its_measured_records(
    snapshot: Path, configurations: list[dict], monkeypatch
) -> None:
    """Qwen2.5-1.5B-Instruct, measured in 13 configurations but absent from the release's model metadata: offline,
    a plan with a measured configuration's settings is answered by those records."""
    from huggingface_hub import constants

    from rlvrambench_hf.advisor.assess.context import load_context
    from rlvrambench_hf.advisor.read.measured import load_measured

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    rows = [r for r in configurations if r["model_id"] == "Qwen/Qwen2.5-1.5B-Instruct"]
    assert len(rows) == 13
    assert load_measured(snapshot).families["Qwen/Qwen2.5-1.5B-Instruct"] == "qwen25_1p5b"  # the release's own family
    settings = rows[0]
    words = [w for w in verl_overrides(settings) if not w.startswith("actor_rollout_ref.model.path=")]
    words += ["actor_rollout_ref.model.path=/models/Qwen2.5-1.5B-Instruct",
              f"actor_rollout_ref.actor.ppo_mini_batch_size={settings['train_batch_size']}"]  # fmt: skip
    line = "python3 -m verl.trainer.main_ppo " + " ".join(words)
    plans = read_plans(line, kind="verl", workload=settings["workload_id"], source=snapshot)
    assert plans.settings(0)["model_id"] == "Qwen/Qwen2.5-1.5B-Instruct"
    answer = document(advisor.advise(plans, snapshot, context=load_context(snapshot)))["configurations"][0]
    assert answer["verdict"]["basis"] == "measured" and answer["measured"]


# --- TRL scripts read as Python runs them; launchers; the command line (issues 36 and 38) ---

_FIELDS = (
    "model_name_or_path='Qwen/Qwen2.5-3B-Instruct', num_processes=2, use_vllm=True, vllm_gpu_memory_utilization=0.6, "
    "max_prompt_length=512, max_completion_length=512, per_device_train_batch_size=8"
)


@pytest.mark.parametrize(
    ("source", "generations"),
    [
        (
            f"# -*- coding: utf-7 -*-\nargs = GRPOConfig({_FIELDS}, num_generations=2)\n"
            "#+AAo-args.num_generations = 4\n",
            4,
        ),
        (f"args = GRPOConfig({_FIELDS}, num_generations=2)\nargs.num_generations = 4\n", 4),
        (f"args = GRPOConfig(**{{'num_generations': 4}}, {_FIELDS})\n", 4),
        (f"extra = dict(num_generations=4)\nargs = GRPOConfig({_FIELDS}, num_generations=2)\n", 2),
    ],  # fmt: skip
)
def test_a_trl_script_reads_as_python_runs_it(source: str, generations: int, snapshot: Path, tmp_path: Path) -> None:
    """The encoding cookie Python honours, a field set after the config is built, ``**`` of a dict literal."""
    script = tmp_path / "train.py"
    script.write_text(source)
    assert read_plans(script, kind="trl", workload="math", source=snapshot).settings(0)["rollout_n"] == generations


def test_what_a_trl_script_computes_is_refused_with_its_line(snapshot: Path, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    for source, error in (
        (f"import json\nkw = json.load(open('x'))\nargs = GRPOConfig(**kw, {_FIELDS})\n",
         r"train.py line 3: GRPOConfig\(\*\*...\) takes its fields from a value computed when the script runs"),
        (f"import os\nargs = GRPOConfig({_FIELDS}, num_generations=2)\nif os.environ.get('BIG'):\n"
         "    args.num_generations = 16\n", r"train.py line 4: num_generations is computed when the script runs"),
        (f"args = GRPOConfig({_FIELDS}, num_generations={'9' * 5000})\n", r"train.py line 1: an integer of more than"),
        ("from trl import TrlParser, GRPOConfig, ModelConfig\nparser = TrlParser((GRPOConfig, ModelConfig))\n"
         "args, model_args = parser.parse_args_and_config()\n"
         "GRPOTrainer(model=model_args.model_name_or_path, args=args)\n",
         r"line 3: the GRPOConfig comes from the command line \(TrlParser\): give its arguments after --"),
    ):  # fmt: skip
        script.write_text(source)
        with pytest.raises(InputError, match=error):
            read_plans(script, kind="trl", workload="math", source=snapshot)
    # a TrlParser script with its arguments: --config recipe.yaml, then --field value over it
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump({**TRL_YAML, "num_generations": 2}))
    plans = read_plans(script, kind="trl", workload="math", source=snapshot,
                       arguments=["--config", "recipe.yaml", "--num_generations", "4", "--use_peft"])  # fmt: skip
    assert (plans.settings(0)["rollout_n"], plans.settings(0)["adaptation"]) == (4, "LoRA")


def test_trl_reads_values_as_its_parser_converts_them_and_refuses_machines_below_one(
    snapshot: Path, tmp_path: Path
) -> None:
    config = tmp_path / "grpo.yaml"
    config.write_text(yaml.safe_dump({**TRL_YAML, "max_completion_length": "512"}))
    plans = read_plans(config, kind="trl", workload="math", source=snapshot)
    assert plans.settings(0)["max_response_length"] == 512
    assert "'512' read as 512" in plans.source("max_response_length", 0)
    for machines in (0, -1):
        config.write_text(yaml.safe_dump({**TRL_YAML, "num_machines": machines}))
        with pytest.raises(InputError, match=r"num_machines: -?[01] is not a positive count"):
            read_plans(config, kind="trl", workload="math", source=snapshot)
        accelerate = tmp_path / "acc.yaml"
        accelerate.write_text(yaml.safe_dump({"distributed_type": "MULTI_GPU", "num_processes": 2,
                                              "num_machines": machines}))  # fmt: skip
        with pytest.raises(InputError, match=r"num_machines .* is not a count of machines"):
            read_plans(CORPUS / "trl" / "grpo_peft_lora_ddp.yaml", kind="trl", workload="math", source=snapshot,
                       accelerate_config=accelerate)  # fmt: skip


def test_an_accelerate_launcher_is_a_trl_run_its_options_over_its_config(snapshot: Path, tmp_path: Path) -> None:
    (tmp_path / "grpo.yaml").write_text(yaml.safe_dump(TRL_YAML))
    (tmp_path / "ds.yaml").write_text((CORPUS / "accelerate" / "zero2.yaml").read_text())
    launcher = tmp_path / "train.sh"
    launcher.write_text("GPUS=${GPUS:-4}\naccelerate launch --config_file ds.yaml --num_processes $GPUS train.py "
                        "--config grpo.yaml --max_steps 10\n")  # fmt: skip
    plans = read_plans(launcher, kind="trl", workload="math", source=snapshot)
    got = plans.settings(0)
    assert (got["gpu_count"], got["strategy"], got["zero_stage"], got["total_training_steps"]) == (
        4, "deepspeed", 2, 10)  # fmt: skip
    assert plans.source("gpu_count", 0) == f"{launcher} line 2 (accelerate launch)"
    launcher.write_text("accelerate launch train.py --config grpo.yaml --num_processes 2\n")
    assert read_plans(launcher, kind="trl", workload="math", source=snapshot).settings(0)["gpu_count"] == 2


def test_the_command_line_takes_the_scripts_arguments_and_the_verl_version(snapshot: Path, tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text((CORPUS / "verl" / "args_while_case_qwen2_5_3b.sh").read_text())
    with_args = run_cli("--source", str(snapshot), "advise", "--verl", str(script), "--workload", "gsm8k", "--details",
                        "--", "--gpus", "4", env=_env())  # fmt: skip
    assert with_args.returncode == 0, with_args.stderr
    assert f"read: {script} run with the arguments --gpus 4 (read from line 17)" in with_args.stdout
    assert "trainer.n_gpus_per_node × trainer.nnodes -> gpu_count" not in with_args.stdout  # from the script's line
    fork = run_cli("--source", str(snapshot), "advise", "--verl", str(CORPUS / "verl" / "fork_older_verl_tinyzero_style"
                   ".sh"), "--workload", "gsm8k", "--verl-version", "0.4.1", env=_env())  # fmt: skip
    assert fork.returncode == 2 and "VERL refuses this config before running" in fork.stderr
    stray = run_cli("--source", str(snapshot), "advise", "--planned", str(script), "--", "x", env=_env())
    assert stray.returncode == 2 and "a script's arguments (after --) go with --verl or --trl" in stray.stderr


def test_a_safetensors_header_that_lies_is_one_line(tmp_path: Path) -> None:
    """Negative, text or missing dimensions are no tensor's (issue 38): refused, naming the file and the tensor."""
    import struct

    from rlvrambench_hf.advisor.read.models import local_model_metadata

    (tmp_path / "config.json").write_text(json.dumps(_release_configs_of_one()))
    for shape in ([-5, 4], ["1", 2], None):
        header = json.dumps({"model.embed": {"dtype": "BF16", "shape": shape, "data_offsets": [0, 0]}}).encode()
        (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
        with pytest.raises(InputError, match=r"model.safetensors: tensor 'model.embed' has no shape of dimensions"):
            local_model_metadata(tmp_path)


def _release_configs_of_one() -> dict:
    return {"model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 1000,
            "torch_dtype": "bfloat16"}  # fmt: skip


WORKLOAD_SCRIPT = """#!/usr/bin/env bash
python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo \\
    data.train_files={train} {val} \\
    data.train_batch_size=32 data.max_prompt_length=1024 data.max_response_length=2048 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct actor_rollout_ref.model.lora_rank=64 \\
    actor_rollout_ref.model.target_modules=all-linear actor_rollout_ref.actor.use_kl_loss=True \\
    actor_rollout_ref.actor.ppo_mini_batch_size=16 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \\
    actor_rollout_ref.actor.fsdp_config.param_offload=False \\
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=False \\
    actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.tensor_model_parallel_size=1 \\
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 actor_rollout_ref.rollout.n=2 \\
    actor_rollout_ref.rollout.max_model_len=3072 actor_rollout_ref.rollout.max_num_seqs=64 \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \\
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \\
    trainer.n_gpus_per_node=2 trainer.nnodes=1
"""


@pytest.mark.parametrize(
    ("train", "val", "workload", "said"),
    [
        ("$HOME/data/gsm8k/train.parquet", "", "gsm8k", "workload gsm8k: data.train_files names it (run.sh line 3"),
        ("/data/MATH-lighteval/train.parquet", "", "math", "workload math: data.train_files names it"),
        ("data/code_heavy_tail/train.parquet", "", "longer_prompt_code", "workload longer_prompt_code:"),  # legacy id
        ("$UNSET_ROOT/gsm8k_train.parquet", "", "gsm8k", "workload gsm8k:"),  # the part the script writes names it
        ("data/mine/train.parquet", "data.val_files=data/gsm8k/test.parquet", "gsm8k", "data.val_files names it"),
        (
            "\"['$HOME/data/gsm8k/train.parquet', '$HOME/data/math/train.parquet']\"",
            "",
            None,
            "workload not inferred: data.train_files (run.sh line 3, from the environment: $HOME, $HOME) names gsm8k "
            "and math; name the one",
        ),
        ("data/deepmath/train.parquet", "", None, "data.train_files (run.sh line 3) names no workload the release"),
    ],
)
def test_the_workload_is_the_one_the_data_files_name(snapshot, tmp_path, monkeypatch, train, val, workload, said):
    monkeypatch.delenv("UNSET_ROOT", raising=False)
    script = tmp_path / "run.sh"
    script.write_text(WORKLOAD_SCRIPT.format(train=train, val=val))
    monkeypatch.chdir(tmp_path)
    plans = read_plans("run.sh", kind="verl", source=snapshot)
    assert plans.settings(0).get("workload_id") == workload
    notes = plans.row_notes(0)
    (line,) = [n for n in notes if n.startswith("workload ")]
    assert said in line, line
    assert not any("data.train_files" in n for n in notes if n.startswith("not used by the answer")), notes
    flags = plans.row_flags(0)
    assert any(f.startswith("workload not given") for f in flags) == (workload is None)
    if workload is None:  # the measured workloads are listed, and the plan is still answered
        assert "--workload (code_standard, gsm8k, longer_prompt_code, math)" in line
        assert advisor.advise(plans, snapshot).answer(0).verdict.state == "within_margin"  # any workload's record
    else:
        assert plans.source("workload_id", 0).startswith(("data.train_files (run.sh line 3", "data.val_files"))
    if train == "$HOME/data/gsm8k/train.parquet":  # measured: the release's level c2 of gsm8k, from its data files
        assert plans.settings(0)["configuration_level"] == "c2"
        assert advisor.advise(plans, snapshot).answer(0).verdict.basis == "measured"
        given = read_plans("run.sh", kind="verl", workload="math", source=snapshot)  # --workload wins, unasked
        assert given.settings(0)["workload_id"] == "math" and not any(
            n.startswith("workload ") for n in given.row_notes(0)
        )


def test_trl_names_its_workload_by_its_dataset(snapshot: Path) -> None:
    trl, accelerate = CORPUS / "trl", CORPUS / "accelerate"
    cases = {  # file: its accelerate config or GPU count, the workload, what its read: line says
        "grpo_peft_lora_ddp.yaml": ("ddp.yaml", "gsm8k", "workload gsm8k: dataset_name names it"),  # openai/gsm8k
        "openr1_qwen2_5_math_7b_grpo_zero3_server.yaml": ("zero3.yaml", "math", "workload math:"),  # MATH-lighteval
        "grpo_qlora_4bit.yaml": (1, None, "dataset_name ("),  # trl-lib/DeepMath-103K names none
        "train_grpo_dataflow.py": (2, "gsm8k", "workload gsm8k: dataset_name names it"),  # load_dataset("openai/gsm8k")
    }
    for name, (launched, workload, said) in cases.items():
        settings: dict[str, object] = {"max_prompt_length": 512}
        options = {}
        if isinstance(launched, str):
            options["accelerate_config"] = accelerate / launched
        else:
            settings["gpu_count"] = launched
        plans = read_plans(trl / name, kind="trl", settings=settings, source=snapshot, **options)
        assert plans.settings(0).get("workload_id") == workload, name
        assert any(said in n for n in plans.row_notes(0) if n.startswith("workload ")), (name, plans.row_notes(0))
