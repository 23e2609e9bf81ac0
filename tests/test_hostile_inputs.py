"""The hostile-input harness: every command and option that reads a user's file or code, against a corpus that the
tests generate (nothing is stored): malformed, truncated, oversized, wrongly encoded, non-regular, non-finite,
out-of-range, invisible-character and adversarial-object inputs.

The table is ``TARGETS`` (command x option) x ``CORPUS[kind]`` (the inputs of the kind of thing the option reads).
For each pair the command runs as the console script does (``rlvrambench_hf.cli.main``, file descriptors 0-2
redirected; one interpreter per target, see ``hostile_driver.py``) and must: exit with 0 or 2 (130 for an interrupt)
as the input's expectation says; on failure print exactly one line on stderr, printable and within the bound, with
no traceback, and leave no output file (nor a temporary one); leave every input unchanged and no process of user
code running. Every target that writes also meets ``OUTPUT_INPUTS`` (its outputs where nothing can be written), and
the commands that read no user file but write (``metric space``, ``release build``, ``export``, ``report``) meet
them as targets of the kind ``nothing``.

To add an option: append a ``Target`` whose ``argv`` has ``{IN}`` where the input goes (``{OUT}``: an output JSON
file, ``{CSV}``: an output CSV file, ``{DIR}``: an output folder, ``{S}``: the release snapshot) and whose ``kind``
names a corpus; every input of that corpus then runs against it. A kind that reads a file has a valid file in
``BASES`` (with its format: the ``FILE_INPUTS`` of that format apply) and may have its own inputs in ``OWN_INPUTS``.
To add an input: add an ``Input`` to ``FILE_INPUTS`` (every file kind of its formats) or to a kind's own list.
Known failures of code owned elsewhere are listed in ``KNOWN`` (xfail, not strict).

The commands run with ``HF_HUB_OFFLINE=1`` and ``HF_ENDPOINT`` on a closed port: none may reach a network.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from rlvrambench_hf.errors import MESSAGE_LIMIT

from conftest import SNAPSHOT, cli_env
from hostile_corpus import (
    ACCELERATE_INPUTS,
    CODE_INPUTS,
    FILE_INPUTS,
    FORGED,
    HARNESS_SECRET,
    LOG_INPUTS,
    LOG_SECRETS,
    MODEL_INPUTS,
    OUTPUT_INPUTS,
    PLANNED_INPUTS,
    PREDICTIONS_INPUTS,
    PWNED,
    RELEASE_INPUTS,
    SCORE_INPUTS,
    SCRIPT_INPUTS,
    SECRETS,
    SOURCE_INPUTS,
    TEXT_INPUTS,
    TRL_INPUTS,
    VERL_YAML_INPUTS,
    Input,
    unmount_all,
)
from hubserver import REPO_ROOT

#: The longest error line: the command's prefix and the bounded message.
LINE_BOUND = len("rlvrambench: internal error: ") + MESSAGE_LIMIT
DRIVER = Path(__file__).with_name("hostile_driver.py")


@dataclass(frozen=True)
class Target:
    name: str
    argv: tuple[str, ...]
    kind: str
    cheap: bool = True  # False: a success runs the whole, slow command, so only inputs that must fail run
    success: tuple[int, ...] = (0,)  # the exit statuses of a success (release diff: 1 when the releases differ)
    sample: frozenset[str] | None = None  # the loader's own inputs this target meets (None: all; see SAMPLED)


#: The policy inputs that a second command loading policies through the same loader as ``replay --policy``
#: (``admission.replay_report``) meets: one of each way user code fails (raises, crashes, runs past the limit,
#: answers too much, fails at import, is named badly); every input of the containment class ("contained: ...") and
#: every output input run on every target regardless. ``replay --policy`` meets the whole corpus.
POLICY_SAMPLE = frozenset(
    {
        "initial_decisions raises",
        "raises KeyboardInterrupt",
        "crashes (SIGSEGV)",
        "sleeps past the limit",
        "returns 100 MB of text",
        "returns a list",
        "raises 50 MB with line breaks",
        "import raises",
        "allocates 8 GiB",
        "spec 'usercode.py'",
        "a name with an escape sequence",
    }
)


#: The release inputs whose damaged file ``release diff`` does not read (release verify, push and publish-mirror do).
NOT_READ_BY_DIFF = frozenset(
    {"a built release whose croissant.json is a FIFO", "a built release whose Parquet file is a FIFO"}
)

TARGETS = [
    Target("evaluate --predictions", ("evaluate", "--predictions", "{IN}", "--output", "{OUT}"), "predictions"),
    Target(
        "followup score --predictions",
        ("followup", "score", "--study", "larger_model", "--predictions", "{IN}", "--output", "{OUT}"),
        "followup",
    ),
    Target("report --predictions", ("report", "--predictions", "{IN}", "--output", "{DIR}"), "predictions", False),
    Target(
        "report --followup-predictions",
        ("report", "--followup-predictions", "larger_model={IN}", "--output", "{DIR}"),
        "followup",
        False,
    ),
    Target("replay --attempts", ("replay", "--attempts", "{IN}", "--output", "{OUT}"), "attempts"),
    Target("replay --protocol", ("replay", "--protocol", "{IN}", "--output", "{OUT}"), "protocol"),
    Target(
        "inputs --admission --format upstream --protocol",
        ("inputs", "--admission", "--format", "upstream", "--protocol", "{IN}", "--output", "{OUT}"),
        "protocol",
    ),
    Target("replay --budgets", ("replay", "--budgets", "{IN}", "--output", "{OUT}"), "budgets"),
    Target("replay --policy", ("replay", "--policy", "{IN}", "--timeout", "2", "--output", "{OUT}"), "policy"),
    Target(
        "plot admission --policy",
        ("plot", "admission", "--policy", "{IN}", "--timeout", "2", "--output", "{OUT}"),
        "policy",
        False,
        sample=POLICY_SAMPLE,
    ),
    Target(
        "report --policy",
        ("report", "--policy", "{IN}", "--timeout", "2", "--output", "{DIR}"),
        "policy",
        False,
        sample=POLICY_SAMPLE,
    ),
    Target(
        "estimate compare --estimator",
        ("estimate", "compare", "--estimator", "{IN}", "--timeout", "2", "--output", "{OUT}"),
        "estimator",
    ),
    Target("estimate advise --planned", ("estimate", "advise", "--planned", "{IN}", "--output", "{OUT}"), "planned"),
    Target("--source FOLDER", ("show", "transfer_queries"), "source"),
    Target("release verify FOLDER", ("release", "verify", "{IN}", "--no-croissant"), "release"),
    Target(
        "estimate advise --verl SCRIPT",
        ("estimate", "advise", "--verl", "{IN}", "--workload", "gsm8k", "--output", "{OUT}"),
        "verl script",
    ),
    Target("estimate advise --verl YAML", ("estimate", "advise", "--verl", "{IN}"), "verl yaml"),
    Target("estimate advise --trl", ("estimate", "advise", "--trl", "{IN}", "--workload", "math"), "trl"),
    Target("advise --log", ("advise", "--log", "{IN}"), "log"),
    # issue 38, item 2: a local model folder as the launch script's model path (config.json, safetensors headers)
    Target(
        "advise --verl SCRIPT with a local model folder", ("advise", "--verl", "{IN}", "--workload", "gsm8k"), "model"
    ),
    Target(
        "advise --trl --accelerate-config",
        ("advise", "--trl", "{TRL}", "--workload", "math", "--accelerate-config", "{IN}"),
        "accelerate",
    ),
    Target("compare A", ("compare", "{IN}", "rule:always_approve", "--output", "{OUT}"), "predictions"),
    Target("compare B", ("compare", "rule:source_label", "{IN}", "--output", "{OUT}"), "predictions"),
    Target("leaderboard PATH", ("leaderboard", "{IN}", "--output", "{CSV}"), "scores"),
    Target(
        "results export SCORES", ("results", "export", "{IN}", "--repo-id", "me/model", "--output", "{DIR}"), "scores"
    ),
    Target("report --planned", ("report", "--planned", "{IN}", "--output", "{DIR}"), "planned", False),
    Target(  # diff reads the registry's tables of each side, never a built release's Parquet copies or Croissant
        "release diff OLD NEW",
        ("release", "diff", "{S}", "{IN}"),
        "release",
        success=(0, 1),
        sample=frozenset(i.name for i in RELEASE_INPUTS) - NOT_READ_BY_DIFF,
    ),
    Target(  # reads every table of the damaged copy
        "release diff OLD DAMAGED", ("release", "diff", "{S}", "{IN}"), "release copy", success=(0, 1)
    ),
    Target("release push FOLDER", ("release", "push", "{IN}", "--repo-id", "me/data"), "release"),
    Target(
        "release publish-mirror FOLDER",
        ("release", "publish-mirror", "{IN}", "--mirror", "{DIR}", "--tag", "v9.9.9"),
        "release",
    ),
    Target("metric space --output", ("metric", "space", "--output", "{DIR}"), "nothing"),
    Target("release build --output", ("release", "build", "--version", "9.9.9", "--output", "{DIR}"), "nothing"),
    Target("export --output", ("export", "transfer_queries", "--format", "csv", "--output", "{CSV}"), "nothing"),
    Target("report --output", ("report", "--output", "{DIR}"), "nothing"),
]
OUTPUTS = ("{OUT}", "{CSV}", "{DIR}")


def predictions_base(work: Path) -> tuple[bytes, str]:
    from rlvrambench_hf.transfer import load_transfer_tables, reference_predictions

    tables = load_transfer_tables(SNAPSHOT)
    table = reference_predictions(tables["queries"], tables["outcomes"], "source_label")
    rows = zip(table.column("query_id").to_pylist(), table.column("predicted_state").to_pylist())
    return ("query_id,predicted_state\n" + "".join(f"{q},{s}\n" for q, s in rows)).encode(), ".csv"


def followup_base(work: Path) -> tuple[bytes, str]:
    from rlvrambench_hf.followup import study_rows

    rows = study_rows("larger_model", SNAPSHOT)
    lines = "".join(f"{r['configuration_id']},memory_failure,\n" for r in rows)
    return ("configuration_id,predicted_state,predicted_peak_mib\n" + lines).encode(), ".csv"


def attempts_base(work: Path) -> tuple[bytes, str]:
    return (SNAPSHOT / "benchmark/decision/results/attempts.json").read_bytes(), ".json"


def protocol_base(work: Path) -> tuple[bytes, str]:
    return (SNAPSHOT / "benchmark/decision/protocol.json").read_bytes(), ".json"


def planned_base(work: Path) -> tuple[bytes, str]:
    from rlvrambench_hf.advisor.read.reader import REQUIRED
    from rlvrambench_hf.data.tables.reader import load_table

    row = load_table("estimation_targets", SNAPSHOT, decode=True).to_pylist()[0]
    settings = {k: v for k, v in row.items() if k in (*REQUIRED, "workload_id")}
    return yaml.safe_dump(settings, sort_keys=False).encode(), ".yaml"


#: A VERL launch script as docs/advisor.md shows it: a model path and a GPU count from the script's own assignments
#: (line 2, which the line edits of FILE_INPUTS change, is one), a setting it computes when it runs and no advisor
#: setting reads ($(date)).
VERL_SCRIPT = """#!/usr/bin/env bash
MODEL_PATH=$HOME/models/Qwen2.5-3B-Instruct
set -x
GPUS=${GPUS:-2}
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=32 data.max_prompt_length=1024 data.max_response_length=2048 \\
    actor_rollout_ref.model.path="$MODEL_PATH" \\
    actor_rollout_ref.model.lora_rank=64 actor_rollout_ref.model.target_modules=all-linear \\
    actor_rollout_ref.actor.strategy=fsdp actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \\
    actor_rollout_ref.actor.fsdp_config.param_offload=False \\
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=False \\
    actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.tensor_model_parallel_size=1 \\
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 actor_rollout_ref.rollout.n=2 \\
    actor_rollout_ref.rollout.max_num_seqs=64 actor_rollout_ref.rollout.free_cache_engine=True \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \\
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \\
    actor_rollout_ref.hybrid_engine=True \\
    trainer.n_gpus_per_node=$GPUS trainer.nnodes=1 trainer.total_training_steps=100 \\
    trainer.experiment_name="grpo-$(date +%s)"
"""


def verl_script_base(work: Path) -> tuple[bytes, str]:
    return VERL_SCRIPT.encode(), ".sh"


def verl_yaml_base(work: Path) -> tuple[bytes, str]:
    """The same run as a VERL config (docs/advisor.md), ``data`` first: line 2 holds a setting the advisor reads."""
    config = {
        "data": {"train_batch_size": 32, "max_prompt_length": 1024, "max_response_length": 2048},
        "actor_rollout_ref": {
            "hybrid_engine": True,
            "model": {"path": "Qwen/Qwen2.5-3B-Instruct", "lora_rank": 64, "target_modules": "all-linear"},
            "actor": {
                "strategy": "fsdp",
                "ppo_micro_batch_size_per_gpu": 8,
                "fsdp_config": {"param_offload": False, "optimizer_offload": False},
            },
            "rollout": {
                "name": "vllm",
                "tensor_model_parallel_size": 1,
                "gpu_memory_utilization": 0.6,
                "n": 2,
                "max_num_seqs": 64,
                "free_cache_engine": True,
                "max_model_len": None,
                "log_prob_micro_batch_size_per_gpu": 4,
            },
            "ref": {"log_prob_micro_batch_size_per_gpu": 4},
        },
        "trainer": {"n_gpus_per_node": 2, "nnodes": 1, "total_training_steps": 100},
        "algorithm": {"adv_estimator": "grpo"},
    }
    return yaml.safe_dump(config, sort_keys=False).encode(), ".yaml"


def trl_base(work: Path) -> tuple[bytes, str]:
    """A GRPOConfig as ``trl grpo --config`` takes it (docs/advisor.md); line 2 holds the GPU count."""
    config = {
        "model_name_or_path": "Qwen/Qwen2.5-3B-Instruct",
        "num_processes": 2,
        "output_dir": "out",
        "use_peft": True,
        "lora_r": 64,
        "lora_target_modules": "all-linear",
        "use_vllm": True,
        "vllm_mode": "colocate",
        "vllm_gpu_memory_utilization": 0.6,
        "vllm_tensor_parallel_size": 1,
        "max_prompt_length": 512,
        "max_completion_length": 512,
        "num_generations": 2,
        "per_device_train_batch_size": 8,
        "gradient_accumulation_steps": 8,
        "max_steps": 200,
    }
    return yaml.safe_dump(config, sort_keys=False).encode(), ".yaml"


def log_base(work: Path) -> tuple[bytes, str]:
    """The log of a run that ran out of memory in its weight sync (the project's own test log)."""
    return (Path(__file__).parent / "logs" / "torch25_weight_sync.log").read_bytes(), ".log"


def accelerate_base(work: Path) -> tuple[bytes, str]:
    """An accelerate config as ``accelerate launch --config_file`` takes it: DeepSpeed ZeRO-2 on two GPUs."""
    config = {
        "compute_environment": "LOCAL_MACHINE",
        "distributed_type": "DEEPSPEED",
        "deepspeed_config": {"zero_stage": 2, "offload_optimizer_device": "none", "offload_param_device": "none"},
        "mixed_precision": "bf16",
        "num_machines": 1,
        "num_processes": 2,
        "machine_rank": 0,
    }
    return yaml.safe_dump(config, sort_keys=False).encode(), ".yaml"


def scores_base(work: Path) -> tuple[bytes, str]:
    """A transfer score file with intervals, as ``evaluate --intervals --output`` writes it."""
    predictions = work / "predictions.csv"
    predictions.write_bytes(predictions_base(work)[0])
    scores = work / "scores.json"
    command = [sys.executable, "-m", "rlvrambench_hf", "--source", str(SNAPSHOT), "evaluate"]
    command += ["--predictions", str(predictions), "--intervals", "--output", str(scores)]
    done = subprocess.run(command, env=harness_env(), capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return scores.read_bytes(), ".json"


def model_base(work: Path) -> tuple[bytes, str]:
    """The VERL launch script with a model folder of this machine as its model path (a valid config.json and
    safetensors headers, hostile_corpus.model_folder)."""
    from hostile_corpus import model_folder

    valid = work / "valid-model"
    valid.mkdir(exist_ok=True)
    folder = valid / "model" if (valid / "model").is_dir() else model_folder(valid)
    script = VERL_SCRIPT.replace("MODEL_PATH=$HOME/models/Qwen2.5-3B-Instruct", f"MODEL_PATH={folder}", 1)
    return script.encode(), ".sh"


BASES: dict[str, tuple[Callable[[Path], tuple[bytes, str]], str]] = {
    "predictions": (predictions_base, "csv"),
    "followup": (followup_base, "csv"),
    "attempts": (attempts_base, "json"),
    "protocol": (protocol_base, "json"),
    "planned": (planned_base, "yaml"),
    "verl script": (verl_script_base, "sh"),
    "verl yaml": (verl_yaml_base, "yaml"),
    "trl": (trl_base, "yaml"),
    "scores": (scores_base, "json"),
    "log": (log_base, "log"),
    "accelerate": (accelerate_base, "yaml"),
    "model": (model_base, "model"),
}
#: The inputs of one kind of file, beside the FILE_INPUTS of its format.
OWN_INPUTS = {
    "planned": PLANNED_INPUTS,
    "verl script": SCRIPT_INPUTS,
    "verl yaml": VERL_YAML_INPUTS,
    "trl": TRL_INPUTS,
    "scores": SCORE_INPUTS,
    "log": LOG_INPUTS,
    "accelerate": ACCELERATE_INPUTS,
    "model": MODEL_INPUTS,
    "predictions": PREDICTIONS_INPUTS,
    "followup": PREDICTIONS_INPUTS,
}


def corpus(kind: str) -> list[Input]:
    if kind in BASES:
        return [i for i in FILE_INPUTS if BASES[kind][1] in i.formats] + OWN_INPUTS.get(kind, [])
    lists = {"budgets": TEXT_INPUTS, "source": SOURCE_INPUTS, "release copy": SOURCE_INPUTS, "release": RELEASE_INPUTS}
    lists["nothing"] = OUTPUT_INPUTS
    return lists.get(kind) or CODE_INPUTS[kind]


def harness_env() -> dict[str, str]:
    """The environment of every command: offline, and a Hub endpoint that nothing listens on; user code may
    allocate 512 MiB."""
    return cli_env(
        HF_HUB_OFFLINE="1",
        HF_ENDPOINT="http://127.0.0.1:9",
        PYTHONPATH=f"{REPO_ROOT}{os.pathsep}{REPO_ROOT / 'tests'}",  # this checkout, wherever it is installed
        RLVRAMBENCH_USER_MEMORY_MIB="512",
        RLVRAMBENCH_USER_DISK_MIB="64",
        **SECRETS,  # secrets user code must not find and no output may show
        SOME_API_KEY=HARNESS_SECRET,  # a secret of the environment: no output may show it
    )


#: Failures of code another engineer owns, found by the harness and left to them.
KNOWN: dict[tuple[str, str], str] = {}


def writes(target: Target) -> bool:
    return any(key in arg for arg in target.argv for key in OUTPUTS)


#: The expectations a target that is not cheap meets (inputs that must fail, be interrupted or killed).
MUST_FAIL = ("refused", "interrupt", "killed")


def cases() -> list[tuple[Target, Input]]:
    out = []
    for target in TARGETS:
        outputs = OUTPUT_INPUTS if target.kind in BASES and writes(target) else []
        for item in corpus(target.kind) + outputs:
            if target.sample is not None and item not in outputs and not item.name.startswith("contained:"):
                if item.name not in target.sample:
                    continue
            if target.cheap or item.expect in MUST_FAIL:
                out.append((target, item))
    return out


CASES = cases()


def digests(files: list[Path]) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for path in files:
        found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    return found


@pytest.fixture(scope="module")
def harness(tmp_path_factory, testrun_uid):
    """Runs every case of a target on first use (one driver process per target) and keeps the results. Under
    pytest-xdist the workers share them through this run's temporary root: the first worker to need a target runs
    it, and one that needs it later, or meanwhile, waits for and reads those results, so no target runs twice."""
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    shared = (root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root) / f"hostile-{testrun_uid}"
    shared.mkdir(exist_ok=True)
    done: dict[str, dict[str, dict]] = {}

    def result(target: Target, item: Input) -> dict:
        if target.name not in done:
            path = shared / f"{hashlib.sha256(target.name.encode()).hexdigest()[:16]}.json"
            with FileLock(f"{path}.lock"):
                if not path.exists():
                    path.write_text(json.dumps(run_target(target, tmp_path_factory.mktemp("hostile"))))
                done[target.name] = json.loads(path.read_text())
        return done[target.name][item.name]

    return result


def run_target(target: Target, work: Path) -> dict[str, dict]:
    try:
        return _run_target(target, work)
    finally:
        unmount_all()


def _run_target(target: Target, work: Path) -> dict[str, dict]:
    base, suffix = BASES[target.kind][0](work) if target.kind in BASES else (b"", "")
    trl = work / "grpo.yaml"  # the GRPOConfig an accelerate config is given with
    trl.write_bytes(trl_base(work)[0])
    plans, outcomes = [], {}
    for index, item in enumerate(i for t, i in CASES if t is target):
        own = work / f"in-{index}"
        own.mkdir()
        prepared = item.make(own, base, suffix)
        if prepared.skip:
            outcomes[item.name] = {"skip": prepared.skip}
            continue
        out = prepared.outputs or work / f"out-{index}"
        out.mkdir(exist_ok=True)
        fill = {
            "{IN}": prepared.arg,
            "{OUT}": str(out / "out.json"),
            "{CSV}": str(out / "out.csv"),
            "{DIR}": str(out / "report"),
            "{S}": str(SNAPSHOT),
            "{TRL}": str(trl),
        }
        argv = ["--source", str(SNAPSHOT)] if target.kind != "source" else ["--source", prepared.arg]
        argv += [_fill(a, fill) for a in target.argv] + prepared.options
        case = {"argv": argv, "cwd": str(own), "stdin": prepared.stdin, "fifo": prepared.fifo}
        plans.append((item, prepared, out, {**case, "signal": prepared.signal, "unprivileged": prepared.unprivileged}))
    before = {item.name: digests(prepared.files) for item, prepared, _, _ in plans}
    cases_file, results_file = work / "cases.json", work / "results.json"
    cases_file.write_text(json.dumps([plan[3] for plan in plans]))
    done = subprocess.run(
        [sys.executable, str(DRIVER), str(cases_file), str(results_file)],
        env=harness_env(),
        timeout=1500,
        capture_output=True,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    for (item, prepared, out, case), result in zip(plans, json.loads(results_file.read_text())):
        result["changed"] = digests(prepared.files) != before[item.name]
        result["pwned"] = (Path(case["cwd"]) / PWNED).exists()
        result["left"] = sorted(p.name for p in out.rglob("*") if p.name != "lost+found")
        outcomes[item.name] = result
        shutil.rmtree(out, ignore_errors=True)
    return outcomes


def _fill(arg: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        arg = arg.replace(key, value)
    return arg


ALLOWED = {"refused": {2}, "accepted": {0}, "either": {0, 2}, "interrupt": {130}, "killed": {-1, -9, -15}}


def allowed(target: Target, item: Input) -> set[int]:
    """The exit statuses ``item`` allows for ``target`` (a success is any of the target's success statuses)."""
    statuses = ALLOWED[item.expect]
    return (statuses - {0}) | set(target.success) if 0 in statuses else statuses


@pytest.mark.parametrize(
    ("target", "item"),
    [
        pytest.param(
            t,
            i,
            id=f"{t.name} | {i.name}",
            marks=[pytest.mark.xfail(reason=KNOWN[(t.name, i.name)], strict=False)]
            if (t.name, i.name) in KNOWN
            else [],
        )
        for t, i in CASES
    ],
)
def test_hostile_input(harness, target: Target, item: Input) -> None:
    result = harness(target, item)
    if "skip" in result:
        pytest.skip(result["skip"])
    status, stderr = result["status"], result["stderr"]
    assert status in allowed(target, item), (status, stderr[-2000:])
    assert "Traceback" not in stderr, stderr[-2000:]
    assert result["left_processes"] == 0, f"user code left processes running: {result.get('left_commands')}"
    contained_checks(target, result)
    if item.expect == "killed":
        assert stderr == "", stderr[-2000:]  # a command killed by a signal prints nothing
        assert result["left"] == [], f"a killed command left {result['left']}"
    elif status in target.success and item.prints:
        assert len(stderr) < 8192, f"{len(stderr):,} characters on stderr"
    elif status in target.success:
        assert stderr == "", stderr
    else:
        lines = stderr.splitlines()
        assert len(lines) == 1, stderr[-2000:]
        assert len(lines[0]) <= LINE_BOUND and lines[0].isprintable(), lines[0]
        assert result["left"] == [], f"a failed command left {result['left']}"
    assert not result["changed"], "an input was changed"
    if item.hidden is not None:  # a value from the environment: named, never printed
        assert item.hidden not in stderr + result.get("stdout", ""), "a value from the environment was printed"
    if item.seconds is not None:
        assert result["seconds"] <= item.seconds, f"took {result['seconds']:.1f} s"


# ---- contained user code and escaped output (issue 38, items 1 and 5) ----
#: Characters that must never reach a terminal raw: C0 controls but line feed, DEL, C1 controls, and the format
#: characters (bidi overrides, zero-width ones).
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def contained_checks(target: Target, result: dict) -> None:
    """Whatever a case did: no forged line among the command's output, no code of a child's reply run in the
    command, no secret of the environment printed, and no raw control character on any output."""
    stdout, stderr = result["stdout"], result["stderr"]
    assert FORGED not in stdout, "user code's lines appeared on the command's output"
    assert not result["pwned"], "a child's reply ran code in the command"
    shown = [name for name, value in SECRETS.items() if value in stdout + stderr]
    assert not shown, f"secrets printed: {shown}"
    raw = RAW.search(stdout + stderr)
    assert raw is None, f"a raw {raw.group()!r} reached the terminal" if raw else ""


@pytest.mark.unit
def test_what_reaches_a_terminal_is_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    """The pieces the harness's RAW check stands on: a table cell, the output guard, a --debug traceback."""
    from rlvrambench_hf.cli.shared.common import escaping_output, format_table
    from rlvrambench_hf.errors import InputError, debug_text, escaped

    hostile = "a\x1b[2J\x07\x9b31m\u202e\u200b\r\tb"
    assert escaped(hostile) == "a\\x1b[2J\\x07\\x9b31m\\u202e\\u200b\\r\\tb" and escaped("plain\n") == "plain\n"
    table = format_table(["method", "n"], [[hostile, 1], ["plain", 2]])
    assert RAW.search(table) is None and table.splitlines()[2].rindex("1") == table.splitlines()[3].rindex("2")
    with escaping_output():
        print(f"wrote {hostile}")
    assert capsys.readouterr().out == f"wrote {escaped(hostile)}\n"
    try:
        raise InputError("x") from ValueError(hostile)
    except InputError as exc:
        assert RAW.search(debug_text(exc)) is None and "\\u202e" in debug_text(exc)


def test_no_secret_of_a_log_reaches_the_output(harness) -> None:
    """The log that holds a credential of every common shape on its failure line is answered without any of them."""
    target = next(t for t in TARGETS if t.kind == "log")
    result = harness(target, next(i for i in LOG_INPUTS if i.name == "log: secrets of every shape"))
    assert result["status"] == 0 and result["stdout"].startswith("memory failure"), result["stderr"][-2000:]
    for _, shown in LOG_SECRETS:
        assert shown not in result["stdout"] + result["stderr"], shown


def test_the_harness_covers_every_target_with_its_whole_corpus() -> None:
    kinds = {t.kind for t in TARGETS}
    assert kinds == {*BASES, "budgets", "policy", "estimator", "source", "release", "release copy", "nothing"}
    assert set(OWN_INPUTS) <= set(BASES)
    assert len(CASES) >= 600 and all(corpus(kind) for kind in kinds)
    pipes = {"a FIFO fed the valid content", "/dev/stdin fed the valid content"}
    for kind, (_, form) in BASES.items():  # every file kind is read from a pipe, and meets its own format's inputs
        names = {i.name for i in corpus(kind)}
        assert pipes <= names, kind
        assert {i.name for i in FILE_INPUTS if form in i.formats} <= names, kind
    for target in TARGETS:  # a sampled target names real inputs, and another meets its kind's whole corpus
        if target.sample is not None:
            assert target.sample <= {i.name for i in corpus(target.kind)}, target.name
            assert any(t.kind == target.kind and t.sample is None and t.cheap for t in TARGETS), target.name
            met = {i.name for t, i in CASES if t is target}
            contained = {
                i.name
                for i in corpus(target.kind)
                if i.name.startswith("contained:") and (target.cheap or i.expect in MUST_FAIL)
            }
            assert contained <= met, target.name
    advised = {t.argv[2] for t in TARGETS if t.argv[:2] == ("estimate", "advise")}
    assert advised == {"--planned", "--verl", "--trl"}
    assert len({(t.name, i.name) for t, i in CASES}) == len(CASES)
