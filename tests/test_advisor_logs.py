"""Why did my run run out of memory? Failure logs (the project's own, in tests/logs/, shaped like what PyTorch, vLLM,
Ray, NCCL, the kernel and VERL print) diagnosed in the release's taxonomy, with the release's evidence, a launch
file, a per-phase model, and hostile logs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rlvrambench_hf.advisor import (
    PhasePeaks,
    advise,
    diagnose_text,
    explain_failure,
    read_log,
    read_phase_peaks,
    read_plans,
)
from rlvrambench_hf.advisor.diagnose.phasematch import match_phases
from rlvrambench_hf.advisor.output.document import configuration
from rlvrambench_hf.cli import main
from rlvrambench_hf.errors import InputError
from rlvrambench_hf.reporting.advice import diagnosis_section

from conftest import cli_env

LOGS = Path(__file__).parent / "logs"

#: log → (failure class, memory kind, phase, figures it states: name → value in MiB or its unit)
EXPECTED = {
    "torch20_actor_update.log": (
        "actor_update_oom", "device", "actor_update",
        {"tried_to_allocate": 2375.7, "total_capacity": 40335.4, "reserved_by_pytorch": 37785.6, "free": 1914.9},
    ),
    "torch25_weight_sync.log": (
        "weight_sync_oom", "device", "weight_sync",
        {"tried_to_allocate": 5888.0, "process_in_use": 36106.2, "reserved_unallocated": 1095.7},
    ),
    "torch21_rollout.log": (
        "rollout_oom", "device", "rollout",
        {"total_capacity": 81049.6, "free": 612.1, "other_processes_in_use": 30740.5, "vllm_weights": 5930.5},
    ),
    "trl_logprob.log": ("cuda_oom", "device", "reference_logprob", {"private_pools": 1228.8}),
    "vllm_free_memory.log": (
        "rollout_init_memory", "device", "initializing",
        {"free_at_startup": 13363.2, "total_capacity": 40335.4, "gpu_memory_utilization": 0.8, "vllm_budget": 32266.2},
    ),
    "vllm_kv_cache_v0.log": (
        "rollout_init_memory", "device", "initializing",
        {"max_model_len": 32768, "kv_cache_tokens": 912, "total_capacity": 81090.6},
    ),
    "vllm_kv_cache_v1.log": (
        "rollout_init_memory", "device", "initializing",
        {"kv_cache_needed": 1792.0, "kv_cache_available": 1781.8, "estimated_max_model_len": 32560},
    ),
    "vllm_no_cache_blocks.log": ("rollout_init_memory", "device", "initializing", {"vllm_weights": 14611.8}),
    "nccl_cuda_oom.log": ("actor_update_oom", "device", "actor_update", {}),
    "ray_host_oom.log": (
        "vllm_executor_failure", "host", "rollout", {"host_used": 185753.6, "host_total": 192512.0},
    ),
    "kernel_oom.log": ("vllm_executor_failure", "host", None, {"anon_rss": 185763.0}),
    "nccl_timeout.log": ("nccl", None, None, {"timeout_ms": 600000, "ran_for_ms": 600047}),
    "config_assert.log": ("configuration", None, None, {}),
    "port_collision.log": ("distributed_port_collision", None, None, {}),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_family_is_classified_with_its_figures(name: str) -> None:
    failure_class, memory, phase, figures = EXPECTED[name]
    found = diagnose_text(read_log(LOGS / name))
    assert (found.failure_class, found.memory, found.phase) == (failure_class, memory, phase)
    stated = {n.name: n.value for n in found.numbers}
    for figure, value in figures.items():
        assert stated[figure] == pytest.approx(value, abs=0.1), figure
    headline = found.headline()
    assert "\n" not in headline and len(headline) < 600
    assert headline.startswith("memory failure" if memory == "device" else "host-memory" if memory else "not a memory")


def test_no_over_diagnosis() -> None:
    """A consequence never outranks its cause, and host and device memory are never confused."""
    weight_sync = diagnose_text(read_log(LOGS / "torch25_weight_sync.log"))
    assert [s.family for s in weight_sync.others] == ["nccl_timeout"]  # the timeout that followed is listed, not blamed
    port = diagnose_text(read_log(LOGS / "port_collision.log"))
    assert port.failure_class == "distributed_port_collision" and not port.is_memory
    host = diagnose_text(read_log(LOGS / "ray_host_oom.log"))
    assert host.memory == "host" and "not a device OOM" in host.headline()
    assert not any(n.name == "total_capacity" for n in host.numbers)
    lost = diagnose_text("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n")
    assert (lost.failure_class, lost.memory) == ("runtime", None)
    ray_kind = diagnose_text(
        "The actor is dead because its worker process has died. Worker exit type: NODE_OUT_OF_MEMORY\n"
    )
    assert (ray_kind.failure_class, ray_kind.memory) == ("vllm_executor_failure", "host")
    warned = diagnose_text("WARNING flash_attn: ImportError: cannot import name 'x' (falling back)\nKilled\n")
    assert warned.failure_class == "runtime"  # a warning that mentions ImportError is not the environment's failure
    env = diagnose_text("(WorkerDict pid=3) ModuleNotFoundError: No module named 'vllm'\n")
    assert env.failure_class == "environment"
    killed = diagnose_text("torch.distributed.elastic: failed (exitcode: -9)\nKilled\n")
    assert (killed.failure_class, killed.memory) == ("runtime", None)  # a SIGKILL alone is not called an OOM
    assert diagnose_text("step:1 - loss:0.2\nall good\n").failure_class is None


@pytest.mark.parametrize(
    ("frames", "phase"),
    [
        ("verl/workers/engine_workers.py, in train_batch", "actor_update"),
        ("verl/workers/engine_workers.py, in infer_batch", "reference_logprob"),
        ("verl/workers/rollout/vllm_rollout/vllm_async_server.py, in resume_kv_cache", "weight_sync"),
        ('verl/trainer/ppo/ray_trainer.py, in _validate\n  File "x.py", line 3, in generate_sequences', "validation"),
        ("verl/trainer/ppo/ray_trainer.py, in _save_checkpoint", "checkpoint"),
    ],
)
def test_the_phase_of_newer_verl_workers(frames: str, phase: str) -> None:
    path, _, function = frames.partition(", in ")
    text = (
        f'Traceback (most recent call last):\n  File "/opt/{path}", line 1, in {function}\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of "
        "39.39 GiB of which 10.00 MiB is free.\n"
    )
    assert diagnose_text(text).phase == phase


def test_the_quoted_source_line_is_not_the_message() -> None:
    found = diagnose_text(read_log(LOGS / "config_assert.log"))
    assert found.signal is not None and found.signal.excerpt.startswith("AssertionError: real_train_batch_size (30)")


def test_device_and_log_fixes_from_the_figures() -> None:
    free = diagnose_text(read_log(LOGS / "vllm_free_memory.log"))
    assert free.device == {
        "log_total_mib": 40335.4,
        "candidates": ["A100 40GB"],
        "capacity_mib": 40960,
        "measured": True,
    }
    assert free.fixes[0]["change"] == "0.3" and free.headline().endswith("gpu_memory_utilization=0.3`")
    big = diagnose_text(read_log(LOGS / "torch21_rollout.log"))
    assert big.device is not None and big.device["candidates"] == ["H100 80GB", "A100 80GB"]
    assert not big.device["measured"]
    kv = diagnose_text(read_log(LOGS / "vllm_kv_cache_v1.log"))
    assert kv.fixes[0]["key"] == "actor_rollout_ref.rollout.max_model_len" and kv.fixes[0]["change"] == "32560"


def test_release_evidence_of_the_same_kind(snapshot: Path) -> None:
    found = explain_failure(LOGS / "torch25_weight_sync.log", snapshot)
    release = found.release
    assert release is not None
    assert release["counts"]["eligible_runs"] == 15 and release["terminal_stages"] == {
        "weight_sync": 9,
        "initializing": 6,
    }
    first = release["configurations"][0]
    assert first["observed_state"] == "memory_failure"
    assert {n["setting"] for n in first["within_margin_neighbours"]} == {"free_cache_engine"}
    assert found.fixes[0]["basis"] == "release" and found.specific is None
    assert found.as_dict()["note"].startswith("give the launch file too")
    host = explain_failure(LOGS / "kernel_oom.log", snapshot).release
    assert host is not None and host["counts"]["larger_model_processes"] == 7
    assert all(c["within_margin_neighbours"] == [] for c in host["configurations"])  # no GPU change fixes host memory
    free = explain_failure(LOGS / "vllm_free_memory.log", snapshot)  # the log's own figures outrank the release's
    assert [(f["change"], f["basis"]) for f in free.fixes if "gpu_memory_utilization" in f["key"]] == [("0.3", "log")]
    html = diagnosis_section(free, "vllm_free_memory.log")
    assert html.count("<table") == 3 and "cfg-966f5804dc918967" in html and "gpu_memory_utilization=0.3" in html
    kv = explain_failure(LOGS / "vllm_kv_cache_v0.log", snapshot)  # the cache was short: never a smaller reservation
    assert [f["basis"] for f in kv.fixes] == ["log", "docs", "docs"]
    assert next(f for f in kv.fixes if "utilization" in f["key"])["change"].startswith("raise")
    rollout = explain_failure(LOGS / "torch21_rollout.log", snapshot)  # the user's utilization is not known
    assert rollout.fixes[0]["to"] is None and rollout.headline().endswith("gpu_memory_utilization: 0.8 -> 0.7`")
    port = explain_failure(LOGS / "port_collision.log", snapshot)
    assert port.release is not None and port.release["counts"]["recorded_attempts"] == 35
    assert all(f["basis"] == "docs" for f in port.fixes)


def _script(folder: Path, **changes: str) -> Path:
    settings = {
        "data.train_batch_size": "128", "data.max_prompt_length": "256", "data.max_response_length": "1024",
        "actor_rollout_ref.model.path": "Qwen/Qwen2.5-3B-Instruct", "actor_rollout_ref.model.lora_rank": "64",
        "actor_rollout_ref.model.target_modules": "all-linear", "actor_rollout_ref.actor.strategy": "fsdp",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": "16",
        "actor_rollout_ref.actor.fsdp_config.param_offload": "False",
        "actor_rollout_ref.actor.fsdp_config.optimizer_offload": "False",
        "actor_rollout_ref.rollout.name": "vllm", "actor_rollout_ref.rollout.tensor_model_parallel_size": "1",
        "actor_rollout_ref.rollout.gpu_memory_utilization": "0.65", "actor_rollout_ref.rollout.n": "5",
        "actor_rollout_ref.rollout.max_num_seqs": "256", "actor_rollout_ref.rollout.max_model_len": "1280",
        "actor_rollout_ref.rollout.free_cache_engine": "False",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": "8",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": "8", "actor_rollout_ref.hybrid_engine": "True",
        "algorithm.adv_estimator": "grpo", "trainer.n_gpus_per_node": "2", "trainer.nnodes": "1",
        "trainer.total_training_steps": "100",
    } | changes  # fmt: skip
    script = folder / "run.sh"
    words = " \\\n    ".join(f"{k}={v}" for k, v in settings.items())
    script.write_text(f"python3 -m verl.trainer.main_ppo \\\n    {words}\n")
    return script


def test_with_the_launch_file_the_first_fix_makes_it_fit(snapshot: Path, tmp_path: Path) -> None:
    """The release's weight-sync failure (cfg-a188f9742074d270) with its launch file: the answer is its own, and
    applying the first override to the launch file gives a plan the advisor answers within the margin."""
    plans = read_plans(_script(tmp_path), kind="verl", workload="gsm8k", source=snapshot)
    found = explain_failure(LOGS / "torch25_weight_sync.log", snapshot, plans=plans)
    specific = found.specific
    assert specific is not None and specific["verdict"]["state"] == "memory_failure"
    assert [r["configuration_id"] for r in specific["measured"]] == ["cfg-a188f9742074d270"]
    assert specific["device"]["agrees"] is True
    first = found.fixes[0]  # the change a measurement supports: the release's within-margin neighbour
    assert first["basis"] in ("model", "launch")  # the per-phase model's fix of the diagnosed phase leads
    assert (first["key"], first["change"]) == ("actor_rollout_ref.rollout.free_cache_engine", "True")
    launch = [f for f in found.fixes if f["basis"] == "launch"]
    assert all(float(f["change"]) < 0.65 for f in launch if f["setting"] == "vllm_gpu_memory_utilization")  # never up
    assert "trainer.n_gpus_per_node" in [f["key"] for f in found.fixes]  # one key to set, not "… × trainer.nnodes"
    assert not [f for f in found.fixes if "×" in f["key"]]
    assert not [f for f in found.fixes if f["basis"] == "release" and f["from"] != "0.65" and "utilization" in f["key"]]
    fixed = read_plans(
        _script(tmp_path, **{first["key"]: first["change"]}), kind="verl", workload="gsm8k", source=snapshot
    )
    assert configuration(advise(fixed, snapshot), 0)["verdict"]["state"] == "within_margin"


def test_the_plan_is_answered_on_the_device_of_the_log(snapshot: Path, tmp_path: Path) -> None:
    plans = read_plans(_script(tmp_path), kind="verl", workload="gsm8k", source=snapshot)
    found = explain_failure(LOGS / "torch21_rollout.log", snapshot, plans=plans)
    assert found.specific is not None
    device = found.specific["device"]
    assert device["plan_capacity_mib"] == 81559 and device["capacity_from"] == "the log's device" and device["agrees"]
    assert any(f.startswith("hardware not measured: 81559 MiB") for f in found.specific["scope_flags"])
    assert found.specific["measured"] is None  # the release measured no 80 GB device


def test_a_utilization_too_small_for_the_weights_is_not_first(snapshot: Path, tmp_path: Path) -> None:
    """The start-up check's free memory allows 0.3 of the device, but 0.3 x 40,960 MiB cannot hold Qwen2.5-7B's
    bf16 weights: that fix goes last, saying why."""
    script = _script(tmp_path, **{"actor_rollout_ref.model.path": "Qwen/Qwen2.5-7B-Instruct"})
    plans = read_plans(script, kind="verl", workload="gsm8k", source=snapshot)
    found = explain_failure(LOGS / "vllm_free_memory.log", snapshot, plans=plans)
    assert found.fixes[0]["basis"] != "log"
    utilization = [f for f in found.fixes if f.get("setting") == "vllm_gpu_memory_utilization"]
    # not the log's 0.3 (too small): the remedy of the plan's failing actor_shards_at_startup floor, which leads
    assert [f["basis"] for f in utilization] == ["launch"] and found.fixes[0] is utilization[0]
    assert "the floor actor_shards_at_startup holds after it" in utilization[0]["why"]
    assert float(utilization[0]["change"]) * 40960 > 14526
    alone = explain_failure(LOGS / "vllm_free_memory.log", snapshot)  # without the launch file: the log's figure
    assert [f["change"] for f in alone.fixes if f["basis"] == "log"] == ["0.3"]
    small = explain_failure(LOGS / "vllm_free_memory.log", snapshot, plans=read_plans(_script(tmp_path), kind="verl",
                            workload="gsm8k", source=snapshot))  # fmt: skip
    assert small.fixes[0]["basis"] == "log"  # Qwen2.5-3B's weights fit in 0.3 of the device


def _model(**peaks: float) -> PhasePeaks:
    terms = {
        "initializing": [("vLLM reservation 0.65 x 40,960", 26624.0), ("resident actor shards", 7000.0)],
        "weight_sync": [
            ("vLLM reservation 0.65 x 40,960", 26624.0), ("resident actor shards", 7000.0),
            ("merged bf16 copy for vLLM", 5900.0), ("runtime outside vLLM", 2400.0),
        ],
        "actor_update": [("resident actor shards", 7000.0), ("activations at micro-batch 16", 9000.0)],
    }  # fmt: skip
    return read_phase_peaks(
        {
            "device": {"name": "A100 40GB", "capacity_mib": 40960, "margin_mib": 38912, "measured": True},
            "phases": [
                {
                    "phase": phase,
                    "peak_mib": peaks.get(phase, sum(m for _, m in t)),
                    "terms": [{"term": n, "mib": m, "arithmetic": f"{m} MiB"} for n, m in t],
                }
                for phase, t in terms.items()
            ],
            "band_mib": 400,
        }
    )


def test_a_per_phase_model_is_matched() -> None:
    found = diagnose_text(read_log(LOGS / "torch25_weight_sync.log"))
    numbers = {n.name: n.value for n in found.numbers if n.unit == "MiB"}
    settings = {"num_hidden_layers": 36, "actor_micro_batch": 16}
    match = match_phases(_model(), found.phase, numbers, settings)
    assert match["binding_phase"] == "weight_sync" == match["diagnosed_phase"] and match["agree"]
    assert match["device"]["agrees"] is True
    assert match["overflowing_term"] == {
        "term": "merged bf16 copy for vLLM",
        "mib": 5900.0,
        "arithmetic": "5900.0 MiB",
        "basis": "failed allocation",
    }
    assert match["log_against_model"]["log_needed_mib"] == pytest.approx(41994.2, abs=0.1)
    fixes = match["fixes"]
    assert fixes[0]["setting"] == "layered_summon" and fixes[0]["fits"]
    assert fixes[0]["peak_after_mib"] == pytest.approx(41924 - 5900 * 35 / 36, abs=0.1)
    utilization = next(f for f in fixes if f["setting"] == "vllm_gpu_memory_utilization")
    assert utilization["to"] == 0.55 and utilization["peak_after_mib"] <= 38912
    assert [f["fits"] for f in fixes] == sorted((f["fits"] for f in fixes), reverse=True)
    other = match_phases(_model(actor_update=50000.0), found.phase, numbers, settings)
    assert other["binding_phase"] == "actor_update" and not other["agree"]
    with pytest.raises(InputError, match="not a per-phase memory model"):
        read_phase_peaks({"phases": []})


def test_the_model_is_used_with_a_launch_file(snapshot: Path, tmp_path: Path) -> None:
    plans = read_plans(_script(tmp_path), kind="verl", workload="gsm8k", source=snapshot)
    found = explain_failure(LOGS / "torch25_weight_sync.log", snapshot, plans=plans, phase_model=_model())
    assert found.specific is not None and found.specific["phases"]["agree"]
    first_model = next(f for f in found.fixes if f["basis"] == "model")
    assert first_model["key"] == "actor_rollout_ref.rollout.layered_summon"
    assert found.fixes[0]["basis"] == "launch" and "measured within the margin" in found.fixes[0]["why"]


def test_a_large_log_is_read_bounded(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    line = b"(WorkerDict pid=1) step:1 - actor/pg_loss:0.0132 - timing_s/gen:41.2 - response_length/mean:311.0\n"
    with log.open("wb") as handle:
        handle.write(line * (50 * 2**20 // len(line)))
        handle.write((LOGS / "torch20_actor_update.log").read_bytes())
    text = read_log(log)
    assert text.cut and len(text.text) < 6 * 2**20 and "first 1 MiB and last 4 MiB read" in text.note
    found = diagnose_text(text)
    assert found.failure_class == "actor_update_oom" and "\n" not in found.headline()


def test_binary_and_missing_logs_are_one_line(tmp_path: Path) -> None:
    garbage = tmp_path / "core.bin"
    garbage.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(InputError, match="binary data") as raised:
        read_log(garbage)
    assert "\n" not in str(raised.value)
    latin = tmp_path / "latin.log"
    latin.write_bytes(bytes(range(128, 256)) * 64)
    with pytest.raises(InputError, match="not UTF-8"):
        read_log(latin)
    with pytest.raises(InputError, match="is a directory"):
        read_log(tmp_path)


def test_no_secret_in_any_output(snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    secret = "hf_" + "Zx9" * 12
    log = tmp_path / "secret.log"
    log.write_text(
        f"Downloading https://alice:s3cretpassw0rd@huggingface.co/Qwen/Qwen2.5-3B-Instruct with token {secret}\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/verl/verl/workers/fsdp_workers.py", line 611, in update_actor\n'
        f"RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 39.39 GiB total capacity; 38.10 GiB "
        f"already allocated; 5.19 MiB free; 38.60 GiB reserved in total by PyTorch) at https://bob:hunter2hunter2@h/x "
        f"Authorization: Bearer {secret}\n"
    )
    out = tmp_path / "answer.json"
    status = main(["--source", str(snapshot), "estimate", "advise", "--log", str(log), "--output", str(out)])
    printed = capsys.readouterr()
    written = out.read_text()
    for text in (printed.out, printed.err, written):
        assert secret not in text and "s3cretpassw0rd" not in text and "hunter2hunter2" not in text
    assert status == 0 and printed.out.splitlines()[0].startswith("memory failure in actor_update (actor_update_oom)")
    answer = json.loads(written)["diagnosis"]
    assert answer["failure_class"] == "actor_update_oom" and "***" in answer["message"]["excerpt"]


def test_standard_input_on_the_command_line(snapshot: Path, tmp_path: Path) -> None:
    """``--log -`` reads the log piped in (the process boundary is what is tested)."""
    out = tmp_path / "why.json"
    command = [sys.executable, "-m", "rlvrambench_hf", "--source", str(snapshot), "estimate", "advise"]
    log = (LOGS / "vllm_kv_cache_v0.log").read_text()
    command += ["--log", "-", "--output", str(out)]
    done = subprocess.run(command, input=log, capture_output=True, text=True, env=cli_env(), timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("memory failure in initializing (rollout_init_memory)")
    assert json.loads(out.read_text())["diagnosis"]["numbers"][1] == {
        "name": "kv_cache_tokens", "value": 912.0, "unit": "tokens", "written": "912"
    }  # fmt: skip


def test_command_line_errors(snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    garbage = tmp_path / "garbage.log"
    garbage.write_bytes(b"\x00\x01\x02" * 1000)
    assert main(["--source", str(snapshot), "estimate", "advise", "--log", str(garbage)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "binary data" in err[0]
    assert main(["--source", str(snapshot), "estimate", "advise", "--log", str(garbage), "--output", "a.csv"]) == 2
    assert main(["--source", str(snapshot), "estimate", "advise"]) == 2
    assert "--log" in capsys.readouterr().err
