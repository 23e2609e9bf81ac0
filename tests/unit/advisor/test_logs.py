"""Failure logs diagnosed from their text alone (``diagnose_text``, read through its JSON ``as_dict``): each
family in the shapes its versions print — PyTorch's CUDA OOM (1.x-2.0, 2.1, 2.5), vLLM's KV-cache and free-memory
start-up checks, Ray's host OOM, the kernel's OOM killer, NCCL — and failures that are not about memory, with their
phase from the traceback, their figures in MiB, the device their total names and the fixes their figures give."""

from __future__ import annotations

import pytest

from rlvrambench_hf.advisor import diagnose_text
from rlvrambench_hf.errors import InputError

pytestmark = pytest.mark.unit

GIB = 1024.0
RAY = "(WorkerDict pid=31337) "

TORCH_20_UPDATE = """\
(main_task pid=2101) step:7 - timing_s/gen:38.5 - timing_s/ref:5.9
Traceback (most recent call last):
  File "/workspace/verl/verl/trainer/ppo/ray_trainer.py", line 1104, in fit
    actor_output = self.actor_rollout_wg.update_actor(batch)
ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_rollout_update_actor() (pid=2240, ip=10.0.3.4)
  File "/workspace/verl/verl/workers/fsdp_workers.py", line 640, in update_actor
    metrics = self.actor.update_policy(data=data)
  File "/workspace/verl/verl/workers/actor/dp_actor.py", line 410, in update_policy
    loss.backward()
torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB (GPU 1; 39.50 GiB total capacity; \
35.00 GiB already allocated; 1.25 GiB free; 37.00 GiB reserved in total by PyTorch) If reserved memory is >> \
allocated memory try setting max_split_size_mb to avoid fragmentation.
"""
TORCH_21_ROLLOUT = f"""\
{RAY}Traceback (most recent call last):
{RAY}  File "/opt/verl/verl/workers/fsdp_workers.py", line 812, in generate_sequences
{RAY}    output = self.rollout.generate_sequences(prompts=prompts)
{RAY}  File "/opt/venv/lib/python3.10/site-packages/vllm/worker/model_runner.py", line 1690, in execute_model
{RAY}    logits = self.model.compute_logits(hidden_states, sampling_metadata)
{RAY}torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacty of \
79.10 GiB of which 800.00 MiB is free. Process 4242 has 20.00 GiB memory in use. Including non-PyTorch memory, this \
process has 58.00 GiB memory in use. Of the allocated memory 52.50 GiB is allocated by PyTorch, and 2.00 GiB is \
reserved by PyTorch but unallocated.
"""
TORCH_25_SYNC = f"""\
{RAY}[rank0]: Traceback (most recent call last):
{RAY}  File "/opt/verl/verl/workers/sharding_manager/fsdp_vllm.py", line 140, in __enter__
{RAY}    params = self.collect_lora_params()
{RAY}  File "/opt/verl/verl/workers/sharding_manager/fsdp_vllm.py", line 121, in collect_lora_params
{RAY}    with FSDP.summon_full_params(self.module, writeback=False):
{RAY}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB. GPU 0 has a total capacity of 39.38 GiB \
of which 3.00 GiB is free. Including non-PyTorch memory, this process has 36.25 GiB memory in use. Of the allocated \
memory 33.00 GiB is allocated by PyTorch, with 512.00 MiB allocated in private pools (e.g., CUDA Graphs), and 1.50 GiB \
is reserved by PyTorch but unallocated.
"""
TRL_LOGPROB = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/usr/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1230, in \
_generate_and_score_completions
[rank1]:     ref_logps = self._get_per_token_logps(self.ref_model, ids, mask, logits_to_keep)
[rank1]:   File "/usr/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 801, in _get_per_token_logps
[rank1]:     return selective_log_softmax(logits, input_ids)
[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 1 has a total capacity of 22.05 \
GiB of which 1.00 GiB is free. Including non-PyTorch memory, this process has 22.50 GiB memory in use. Of the \
allocated memory 20.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.
"""
VLLM_KV_V0 = """\
INFO 02-03 10:00:01 worker.py:270] the current vLLM instance can use total_gpu_memory (39.38GiB) x \
gpu_memory_utilization (0.30) = 11.81GiB
INFO 02-03 10:00:01 worker.py:270] model weights take 11.50GiB; non_torch_memory takes 0.10GiB; PyTorch activation \
peak memory takes 0.15GiB; the rest of the memory reserved for KV Cache is 0.06GiB.
Traceback (most recent call last):
  File "/opt/venv/lib/python3.10/site-packages/vllm/engine/llm_engine.py", line 440, in _initialize_kv_caches
    self.model_executor.initialize_cache(num_gpu_blocks, num_cpu_blocks)
ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV \
cache (1104). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.
"""
VLLM_KV_V1 = """\
(EngineCore_0 pid=5120) INFO 10-01 12:00:00 [gpu_worker.py:280] Available KV cache memory: 2.10 GiB
(EngineCore_0 pid=5120) ERROR 10-01 12:00:00 [core.py:710] EngineCore failed to start.
(EngineCore_0 pid=5120) ERROR 10-01 12:00:00 [core.py:710]   File "/opt/venv/lib/python3.12/site-packages/vllm/v1/\
engine/core.py", line 90, in __init__
(EngineCore_0 pid=5120) ERROR 10-01 12:00:00 [core.py:710]     self._initialize_kv_caches(vllm_config)
(EngineCore_0 pid=5120) ERROR 10-01 12:00:00 [core.py:710] ValueError: To serve at least one request with the \
models's max seq len (131072), (4.00 GiB KV cache is needed, which is larger than the available KV cache memory \
(2.10 GiB). Based on the available memory, the estimated maximum model length is 68800. Try increasing \
`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.
"""
VLLM_FREE = f"""\
{RAY}Traceback (most recent call last):
{RAY}  File "/opt/verl/verl/workers/fsdp_workers.py", line 520, in init_model
{RAY}    self.rollout = self._build_rollout(trust_remote_code=True)
{RAY}  File "/opt/venv/lib/python3.10/site-packages/vllm/worker/worker.py", line 160, in init_device
{RAY}    raise ValueError(
{RAY}ValueError: Free memory on device (20.00/40.00 GiB) on startup is less than desired GPU memory utilization \
(0.7, 28.00 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.
"""
VLLM_NO_BLOCKS = """\
INFO 03-09 08:00:00 worker.py:240] Memory profiling results: total_gpu_memory=39.38GiB kv_cache_size=-2.50GiB \
gpu_memory_utilization=0.35
ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the \
engine.
"""
RAY_HOST = """\
Traceback (most recent call last):
  File "/opt/verl/verl/trainer/main_ppo.py", line 50, in main
    run_ppo(config)
ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.
Memory on the node (IP: 10.2.0.9, ID: 77aa) where the task (actor ID: 12ab, name=WorkerDict.__init__, pid=4401, \
memory used=48.00GB) was running was 240.00GB / 250.00GB (0.96), which exceeds the memory usage threshold of 0.95. \
Ray killed this worker (ID: 88bb) because it was the most recently scheduled task.
(TaskRunner pid=99) [rank0]:[E1201 09:00:00.000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective \
operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600100 \
milliseconds before timing out.
"""
KERNEL = """\
[Mon Dec  1 02:00:00 2025] python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE), order=0
[Mon Dec  1 02:00:00 2025] Memory cgroup out of memory: Killed process 5151 (python3) total-vm:104857600kB, \
anon-rss:83886080kB, file-rss:524288kB, shmem-rss:0kB, UID:1000 pgtables:200000kB oom_score_adj:0
slurmstepd: error: Detected 1 oom_kill event in StepId=777.0. Some of the step tasks have been OOM Killed.
"""
NCCL_TIMEOUT = f"""\
{RAY}step:40 - actor/pg_loss:0.02
{RAY}[rank1]:[E1202 11:00:00.000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: \
WorkNCCL(SeqNum=900, OpType=_ALLGATHER_BASE, NumelIn=1024, NumelOut=2048, Timeout(ms)=1800000) ran for 1800123 \
milliseconds before timing out.
ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
"""
NCCL_CUDA_OOM = """\
gpu03:100:200 [0] include/alloc.h:125 NCCL WARN Cuda failure 'out of memory'
Traceback (most recent call last):
  File "/opt/verl/verl/workers/actor/dp_actor.py", line 410, in update_policy
    loss.backward()
torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with \
NCCL_DEBUG=INFO for details), NCCL version 2.21.5
"""
CONFIG = """\
Error executing job with overrides: ['data.train_batch_size=30', 'trainer.n_gpus_per_node=4']
Traceback (most recent call last):
  File "/opt/verl/verl/utils/config.py", line 130, in validate_config
    assert real_train_batch_size % minimal_bsz == 0, (
AssertionError: real_train_batch_size (30) must be divisible by minimal possible batch size (4)
"""
PORT = """\
torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: \
29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use
"""
ENVIRONMENT = """\
Traceback (most recent call last):
  File "/opt/verl/verl/trainer/main_ppo.py", line 20, in <module>
    import flash_attn
ModuleNotFoundError: No module named 'flash_attn'
"""
RUNTIME = """\
Traceback (most recent call last):
  File "/opt/verl/verl/utils/dataset/rl_dataset.py", line 120, in __getitem__
    raise KeyError(key)
KeyError: 'prompt'
"""

#: log → (failure class, memory kind, phase)
FAMILIES = {
    "torch 2.0 actor update": (TORCH_20_UPDATE, "actor_update_oom", "device", "actor_update"),
    "torch 2.1 rollout": (TORCH_21_ROLLOUT, "rollout_oom", "device", "rollout"),
    "torch 2.5 weight sync": (TORCH_25_SYNC, "weight_sync_oom", "device", "weight_sync"),
    "trl log-probabilities": (TRL_LOGPROB, "cuda_oom", "device", "reference_logprob"),
    "vllm kv cache v0": (VLLM_KV_V0, "rollout_init_memory", "device", "initializing"),
    "vllm kv cache v1": (VLLM_KV_V1, "rollout_init_memory", "device", "initializing"),
    "vllm free memory": (VLLM_FREE, "rollout_init_memory", "device", "initializing"),
    "vllm no cache blocks": (VLLM_NO_BLOCKS, "rollout_init_memory", "device", "initializing"),
    "ray host oom": (RAY_HOST, "vllm_executor_failure", "host", "initializing"),  # Ray names the killed task
    "kernel oom killer": (KERNEL, "vllm_executor_failure", "host", None),
    "nccl cuda failure": (NCCL_CUDA_OOM, "actor_update_oom", "device", "actor_update"),
    "nccl timeout": (NCCL_TIMEOUT, "nccl", None, None),
    "verl configuration": (CONFIG, "configuration", None, None),
    "port collision": (PORT, "distributed_port_collision", None, None),
    "environment": (ENVIRONMENT, "environment", None, None),
    "another error": (RUNTIME, "runtime", None, None),
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_each_family_is_its_failure_class_memory_kind_and_phase(family):
    text, failure_class, memory, phase = FAMILIES[family]
    found = diagnose_text(text).as_dict()
    assert (found["failure_class"], found["memory"], found["phase"]) == (failure_class, memory, phase)
    assert "\n" not in found["headline"] and found["headline"]
    if memory == "host":
        assert "not a device OOM" in found["headline"]
    elif memory is None:
        assert found["headline"].startswith("not a memory failure: ") and f"({failure_class})" in found["headline"]
    else:
        assert found["headline"].startswith("memory failure")
    assert found["fixes"], family  # every class has documented fixes


def figures(text: str) -> dict[str, float]:
    return {n["name"]: n["value"] for n in diagnose_text(text).as_dict()["numbers"]}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (TORCH_20_UPDATE, {"tried_to_allocate": 2.5 * GIB, "total_capacity": 39.5 * GIB, "free": 1.25 * GIB,
                           "allocated_by_pytorch": 35 * GIB, "reserved_by_pytorch": 37 * GIB}),
        (TORCH_21_ROLLOUT, {"tried_to_allocate": 1.5 * GIB, "total_capacity": 79.1 * GIB, "free": 800.0,
                            "process_in_use": 58 * GIB, "allocated_by_pytorch": 52.5 * GIB,
                            "reserved_unallocated": 2 * GIB, "other_processes_in_use": 20 * GIB}),
        (TORCH_25_SYNC, {"tried_to_allocate": 6 * GIB, "total_capacity": 39.38 * GIB, "free": 3 * GIB,
                         "private_pools": 512.0, "reserved_unallocated": 1.5 * GIB}),
        (VLLM_KV_V0, {"max_model_len": 32768, "kv_cache_tokens": 1104, "kv_cache_reserved": 0.06 * GIB,
                      "vllm_weights": 11.5 * GIB}),
        (VLLM_KV_V1, {"max_model_len": 131072, "kv_cache_needed": 4 * GIB, "kv_cache_available": 2.1 * GIB,
                      "estimated_max_model_len": 68800}),
        (VLLM_FREE, {"free_at_startup": 20 * GIB, "total_capacity": 40 * GIB, "gpu_memory_utilization": 0.7,
                     "vllm_budget": 28 * GIB}),
        (RAY_HOST, {"host_used": 240 * GIB, "host_total": 250 * GIB, "ray_memory_threshold": 0.95,
                    "killed_worker_used": 48 * GIB}),
        (KERNEL, {"anon_rss": 83886080 / 1024, "total_vm": 104857600 / 1024, "file_rss": 524288 / 1024}),
    ],
)  # fmt: skip
def test_the_figures_a_message_states_are_read_in_mib(text, expected):
    found = figures(text)
    assert {k: found.get(k) for k in expected} == pytest.approx(expected, abs=0.11)


def test_the_nccl_watchdogs_figures_are_its_timeout_and_how_long_the_collective_ran():
    others = diagnose_text(NCCL_TIMEOUT).as_dict()
    assert others["message"]["family"] == "nccl_timeout"
    numbers = {n["name"]: (n["value"], n["unit"]) for n in others["numbers"]}
    assert numbers == {"timeout_ms": (1800000, "ms"), "ran_for_ms": (1800123, "ms")}


@pytest.mark.parametrize(
    ("text", "candidates", "measured"),
    [
        (TORCH_20_UPDATE, ["A100 40GB"], True),
        (TORCH_21_ROLLOUT, ["H100 80GB", "A100 80GB"], False),
        (TRL_LOGPROB, ["L4", "A10G", "A10"], False),
    ],
)
def test_the_total_a_log_states_names_the_devices_it_can_be(text, candidates, measured):
    device = diagnose_text(text).as_dict()["device"]
    assert sorted(device["candidates"]) == sorted(candidates) and device["measured"] is measured


def test_the_root_cause_is_the_memory_message_not_the_timeout_or_lost_worker_that_follow():
    log = TORCH_20_UPDATE + NCCL_TIMEOUT
    found = diagnose_text(log).as_dict()
    assert (found["failure_class"], found["message"]["family"]) == ("actor_update_oom", "torch_oom")
    assert {s["family"] for s in found["also_in_log"]} >= {"nccl_timeout", "ray_worker_lost"}
    host = diagnose_text(RAY_HOST).as_dict()
    assert host["message"]["family"] == "ray_host_oom" and host["memory"] == "host"
    assert any(s["family"] == "nccl_timeout" for s in host["also_in_log"])


def test_a_kv_cache_too_small_is_fixed_first_by_the_length_the_log_says_fits():
    found = diagnose_text(VLLM_KV_V1).as_dict()
    first = found["fixes"][0]
    assert (first["key"], first["change"], first["basis"]) == (
        "actor_rollout_ref.rollout.max_model_len",
        "68800",
        "log",
    )
    assert first["trl"] == "vllm_max_model_length"
    old = diagnose_text(VLLM_KV_V0).as_dict()["fixes"][0]
    assert (old["change"], old["basis"]) == ("1104", "log")
    # a larger vLLM share is a fix of a short KV cache, never a smaller one
    changes = [f["change"] for f in found["fixes"] if f["key"] == "actor_rollout_ref.rollout.gpu_memory_utilization"]
    assert changes and not any(c.startswith("lower") for c in changes)


def test_vllms_start_up_check_is_fixed_by_a_share_below_what_was_free():
    found = diagnose_text(VLLM_FREE).as_dict()
    first = found["fixes"][0]
    assert (first["key"], first["basis"]) == ("actor_rollout_ref.rollout.gpu_memory_utilization", "log")
    assert float(first["change"]) < 20 / 40  # half the device was free when vLLM started
    assert float(first["change"]) == 0.45


def test_terminal_colours_and_ray_prefixes_do_not_matter():
    coloured = "\x1b[36m" + TORCH_25_SYNC.replace("Tried", "\x1b[0mTried")
    plain = diagnose_text(TORCH_25_SYNC).as_dict()
    found = diagnose_text(coloured).as_dict()
    assert (found["failure_class"], found["phase"]) == (plain["failure_class"], plain["phase"])
    assert figures(coloured) == figures(TORCH_25_SYNC)


def test_a_log_without_a_failure_says_so():
    found = diagnose_text("step:1 - reward:0.5\nstep:2 - reward:0.6\nTraining finished.\n").as_dict()
    assert found["failure_class"] is None and found["fixes"] == []
    assert found["headline"].startswith("no failure message recognised")
    with pytest.raises(InputError, match="log is empty"):  # no text at all is no log, not a log without failure
        diagnose_text("")


def test_the_message_line_and_excerpt_point_into_the_log():
    found = diagnose_text(TORCH_20_UPDATE).as_dict()["message"]
    lines = TORCH_20_UPDATE.split("\n")
    assert lines[found["line"] - 1].startswith("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried")
    assert found["excerpt"].startswith("torch.cuda.OutOfMemoryError") and len(found["excerpt"]) <= 240
    assert (found["family"], found["source"]) == ("torch_oom", "PyTorch")
