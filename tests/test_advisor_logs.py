"""Why did my run run out of memory? Failure logs (the project's own, in tests/logs/, written in the shapes PyTorch
on every backend, vLLM, DeepSpeed, Ray, NCCL, the kernel, Slurm, Kubernetes, VERL, TRL and trlX print) diagnosed in
the release's taxonomy: the outcome, the family, the phase and operation the stack shows, the figures, the fixes in
VERL's and TRL's spellings, the release's evidence, a launch file, a per-phase model; and the input itself: empty,
binary, wrapped by a terminal, of 100 MB, holding secrets, under any name."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
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
from rlvrambench_hf.advisor.diagnose.logs import log_text
from rlvrambench_hf.advisor.diagnose.phasematch import match_phases
from rlvrambench_hf.advisor.output.document import configuration
from rlvrambench_hf.cli import main
from rlvrambench_hf.errors import InputError, redact
from rlvrambench_hf.reporting.advice import diagnosis_section

from conftest import cli_env

LOGS = Path(__file__).parent / "logs"

#: log → (outcome, failure class, memory kind, phase, operation, figures it states: name → value in MiB or its unit)
EXPECTED = {
    "torch20_actor_update.log": (
        "memory_failure", "actor_update_oom", "device", "actor_update", "backward pass",
        {"tried_to_allocate": 2375.7, "total_capacity": 40335.4, "reserved_by_pytorch": 37785.6, "free": 1914.9},
    ),
    "torch25_weight_sync.log": (
        "memory_failure", "weight_sync_oom", "device", "weight_sync", "LoRA merge",
        {"tried_to_allocate": 5888.0, "process_in_use": 36106.2, "reserved_unallocated": 1095.7},
    ),
    "torch21_rollout.log": (
        "memory_failure", "rollout_oom", "device", "rollout", "vLLM generation",
        {"total_capacity": 81049.6, "free": 612.1, "other_processes_in_use": 30740.5, "vllm_weights": 5930.5},
    ),
    "trl_logprob.log": (
        "memory_failure", "cuda_oom", "device", "reference_logprob", "log-probabilities over the vocabulary",
        {"private_pools": 1228.8},
    ),
    "vllm_free_memory.log": (
        "memory_failure", "rollout_init_memory", "device", "initializing", "vLLM start-up",
        {"free_at_startup": 13363.2, "total_capacity": 40335.4, "gpu_memory_utilization": 0.8, "vllm_budget": 32266.2},
    ),
    "vllm_kv_cache_v0.log": (
        "memory_failure", "rollout_init_memory", "device", "initializing", "vLLM start-up",
        {"max_model_len": 32768, "kv_cache_tokens": 912, "total_capacity": 81090.6},
    ),
    "vllm_kv_cache_v1.log": (
        "memory_failure", "rollout_init_memory", "device", "initializing", "vLLM start-up",
        {"kv_cache_needed": 1792.0, "kv_cache_available": 1781.8, "estimated_max_model_len": 32560},
    ),
    "vllm_kv_wrapped.log": (  # cut mid-word at 100 columns by the terminal
        "memory_failure", "rollout_init_memory", "device", "initializing", "vLLM start-up",
        {"max_model_len": 131072, "kv_cache_needed": 8192.0, "kv_cache_available": 3205.1,
         "estimated_max_model_len": 51232},
    ),
    "vllm_no_cache_blocks.log": (
        "memory_failure", "rollout_init_memory", "device", "initializing", "vLLM start-up", {"vllm_weights": 14611.8},
    ),
    "vllm_sampler_warmup.log": (
        "memory_failure", "rollout_init_memory", "device", "initializing", "vLLM sampler warm-up",
        {"tried_to_allocate": 592.0, "private_pools": 96.0, "vllm_weights": 15632.0, "kv_cache_tokens": 58432},
    ),
    "cumem_wake_up.log": (
        "memory_failure", "weight_sync_oom", "device", "weight_sync", "vLLM wake-up",
        {"vllm_sleep_freed": 59801.6, "vllm_sleep_still_in_use": 1966.1},
    ),
    "npu_actor_update.log": (  # torch_npu's wording on Ascend
        "memory_failure", "actor_update_oom", "device", "actor_update", None,
        {"tried_to_allocate": 3584.0, "total_capacity": 62433.3, "free": 1239.0, "reserved_by_pytorch": 59863.0},
    ),
    "hip_backward.log": (  # ROCm, TRL's training step
        "memory_failure", "actor_update_oom", "device", "actor_update", "backward pass",
        {"tried_to_allocate": 4096.0, "total_capacity": 196587.5, "reserved_unallocated": 4515.8},
    ),
    "xpu_generate.log": (  # trlX's rollout with transformers' generate() on an Intel GPU
        "memory_failure", "rollout_oom", "device", "rollout", None, {"tried_to_allocate": 768.0, "free": 412.0},
    ),
    "cuda_malloc_async.log": (  # the cudaMallocAsync backend's table
        "memory_failure", "actor_update_oom", "device", "actor_update", None,
        {"tried_to_allocate": 2560.0, "total_capacity": 40335.4, "free": 1044.5, "allocated_by_pytorch": 37683.2},
    ),
    "ray_task_oom_only.log": (  # RayTaskError(OutOfMemoryError) from a worker, no torch line
        "memory_failure", "cuda_oom", "device", "reference_logprob", None, {},
    ),
    "deepspeed_zero3_gather.log": (
        "memory_failure", "actor_update_oom", "device", "actor_update", "ZeRO-3 parameter gather",
        {"tried_to_allocate": 1996.8, "total_capacity": 81090.6},
    ),
    "trl_zero3_generate.log": (
        "memory_failure", "rollout_oom", "device", "rollout", "ZeRO-3 parameter gather", {"tried_to_allocate": 13516.8},
    ),
    "trl_vllm_generation.log": (
        "memory_failure", "rollout_oom", "device", "rollout", "vLLM generation", {"tried_to_allocate": 2355.2},
    ),
    "trl_compute_loss.log": (
        "memory_failure", "actor_update_oom", "device", "actor_update", "log-probabilities over the vocabulary",
        {"tried_to_allocate": 3799.0},
    ),
    "nccl_cuda_oom.log": ("memory_failure", "actor_update_oom", "device", "actor_update", None, {}),
    "ray_host_oom.log": (
        "memory_failure", "vllm_executor_failure", "host", "rollout", None,
        {"host_used": 185753.6, "host_total": 192512.0, "ray_memory_threshold": 0.95, "top_process_used": 62771.2},
    ),
    "ray_memory_table_only.log": (
        "memory_failure", "vllm_executor_failure", "host", "rollout", None, {"top_process_used": 60119.0},
    ),
    "ray_oom_prevention_paragraph.log": ("memory_failure", "vllm_executor_failure", "host", None, None, {}),
    "raylet_workers_killed.log": ("memory_failure", "vllm_executor_failure", "host", None, None, {"workers_killed": 2}),
    "kernel_oom.log": ("memory_failure", "vllm_executor_failure", "host", None, None, {"anon_rss": 185763.0}),
    "slurm_oom_kill.log": ("memory_failure", "vllm_executor_failure", "host", None, None, {}),
    "kubernetes_oomkilled.log": ("memory_failure", "vllm_executor_failure", "host", None, None, {}),
    "host_cpu_allocator.log": (
        "memory_failure", "vllm_executor_failure", "host", None, None, {"host_tried_to_allocate": 28000.0},
    ),
    "nccl_timeout.log": ("not_memory", "nccl", None, None, None, {"timeout_ms": 600000, "ran_for_ms": 600047}),
    "config_assert.log": ("not_memory", "configuration", None, None, None, {}),
    "port_collision.log": ("not_memory", "distributed_port_collision", None, None, None, {}),
    "nan_metrics.log": ("not_memory", "numerical", None, None, None, {}),
    "illegal_memory_access.log": ("not_memory", "cuda_kernel_error", None, None, None, {}),
    "dev_shm_bus_error.log": ("not_memory", "shared_memory", None, None, None, {}),
    "disk_full.log": ("not_memory", "disk_full", None, "checkpoint", None, {}),
    "vllm_profiling_race.log": ("not_memory", "vllm_memory_profiling", None, None, None, {}),
    "slurm_time_limit.log": ("not_memory", "time_limit", None, None, None, {}),
    "hub_gated.log": ("not_memory", "environment", None, None, None, {}),
    "ray_worker_died.log": ("not_established", "worker_lost", None, None, None, {}),
    "torchrun_sigkill.log": ("not_established", "killed", None, None, None, {}),
    "hydra_error_only.log": ("not_established", "consequence", None, None, None, {}),
    "healthy_run.log": ("no_failure", None, None, None, None, {"vllm_weights": 5930.5}),
}  # fmt: skip
LEADS = {
    "memory_failure": ("memory failure", "host-memory failure"),
    "not_memory": ("not a memory failure: ",),
    "not_established": ("not established: ",),
    "no_failure": ("no failure message recognised",),
}


def test_every_log_of_the_folder_is_expected() -> None:
    assert {p.name for p in LOGS.glob("*.log")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_family_is_classified_with_its_figures(name: str) -> None:
    outcome, failure_class, memory, phase, operation, figures = EXPECTED[name]
    found = diagnose_text(read_log(LOGS / name))
    assert (found.outcome, found.failure_class, found.memory) == (outcome, failure_class, memory)
    assert (found.phase, found.operation) == (phase, operation)
    stated = {n.name: n.value for n in found.numbers}
    for figure, value in figures.items():
        assert stated[figure] == pytest.approx(value, abs=0.1), figure
    headline = found.headline()
    assert "\n" not in headline and len(headline) < 700
    assert headline.startswith(LEADS[outcome]), headline
    if memory == "host":
        assert "not a device OOM" in headline
    if outcome == "not_established":
        assert found.look_at and found.look_at in headline and found.fixes
    if outcome == "no_failure":
        assert found.signal is None and not found.fixes


def test_no_over_diagnosis() -> None:
    """A consequence never outranks its cause, host and device memory are never confused, and a failure whose cause
    the log does not state is not established (nor called a memory failure, nor "no failure")."""
    weight_sync = diagnose_text(read_log(LOGS / "torch25_weight_sync.log"))
    assert [s.family for s in weight_sync.others] == ["nccl_timeout"]  # the timeout that followed is listed, not blamed
    port = diagnose_text(read_log(LOGS / "port_collision.log"))
    assert port.failure_class == "distributed_port_collision" and not port.is_memory
    host = diagnose_text(read_log(LOGS / "ray_host_oom.log"))
    assert host.memory == "host" and "not a device OOM" in host.headline()
    assert not any(n.name == "total_capacity" for n in host.numbers)
    lost = diagnose_text("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n")
    assert (lost.outcome, lost.failure_class, lost.memory) == ("not_established", "worker_lost", None)
    assert lost.headline().startswith("not established: a Ray worker died") and "dmesg" in lost.headline()
    ray_kind = diagnose_text(
        "The actor is dead because its worker process has died. Worker exit type: NODE_OUT_OF_MEMORY\n"
    )
    assert (ray_kind.failure_class, ray_kind.memory) == ("vllm_executor_failure", "host")
    warned = diagnose_text("WARNING flash_attn: ImportError: cannot import name 'x' (falling back)\nKilled\n")
    assert (warned.outcome, warned.failure_class) == ("not_established", "killed")  # a warning is not the failure
    env = diagnose_text("(WorkerDict pid=3) ModuleNotFoundError: No module named 'vllm'\n")
    assert env.failure_class == "environment"
    killed = diagnose_text("torch.distributed.elastic: failed (exitcode: -9)\nKilled\n")
    assert (killed.outcome, killed.memory) == ("not_established", None)  # a SIGKILL alone is not called an OOM
    assert diagnose_text("step:1 - loss:0.2\nall good\n").outcome == "no_failure"
    assert diagnose_text("KeyError: 'reward_fn'\n").headline().startswith("not a memory failure: a Python exception")
    driver = diagnose_text("ray.exceptions.RayTaskError(OutOfMemoryError): ray::TaskRunner.run() (pid=1, ip=h)\n")
    assert (driver.outcome, driver.failure_class) == ("not_established", "ray_task_oom")  # device or host: unknown
    nested = diagnose_text(
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::TaskRunner.run() (pid=1, ip=h)\n"
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_rollout_update_actor() (pid=2, ip=h)\n"
    )
    assert (nested.outcome, nested.memory, nested.phase) == ("memory_failure", "device", "actor_update")
    ray_segv = diagnose_text(read_log(LOGS / "ray_worker_died.log"))  # its paragraph names SIGSEGV as a cause
    assert "segfault" not in [s.family for s in ray_segv.others]


@pytest.mark.parametrize(
    ("text", "family"),
    [
        ("RuntimeError: cuda out of memory. tried to allocate 20.00 mib\n", "torch_oom"),
        ("RUNTIMEERROR: CUDA OUT OF MEMORY.\n", "torch_oom"),
        ("RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:56\n", "vllm_cumem_oom"),
        ("RuntimeError: cuda runtime error (2) : out of memory at /pytorch/aten/src/THC/THCCachingAllocator.cpp:510\n",
         "cuda_error_oom"),
        ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`\n",
         "cuda_error_oom"),
        ("node3:1:9 [0] NCCL WARN Failed to CUDA calloc 10485760 bytes\n", "cuda_error_oom"),
        ("torch.OutOfMemoryError: MPS backend out of memory (MPS allocated: 17.90 GB, other allocations: 1.02 GB, max "
         "allowed: 18.13 GB). Tried to allocate 256.00 MB on private pool.\n", "torch_oom"),
        ("torch.OutOfMemoryError: NPU out of memory. Tried to allocate 52.00 MiB (NPU 0; 60.96 GiB total capacity; "
         "59.36 GiB already allocated; 59.36 GiB current active; 4.12 MiB free; 60.51 GiB reserved in total by "
         "PyTorch)\n", "torch_oom"),
        ("ray.exceptions.OutOfMemoryError: 1 worker(s) were killed due to the node running low on memory.\n",
         "ray_host_oom"),
        ("Memory on the node (IP: 10.0.0.1, ID: ab) was 957.55GB / 1006.84GB (0.951040), which exceeds the memory "
         "usage threshold of 0.950000\n", "ray_host_oom"),
        ("(raylet) Task _map_task failed due to oom. There are infinite oom retries remaining.\n", "ray_host_oom"),
        ("ray.exceptions.ObjectStoreFullError: Failed to put object ab in object store because it is full.\n",
         "ray_object_store"),
        ("[Sat Jan 3 10:00:00 2026] python3 invoked oom-killer: gfp_mask=0x140cca, order=0, oom_score_adj=0\n",
         "kernel_oom"),
        ("slurmstepd: error: Job 77 exceeded memory limit (268435456 > 262144000), being killed\n", "kernel_oom"),
        ("TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.\n", "kernel_oom"),
        ("MemoryError\n", "host_alloc"),
        ("numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.73 GiB for an array with shape (1000000, "
         "1000) and data type float32\n", "host_alloc"),
        ("OSError: [Errno 12] Cannot allocate memory\n", "host_alloc"),
    ],
)  # fmt: skip
def test_every_wording_is_recognised_case_insensitively(text: str, family: str) -> None:
    found = diagnose_text(text)
    assert found.signal is not None and found.signal.family == family
    assert found.outcome == "memory_failure"
    lowered = diagnose_text(text.lower())
    assert lowered.signal is not None and lowered.signal.family == family


def test_figures_of_the_other_backends() -> None:
    mps = diagnose_text(
        "torch.OutOfMemoryError: MPS backend out of memory (MPS allocated: 17.90 GB, other allocations: 1.02 GB, max "
        "allowed: 18.13 GB). Tried to allocate 256.00 MB on private pool.\n"
    )
    assert {n.name: n.value for n in mps.numbers} == pytest.approx(
        {"allocated_by_pytorch": 18329.6, "other_allocations": 1044.5, "allowed": 18565.1, "tried_to_allocate": 256.0},
        abs=0.1,
    )
    slurm = diagnose_text("slurmstepd: error: Job 77 exceeded memory limit (268435456 > 262144000), being killed\n")
    assert slurm.reason.startswith("the scheduler killed the job: 262,144 MiB of host memory over its 256,000 MiB")
    numpy = diagnose_text("numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.73 GiB for an array\n")
    assert numpy.numbers[0].name == "host_tried_to_allocate" and numpy.numbers[0].value == pytest.approx(3819.5, 0.1)


def _wrapped(text: str, width: int) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width)) + "\n"


@pytest.mark.parametrize("width", [61, 80, 100, 120])
def test_a_message_wrapped_by_the_terminal(width: int) -> None:
    """A message cut into lines mid-word (or at a space the terminal dropped) is read whole, with its figures."""
    ray = (
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory. Memory on the node "
        "(IP: 10.4.0.17, ID: 6c1f0a) where the task (actor ID: 51aa, name=WorkerDict.actor_rollout_generate_sequences, "
        "pid=11902, memory used=61.30GB) was running was 181.40GB / 188.00GB (0.964894), which exceeds the memory usage"
        " threshold of 0.95. Ray killed this worker (ID: 9be3) because it was the most recently scheduled task."
    )
    found = diagnose_text("(TaskRunner pid=1) step:3\n" + _wrapped(ray, width))
    assert (found.memory, found.failure_class, found.phase) == ("host", "vllm_executor_failure", "rollout")
    assert found.signal is not None and found.signal.number("host_total") == pytest.approx(192512.0, abs=0.1)
    torch = (
        "RuntimeError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 23.64 "
        "GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 22.61 GiB memory in use."
    )
    cut = torch.index("memory") + 3  # "… CUDA out of mem" / "ory. Tried to allocate …"
    device = diagnose_text(f"{torch[:cut]}\n{torch[cut:]}\n")
    assert device.signal is not None and device.signal.family == "torch_oom"
    assert device.signal.number("tried_to_allocate") == 1536.0
    dropped = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`."
    at = dropped.index(" for the cache")
    blocks = diagnose_text(f"{dropped[:at]}\n{dropped[at + 1 :]}\n")  # the space at the cut is not kept
    assert blocks.signal is not None and blocks.signal.family == "vllm_no_cache_blocks"


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


#: Stacks of the frameworks (outermost first, "path:function") → the phase and operation they show.
STACKS = [
    (["verl/workers/fsdp_workers.py:update_actor", "verl/workers/actor/dp_actor.py:update_policy"], "actor_update",
     None),
    (["verl/workers/fsdp_workers.py:compute_log_prob", "verl/utils/torch_functional.py:logprobs_from_logits"],
     "reference_logprob", "log-probabilities over the vocabulary"),
    (["verl/workers/fsdp_workers.py:compute_ref_log_prob", "transformers/models/qwen2/modeling_qwen2.py:forward"],
     "reference_logprob", None),
    (["verl/workers/fsdp_workers.py:generate_sequences", "vllm/entrypoints/llm.py:generate",
      "vllm/entrypoints/llm.py:_run_engine", "vllm/worker/model_runner.py:execute_model"], "rollout",
     "vLLM generation"),
    (["verl/workers/fsdp_workers.py:generate_sequences", "verl/workers/sharding_manager/fsdp_vllm.py:__enter__",
      "vllm/model_executor/models/qwen2.py:load_weights"], "weight_sync", None),
    (["verl/workers/megatron_workers.py:sync_rollout_weights", "torch/distributed/distributed_c10d.py:broadcast"],
     "weight_sync", None),
    (["verl/workers/rollout/vllm_rollout/vllm_async_server.py:wake_up", "vllm/device_allocator/cumem.py:wake_up"],
     "weight_sync", "vLLM wake-up"),
    (["trl/trainer/grpo_trainer.py:training_step", "trl/trainer/grpo_trainer.py:_prepare_inputs",
      "trl/trainer/grpo_trainer.py:_generate_and_score_completions", "trl/generation/vllm_generation.py:sync_weights"],
     "weight_sync", None),
    (["transformers/trainer.py:training_step", "trl/trainer/grpo_trainer.py:_generate_and_score_completions",
      "trl/trainer/grpo_trainer.py:_get_per_token_logps_and_entropies"], "reference_logprob",
     "log-probabilities over the vocabulary"),
    (["transformers/trainer.py:training_step", "trl/trainer/grpo_trainer.py:_generate_and_score_completions",
      "transformers/generation/utils.py:generate"], "rollout", None),
    (["transformers/trainer.py:training_step", "trl/trainer/grpo_trainer.py:compute_loss",
      "trl/trainer/grpo_trainer.py:_get_per_token_logps_and_entropies"], "actor_update",
     "log-probabilities over the vocabulary"),
    (["transformers/trainer.py:_inner_training_loop", "transformers/trainer.py:training_step",
      "transformers/models/llama/modeling_llama.py:forward"], "actor_update", None),
    (["transformers/trainer.py:training_step", "accelerate/accelerator.py:backward", "torch/_tensor.py:backward",
      "torch/autograd/__init__.py:backward", "torch/autograd/graph.py:_engine_run_backward"],
     "actor_update", "backward pass"),
    (["transformers/trainer.py:training_step", "deepspeed/runtime/zero/parameter_offload.py:_pre_forward_module_hook",
      "deepspeed/runtime/zero/partitioned_param_coordinator.py:fetch_sub_module",
      "deepspeed/runtime/zero/partition_parameters.py:all_gather_coalesced"], "actor_update",
     "ZeRO-3 parameter gather"),
    (["transformers/trainer.py:_inner_training_loop", "accelerate/optimizer.py:step", "torch/optim/adamw.py:adamw"],
     None, "optimizer step"),
    (["verl/trainer/ppo/ray_trainer.py:_validate", "verl/workers/fsdp_workers.py:generate_sequences"], "validation",
     None),
    (["verl/workers/fsdp_workers.py:init_model", "vllm/worker/worker.py:determine_num_available_blocks",
      "vllm/worker/model_runner.py:profile_run", "vllm/worker/model_runner.py:execute_model"], "initializing",
     "vLLM start-up"),
    (["trlx/trainer/accelerate_ppo_trainer.py:make_experience", "transformers/generation/utils.py:generate"],
     "rollout", None),
]  # fmt: skip


@pytest.mark.parametrize(("frames", "phase", "operation"), STACKS)
def test_the_phase_and_operation_from_the_stack(frames: list[str], phase: str | None, operation: str | None) -> None:
    """The message names no phase; the traceback's frames do (the innermost naming one decides, a frame that sets
    the context — validation, start-up, the weight sync — wins wherever it is)."""
    text = "Traceback (most recent call last):\n"
    for frame in frames:
        path, _, function = frame.partition(":")
        text += f'  File "/usr/lib/python3.11/site-packages/{path}", line 10, in {function}\n    x = f()\n'
    text += "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of "
    text += "79.19 GiB of which 50.00 MiB is free.\n"
    found = diagnose_text(text)
    assert (found.phase, found.operation) == (phase, operation)
    assert found.phase_basis == ("traceback frames" if phase else "not stated")


@pytest.mark.parametrize(
    ("task", "phase"),
    [
        ("WorkerDict.actor_rollout_update_actor", "actor_update"),
        ("WorkerDict.actor_rollout_compute_log_prob", "reference_logprob"),
        ("WorkerDict.ref_compute_ref_log_prob", "reference_logprob"),
        ("WorkerDict.actor_rollout_generate_sequences", "rollout"),
        ("WorkerDict.actor_rollout_init_model", "initializing"),
    ],
)
def test_the_phase_from_ray_task_names(task: str, phase: str) -> None:
    """Ray's task name places a device OOM (its RayTaskError line) and a host OOM (the killed task's name)."""
    device = diagnose_text(f"ray.exceptions.RayTaskError(OutOfMemoryError): ray::{task}() (pid=4, ip=10.0.0.2)\n")
    assert (device.memory, device.phase) == ("device", phase)
    host = diagnose_text(
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n"
        f"Memory on the node (IP: 10.0.0.2, ID: 7a) where the task (task ID: 1, name={task}, pid=4, memory used="
        "40.10GB) was running was 120.00GB / 125.00GB (0.96), which exceeds the memory usage threshold of 0.95.\n"
    )
    assert (host.memory, host.phase) == ("host", phase)


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
    assert free.fixes[0]["change"] == "0.3"
    assert free.headline().endswith("try `actor_rollout_ref.rollout.gpu_memory_utilization=0.3` (TRL: "
                                    "`vllm_gpu_memory_utilization=0.3`)")  # fmt: skip
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
    rollout = explain_failure(LOGS / "torch21_rollout.log", snapshot)  # the user's utilization is not known:
    first = rollout.fixes[0]  # the release's evidence, stated by its direction, in VERL's and TRL's keys
    assert first["to"] is None and first["change"] == "lower" and "(0.8 -> 0.7)" in first["why"]
    assert first["trl"] == "vllm_gpu_memory_utilization"
    assert "0.8" not in rollout.headline() and "->" not in rollout.headline()  # never the fix the answer leads with
    port = explain_failure(LOGS / "port_collision.log", snapshot)
    assert port.release is not None and port.release["counts"]["recorded_attempts"] == 35
    assert all(f["basis"] == "docs" for f in port.fixes)


def test_the_answer_leads_with_a_fix_the_log_allows(snapshot: Path) -> None:
    """With the release's evidence added, the answer still leads with a fix the log's stack and operation allow:
    not vLLM's sleep mode for a TRL run on DeepSpeed, nor for a failure of waking from it; a change the release
    measured from a value that may not be the user's is stated by its direction."""
    gather = explain_failure(LOGS / "deepspeed_zero3_gather.log", snapshot)
    assert not [f for f in gather.fixes if "free_cache_engine" in f["key"]]  # no sleep mode without vLLM
    assert "try `stage3_prefetch_bucket_size: lower" in gather.headline()
    wake = explain_failure(LOGS / "cumem_wake_up.log", snapshot)
    assert wake.headline().endswith(
        "try `actor_rollout_ref.rollout.gpu_memory_utilization: lower` (TRL: `vllm_gpu_memory_utilization: lower`)"
    )
    sync = explain_failure(LOGS / "torch25_weight_sync.log", snapshot)
    assert sync.headline().endswith(
        "try `actor_rollout_ref.rollout.free_cache_engine=True` (TRL: `vllm_enable_sleep_mode=True`)"
    )


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


# ---- fixes without a launch file: VERL's and TRL's spellings, the user's values only ----------------------------

#: TRL's own arguments a fix may name (TRL 1.16's GRPOConfig and transformers' TrainingArguments; accelerate's
#: num_processes), beside the spellings that name an accelerate or DeepSpeed config.
TRL_ARGUMENTS = {
    "vllm_gpu_memory_utilization", "vllm_enable_sleep_mode", "vllm_tensor_parallel_size", "vllm_max_model_length",
    "per_device_train_batch_size", "gradient_checkpointing", "steps_per_generation", "max_completion_length",
    "generation_batch_size", "ds3_gather_for_generation", "learning_rate", "max_grad_norm", "bf16", "num_processes",
    "dataloader_num_workers", "output_dir", "resume_from_checkpoint", "ddp_timeout", "beta",
}  # fmt: skip
VERL_SECTIONS = ("actor_rollout_ref.", "data.", "trainer.")


@pytest.mark.parametrize("name", sorted(n for n, e in EXPECTED.items() if e[0] != "no_failure"))
def test_fixes_in_both_spellings_and_the_users_values_only(name: str) -> None:
    found = diagnose_text(read_log(LOGS / name))
    assert found.fixes
    for fix in found.fixes:
        assert fix["key"] and fix["change"] and fix["why"] and "->" not in fix["change"]
        assert fix["key"] in (fix["verl"], fix["trl"]) or not fix["verl"]
        if fix["verl"]:
            assert fix["verl"].startswith(VERL_SECTIONS), fix
        trl = fix["trl"]
        if trl and re.fullmatch(r"[a-z_0-9]+", trl.split(" (")[0].split("=")[0]):
            assert trl.split(" (")[0].split("=")[0] in TRL_ARGUMENTS, fix
    if found.is_memory and found.memory == "device":
        first = next(f for f in found.fixes if f["basis"] != "release" or f.get("to") is not None)
        assert "(TRL: `" in found.headline() or first["trl"] in (None, first["key"])


def _keys(name: str) -> list[str]:
    return [f["key"] for f in diagnose_text(read_log(LOGS / name)).fixes]


def test_each_operation_gets_the_remedies_that_worked() -> None:
    wake = diagnose_text(read_log(LOGS / "cumem_wake_up.log"))  # lower vLLM's share; put the actor away first
    assert wake.fixes[0]["key"] == "actor_rollout_ref.rollout.gpu_memory_utilization"
    assert wake.fixes[0]["trl"] == "vllm_gpu_memory_utilization" and wake.fixes[0]["change"] == "lower"
    assert "actor_rollout_ref.actor.fsdp_config.param_offload" in _keys("cumem_wake_up.log")
    assert wake.headline().endswith("(TRL: `vllm_gpu_memory_utilization: lower`)")
    gather = diagnose_text(read_log(LOGS / "deepspeed_zero3_gather.log"))  # smaller ZeRO-3 buckets
    assert [f["key"] for f in gather.fixes[:3]] == [
        "stage3_prefetch_bucket_size", "stage3_max_live_parameters", "stage3_param_persistence_threshold"
    ]  # fmt: skip
    assert all("DeepSpeed config" in f["trl"] and f["verl"] is None for f in gather.fixes[:3])
    generate = diagnose_text(read_log(LOGS / "trl_zero3_generate.log"))  # TRL gathers the whole policy to generate
    assert generate.headline().endswith("try `ds3_gather_for_generation=False`")
    host = _keys("ray_host_oom.log")  # more host memory, fewer workers per node, Ray's threshold
    assert host[0].startswith("the job's host memory") and "RAY_memory_usage_threshold" in host
    assert "trainer.n_gpus_per_node" in host and not [k for k in host if "utilization" in k or "micro_batch" in k]
    for name in ("xpu_generate.log", "hip_backward.log", "host_cpu_allocator.log"):  # no vLLM in these runs
        assert not [k for k in _keys(name) if "gpu_memory_utilization" in k or "free_cache_engine" in k], name
    assert _keys("xpu_generate.log")[0] == "data.max_response_length"  # generate()'s KV cache: shorter responses
    assert "actor_rollout_ref.rollout.gpu_memory_utilization" in _keys("ray_task_oom_only.log")  # VERL runs vLLM
    looks = _keys("ray_worker_died.log")
    assert looks[0].startswith("dmesg") and looks[1].startswith("ray logs raylet.out")


# ---- input: empty, binary, any size, any name -------------------------------------------------------------------


def test_empty_and_blank_logs_are_refused_in_one_line(
    snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for content in (b"", b"\n \n\t\r\n"):
        log = tmp_path / "empty.log"
        log.write_bytes(content)
        assert main(["--source", str(snapshot), "estimate", "advise", "--log", str(log)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and ("is empty" in err[0] or "holds no text" in err[0]), err
    command = [sys.executable, "-m", "rlvrambench_hf", "--source", str(snapshot), "estimate", "advise", "--log", "-"]
    done = subprocess.run(command, input="", capture_output=True, text=True, env=cli_env(), timeout=300)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == ["rlvrambench: error: log (standard input) is empty: there is no log "
                                                "text to read"]  # fmt: skip


def test_binary_noise_and_binary_data(tmp_path: Path) -> None:
    noisy = tmp_path / "noisy.log"  # stray undecodable bytes (a progress bar cut mid-character) do not matter
    noisy.write_bytes(b"step:1 \xe2\x96\x8f\x80\xff loss:0.1\n" * 50 + (LOGS / "torch20_actor_update.log").read_bytes())
    assert diagnose_text(read_log(noisy)).failure_class == "actor_update_oom"
    tail = tmp_path / "tail.log"  # a NUL byte in the part read at the end is binary data, refused
    tail.write_bytes((LOGS / "torch20_actor_update.log").read_bytes() + b"\x00\x00core dump\n")
    with pytest.raises(InputError, match="binary data"):
        read_log(tail)


def _big(path: Path, mib: int) -> Path:
    line = b"(WorkerDict pid=1) step:1 - actor/pg_loss:0.0132 - perf/max_memory_allocated_gb:31.2 - timing_s/gen:41.2\n"
    with path.open("wb") as handle:
        handle.write((LOGS / "healthy_run.log").read_bytes())  # vLLM's start-up figures, in the first MiB
        handle.write(line * (mib * 2**20 // len(line)))
        handle.write((LOGS / "torch20_actor_update.log").read_bytes())  # the failure, at the end
    return path


def test_a_large_log_is_read_at_both_ends(tmp_path: Path) -> None:
    log = _big(tmp_path / "big.log", 50)
    text = read_log(log)
    assert text.cut and len(text.text) < 33 * 2**20 and text.skipped == text.size - (33 << 20)
    assert "its first 1 MiB and last 32 MiB read" in text.note and "MiB between them skipped" in text.note
    found = diagnose_text(text)
    assert found.failure_class == "actor_update_oom" and found.log_skipped_bytes == text.skipped
    assert {n.name for n in found.numbers} >= {"tried_to_allocate", "vllm_weights"}  # both ends were read
    streamed = log_text(log.read_bytes(), "log (standard input)")
    assert diagnose_text(streamed).as_dict() == found.as_dict()


def test_a_100_mb_log_from_a_file_and_from_a_pipe(snapshot: Path, tmp_path: Path) -> None:
    """A 100 MB log is answered from a file and from standard input, in bounded memory: its peak RSS is within
    200 MiB of a small log's (what is read is its first and last MiB, never the whole)."""
    big = _big(tmp_path / "train.log", 100)
    command = [sys.executable, "-m", "rlvrambench_hf", "--source", str(snapshot), "estimate", "advise", "--log"]

    def run(arg: str, feed: Path | None) -> tuple[int, str, int]:
        out = tmp_path / f"out-{arg == '-'}.txt"
        with out.open("wb") as handle:
            stdin = subprocess.PIPE if feed else subprocess.DEVNULL
            child = subprocess.Popen(
                [*command, arg], stdin=stdin, stdout=handle, stderr=subprocess.STDOUT, env=cli_env()
            )
            if feed is not None:

                def write() -> None:
                    assert child.stdin is not None
                    with feed.open("rb") as source:
                        while chunk := source.read(1 << 20):
                            child.stdin.write(chunk)
                    child.stdin.close()

                writer = threading.Thread(target=write)
                writer.start()
            _, status, usage = os.wait4(child.pid, 0)
            if feed is not None:
                writer.join()
        return os.waitstatus_to_exitcode(status), out.read_text(), usage.ru_maxrss // 1024

    small = run(str(LOGS / "torch20_actor_update.log"), None)
    for arg, feed in ((str(big), None), ("-", big)):
        status, printed, rss = run(arg, feed)
        assert status == 0, printed
        assert printed.startswith("memory failure in actor_update (actor_update_oom)")
        assert "log: 100.0 MiB; its first 1 MiB and last 32 MiB read, 67.0 MiB between them skipped" in printed
        assert rss - small[2] < 200, (rss, small[2])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_answer_never_depends_on_the_logs_name(name: str, tmp_path: Path) -> None:
    """The same content under another name, in another folder, and through standard input, gives the same answer."""
    content = (LOGS / name).read_bytes()
    other = tmp_path / "weight_sync_oom" / "rollout_oom.txt"  # a name that says something else
    other.parent.mkdir()
    other.write_bytes(content)
    answers = [
        diagnose_text(read_log(LOGS / name)).as_dict(),
        diagnose_text(read_log(other)).as_dict(),
        diagnose_text(log_text(content, "log (standard input)")).as_dict(),
    ]
    assert answers[0] == answers[1] == answers[2]
    assert name not in json.dumps(answers[0]) and "rollout_oom.txt" not in json.dumps(answers[1])


def test_standard_input_on_the_command_line(snapshot: Path, tmp_path: Path) -> None:
    """``--log -`` reads the log piped in (the process boundary is what is tested): the same answer as the file's."""
    command = [sys.executable, "-m", "rlvrambench_hf", "--source", str(snapshot), "estimate", "advise"]
    log = (LOGS / "vllm_kv_cache_v0.log").read_text()
    piped = tmp_path / "piped.json"
    done = subprocess.run(
        [*command, "--log", "-", "--output", str(piped)], input=log, capture_output=True, text=True, env=cli_env(),
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("memory failure in initializing (rollout_init_memory)")
    assert json.loads(piped.read_text())["diagnosis"]["numbers"][1] == {
        "name": "kv_cache_tokens", "value": 912.0, "unit": "tokens", "written": "912"
    }  # fmt: skip
    named = tmp_path / "named.json"
    from_file = subprocess.run(
        [*command, "--log", str(LOGS / "vllm_kv_cache_v0.log"), "--output", str(named)], capture_output=True,
        text=True, env=cli_env(), timeout=300,
    )  # fmt: skip
    assert from_file.stdout == done.stdout and named.read_text() == piped.read_text()


# ---- secrets ----------------------------------------------------------------------------------------------------

#: A credential of each common shape (made up, of the right form), and what must never be printed of it.
SECRETS = {
    "Hugging Face": ("with token hf_Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9", "Zx9Zx9Zx9Zx9"),
    "OpenAI": ("OPENAI_API_KEY=sk-proj-Q2mX8vR4tY7uI0oP3aS6dF9gH1jK5lZ8", "Q2mX8vR4tY7u"),
    "OpenAI, bare": ("using key sk-Q2mX8vR4tY7uI0oP3aS6dF9gH1jK5lZ8xC", "Q2mX8vR4tY7u"),
    "Anthropic": ("client = Anthropic(api_key='sk-ant-api03-Wq1Er2Ty3Ui4Op5As6Df7Gh8Jk9-Lz0')", "Wq1Er2Ty3Ui4"),
    "GitHub classic": ("git clone with ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "a1B2c3D4e5F6"),
    "GitHub fine-grained": ("GH token github_pat_11ABCDEFG0a1B2c3D4e5F6_g7H8i9J0k1L2m3N4o5P6", "a1B2c3D4e5F6"),
    "GitHub Actions": ("GITHUB_TOKEN ghs_Zq8Xw7Cv6Bn5Mm4Ll3Kk2Jj1Hh0Gg9Ff8Ee", "Zq8Xw7Cv6Bn5"),
    "AWS key id": ("aws key AKIAQ3EGUPD7RKXXN2VB in use", "UPD7RKXXN2VB"),
    "AWS secret": ("aws_secret_access_key = 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", "9fJ3kL0pQ2wE"),
    "Slack": ("posting to xoxb-918273645012-9182736450123-QwErTyUiOpAsDfGhJkLzXc", "QwErTyUiOpAs"),
    "W&B": ("export WANDB_API_KEY=0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c", "0f1e2d3c4b5a6978"),
    "Google": ("GEMINI key AIzaSyD4f5G6h7J8k9L0zXcVbNmQwErTyUiOpAs", "SyD4f5G6h7J8"),
    "JWT": ("cookie eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyb290In0.Xk4mQ9vB2nL7pR0sT3wY6zA1cE5gH8jK", "Xk4mQ9vB2nL7"),
    "Bearer": ("Authorization: Bearer Pq7Rs8Tu9Vw0Xy1Za2Bc3De4", "Pq7Rs8Tu9Vw0"),
    "URL user-info": ("fetching https://alice:Hunter2Hunter2@mirror.example/models", "Hunter2Hunter2"),
    "generic *_TOKEN=": ("MY_SERVICE_TOKEN=Lq3Wd8Jk2Pz7Xv5Nm1Bc4 python3 train.py", "Lq3Wd8Jk2Pz7"),
    "generic *_SECRET=": ("CLIENT_SECRET=Fh4Gj5Hk6Jl7Kz8Lx9 and DB_PASSWORD=Pw0rdPw0rdPw0rd", "Fh4Gj5Hk6Jl7"),
    "PASSWORD=": ("PASSWORD=Pw0rdPw0rdPw0rd ./run.sh", "Pw0rdPw0rdPw0rd"),
}  # fmt: skip


@pytest.mark.parametrize("shape", sorted(SECRETS))
def test_redaction_of_every_token_shape(shape: str) -> None:
    text, secret = SECRETS[shape]
    assert secret in text and secret not in redact(text) and "***" in redact(text)


def test_no_secret_in_any_output(snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every excerpt the answer echoes is redacted, whatever service the credential belongs to."""
    lines = [f"RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 39.39 GiB total capacity; "
             f"38.10 GiB already allocated; 5.19 MiB free; 38.60 GiB reserved in total by PyTorch) {text}"
             for text, _ in SECRETS.values()]  # fmt: skip
    log = tmp_path / "secret.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/opt/verl/verl/workers/fsdp_workers.py", line 611, in update_actor\n' + "\n".join(lines) + "\n"
        "ray.exceptions.ActorDiedError: The actor died. " + " ".join(t for t, _ in SECRETS.values()) + "\n"
    )
    out = tmp_path / "answer.json"
    status = main(["--source", str(snapshot), "estimate", "advise", "--log", str(log), "--output", str(out)])
    printed = capsys.readouterr()
    written = out.read_text()
    assert status == 0 and printed.out.splitlines()[0].startswith("memory failure in actor_update (actor_update_oom)")
    for text in (printed.out, printed.err, written):
        for shape, (_, secret) in SECRETS.items():
            assert secret not in text, shape
    answer = json.loads(written)["diagnosis"]
    assert answer["failure_class"] == "actor_update_oom" and "***" in answer["message"]["excerpt"]


def test_command_line_errors(snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    garbage = tmp_path / "garbage.log"
    garbage.write_bytes(b"\x00\x01\x02" * 1000)
    assert main(["--source", str(snapshot), "estimate", "advise", "--log", str(garbage)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "binary data" in err[0]
    assert main(["--source", str(snapshot), "estimate", "advise", "--log", str(garbage), "--output", "a.csv"]) == 2
    assert main(["--source", str(snapshot), "estimate", "advise"]) == 2
    assert "--log" in capsys.readouterr().err
