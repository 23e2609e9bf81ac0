"""The figures of a failure log's messages (pure over text): what PyTorch's out-of-memory sentence states (every
version's and backend's wording, and the cudaMallocAsync backend's table), vLLM's start-up, KV-cache and sleep-mode
figures, Ray's memory monitor, the kernel's OOM killer, the host allocators and NCCL's watchdog, converted to MiB
(tokens, fractions, counts and milliseconds kept in their own units). Read case-insensitively."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

NUMBER = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
UNIT = r"(bytes|B|KiB|MiB|GiB|TiB|kB|KB|MB|GB|TB)"
_BYTES = {"bytes": 1, "b": 1, "kib": 1 << 10, "kb": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
_BYTES |= {"mb": 10**6, "gb": 10**9, "tb": 10**12}
_I = re.IGNORECASE


@dataclass(frozen=True)
class Number:
    """A figure a log states: ``name`` (what it is), ``value`` in ``unit`` (MiB for memory), as ``written``."""

    name: str
    value: float
    unit: str
    written: str

    def as_dict(self) -> dict[str, Any]:
        value = round(self.value, 1 if self.unit == "MiB" else 4)
        return {"name": self.name, "value": value, "unit": self.unit, "written": self.written}


_FLOAT = r"([0-9]+(?:\.[0-9]+)?)"
# vLLM 0.6 and later ("Free memory on device cuda:0 (…)" in 0.11 and later)
VLLM_FREE = re.compile(
    rf"Free memory on device(?: [\w:]+)? \({_FLOAT}/{_FLOAT} GiB\) on startup is less than desired GPU memory "
    rf"utilization \({_FLOAT}, {_FLOAT} GiB\)",
    _I,
)
# vLLM's V0 engine, then V1's (0.8 and later; the estimated length since 0.8.5)
KV_OLD = re.compile(
    r"The model's max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in KV "
    r"cache \((\d+)\)",
    _I,
)
KV_NEW = re.compile(
    r"To serve at least one request with the models?'s max seq len \((\d+)\), \(([0-9]+(?:\.[0-9]+)?) GiB KV cache is "
    r"needed, which is larger than the available KV cache memory \((-?[0-9]+(?:\.[0-9]+)?) GiB\)(?:\. Based on the "
    r"available memory, the estimated maximum model length is (\d+))?",
    _I,
)


def to_mib(value: str, unit: str) -> float:
    return float(value.replace(",", "")) * _BYTES[unit.lower()] / 2**20


def numbers_of(family: str, line: str, following: str = "") -> Iterator[Number]:
    """The figures of one failure line (and of the ``following`` lines that continue its message), memory in MiB."""
    reader = _READERS.get(family)
    if reader is not None:
        yield from reader(line, following)


def _mib(name: str, value: str, unit: str) -> Number:
    return Number(name, to_mib(value, unit), "MiB", f"{value} {unit}")


_TORCH_NEW = (
    ("tried_to_allocate", rf"Tried to allocate {NUMBER} ?{UNIT}"),
    ("total_capacity", rf"total capac\w* of {NUMBER} ?{UNIT}"),
    ("free", rf"of which {NUMBER} ?{UNIT} is free"),
    ("process_in_use", rf"this process has {NUMBER} ?{UNIT} memory in use"),
    ("allocated_by_pytorch", rf"Of the allocated memory {NUMBER} ?{UNIT} is allocated by PyTorch"),
    ("private_pools", rf"with {NUMBER} ?{UNIT} allocated in private pools"),
    ("reserved_unallocated", rf"and {NUMBER} ?{UNIT} is reserved by PyTorch but unallocated"),
)
_TORCH_OLD = {
    "total capacity": "total_capacity",
    "already allocated": "allocated_by_pytorch",
    "free": "free",
    "allowed": "allowed",
    "cached": "reserved_by_pytorch",
    "reserved in total by pytorch": "reserved_by_pytorch",
}
# the cudaMallocAsync backend's table (its rows on the lines after "would exceed allowed memory")
_ASYNC = (
    ("tried_to_allocate", rf"Requested\s*:\s*{NUMBER} ?{UNIT}"),
    ("total_capacity", rf"Device limit\s*:\s*{NUMBER} ?{UNIT}"),
    ("free", rf"Free \(according to CUDA\)\s*:\s*{NUMBER} ?{UNIT}"),
    ("allocated_by_pytorch", rf"Currently allocated\s*:\s*{NUMBER} ?{UNIT}"),
)
# MPS: "(MPS allocated: 17.90 GB, other allocations: 1.02 GB, max allowed: 18.13 GB). Tried to allocate 256.00 MB"
_MPS = (
    ("allocated_by_pytorch", rf"MPS allocated: {NUMBER} ?{UNIT}"),
    ("other_allocations", rf"other allocations: {NUMBER} ?{UNIT}"),
    ("allowed", rf"max allowed: {NUMBER} ?{UNIT}"),
)


def _searched(pairs: tuple[tuple[str, str], ...], text: str, seen: set[str], binary: bool = False) -> Iterator[Number]:
    for name, pattern in pairs:
        match = re.search(pattern, text, _I)
        if match and name not in seen:
            seen.add(name)
            unit = match.group(2)
            yield _mib(name, match.group(1), unit.replace("B", "iB") if binary and unit in ("MB", "GB") else unit)


def _torch_numbers(line: str, following: str) -> Iterator[Number]:
    seen: set[str] = set()
    if "mps allocated" in line.lower():  # MPS prints binary sizes as "MB" / "GB"
        yield from _searched((*_MPS, ("tried_to_allocate", _TORCH_NEW[0][1])), line, seen, binary=True)
        return
    yield from _searched(_TORCH_NEW, line, seen)
    for match in re.finditer(
        rf"(?:\((?:GPU|NPU|XPU|HIP|MLU) \d+; |; ){NUMBER} ?{UNIT} ([a-zA-Z ]+?)(?=[;)])", line, _I
    ):
        old = _TORCH_OLD.get(match.group(3).strip().lower())
        if old and old not in seen:
            seen.add(old)
            yield _mib(old, match.group(1), match.group(2))
    if "would exceed allowed memory" in line.lower():
        yield from _searched(_ASYNC, following, seen)
    others = list(re.finditer(rf"Process \d+ has {NUMBER} ?{UNIT} memory in use", line, _I))
    if others:
        total = sum(to_mib(m.group(1), m.group(2)) for m in others)
        yield Number("other_processes_in_use", total, "MiB", f"{len(others)} other process(es)")


def _vllm_free_numbers(line: str, following: str) -> Iterator[Number]:
    match = VLLM_FREE.search(line)
    if match:
        free, total, utilization, wanted = match.groups()
        yield _mib("free_at_startup", free, "GiB")
        yield _mib("total_capacity", total, "GiB")
        yield Number("gpu_memory_utilization", float(utilization), "fraction", utilization)
        yield _mib("vllm_budget", wanted, "GiB")


def _vllm_kv_numbers(line: str, following: str) -> Iterator[Number]:
    old = KV_OLD.search(line)
    if old:
        yield Number("max_model_len", float(old.group(1)), "tokens", old.group(1))
        yield Number("kv_cache_tokens", float(old.group(2)), "tokens", old.group(2))
        return
    new = KV_NEW.search(line)
    if new:
        yield Number("max_model_len", float(new.group(1)), "tokens", new.group(1))
        yield _mib("kv_cache_needed", new.group(2), "GiB")
        yield _mib("kv_cache_available", new.group(3), "GiB")
        if new.group(4):
            yield Number("estimated_max_model_len", float(new.group(4)), "tokens", new.group(4))


def _warmup_numbers(line: str, following: str) -> Iterator[Number]:
    match = re.search(r"warming up (?:the )?(?:sampler|pooler) with (\d+) dummy requests", line, _I)
    if match:
        yield Number("dummy_requests", float(match.group(1)), "requests", match.group(1))


def _ray_numbers(line: str, following: str) -> Iterator[Number]:
    # Ray's memory monitor divides bytes by 1024^3 and prints "GB"
    node = re.search(r"was ([0-9]+(?:\.[0-9]+)?) ?GB / ([0-9]+(?:\.[0-9]+)?) ?GB \(([0-9]+(?:\.[0-9]+)?)\)", line, _I)
    if node:
        yield _mib("host_used", node.group(1), "GiB")
        yield _mib("host_total", node.group(2), "GiB")
    threshold = re.search(r"memory usage threshold of ([0-9]+(?:\.[0-9]+)?)", line, _I)
    if threshold:
        yield Number("ray_memory_threshold", float(threshold.group(1)), "fraction", threshold.group(1))
    worker = re.search(r"memory used=([0-9]+(?:\.[0-9]+)?) ?GB", line, _I)
    if worker:
        yield _mib("killed_worker_used", worker.group(1), "GiB")
    killed = re.search(r"(\d+) Workers \(tasks / actors\) killed due to memory pressure", line, _I)
    if killed:
        yield Number("workers_killed", float(killed.group(1)), "workers", killed.group(1))
    top = re.search(r"PID\s+MEM\(GB\)\s+COMMAND\s*\n\s*\d+\s+([0-9]+(?:\.[0-9]+)?)\s+(\S+)", f"{line}\n{following}", _I)
    if top:
        yield _mib("top_process_used", top.group(1), "GiB")


def _kernel_numbers(line: str, following: str) -> Iterator[Number]:
    for name, key in (("total_vm", "total-vm"), ("anon_rss", "anon-rss"), ("file_rss", "file-rss")):
        match = re.search(rf"{key}:(\d+)kB", line, _I)
        if match:
            yield _mib(name, match.group(1), "KiB")
    limit = re.search(r"exceeded (?:job |step )?memory limit \((\d+) > (\d+)\)", line, _I)
    if limit:  # Slurm's figures are KiB
        yield _mib("host_used", limit.group(1), "KiB")
        yield _mib("host_limit", limit.group(2), "KiB")


def _host_alloc_numbers(line: str, following: str) -> Iterator[Number]:
    tried = re.search(r"you tried to allocate (\d+) bytes", line, _I)
    if tried:
        yield _mib("host_tried_to_allocate", tried.group(1), "bytes")
    array = re.search(rf"Unable to allocate {NUMBER} ?(KiB|MiB|GiB|TiB|B)\b for an array", line, _I)
    if array:
        yield _mib("host_tried_to_allocate", array.group(1), array.group(2))


def _nccl_numbers(line: str, following: str) -> Iterator[Number]:
    match = re.search(r"Timeout\(ms\)=(\d+)\) ran for (\d+) milliseconds", line, _I)
    if match:
        yield Number("timeout_ms", float(match.group(1)), "ms", match.group(1))
        yield Number("ran_for_ms", float(match.group(2)), "ms", match.group(2))


_READERS: dict[str, Callable[[str, str], Iterator[Number]]] = {
    "torch_oom": _torch_numbers,
    "vllm_free_memory": _vllm_free_numbers,
    "vllm_kv_cache": _vllm_kv_numbers,
    "vllm_sampler_warmup": _warmup_numbers,
    "ray_host_oom": _ray_numbers,
    "kernel_oom": _kernel_numbers,
    "host_alloc": _host_alloc_numbers,
    "nccl_timeout": _nccl_numbers,
}

#: Figures vLLM logs while it starts and sleeps (not failures), each by the words a line must hold: the last of
#: each is read from the whole log.
_WEIGHTS = rf"(?:Loading model weights took|Model loading took|model weights take) {NUMBER} ?{UNIT}"
_STARTUP = (
    ("vllm_weights", ("weights took", "loading took", "weights take"), _WEIGHTS),
    ("kv_cache_available", ("available kv cache memory",), rf"Available KV cache memory: {NUMBER} ?{UNIT}"),
    ("kv_cache_reserved", ("reserved for kv cache",), rf"reserved for KV Cache is {NUMBER} ?{UNIT}"),
    ("total_capacity", ("total_gpu_memory",), rf"total_gpu_memory[ =(]+{NUMBER} ?{UNIT}"),
    ("vllm_sleep_freed", ("sleep mode freed",), rf"Sleep mode freed {NUMBER} ?{UNIT}"),
    ("vllm_sleep_still_in_use", ("still in use",), rf"{NUMBER} ?{UNIT} memory is still in use"),
)


def _last(low: str, text: str, needles: tuple[str, ...], pattern: str) -> re.Match[str] | None:
    """The last line holding one of ``needles`` that ``pattern`` matches (searched from the end)."""
    for needle in needles:
        end = len(low)
        while (at := low.rfind(needle, 0, end)) >= 0:
            start, stop = low.rfind("\n", 0, at) + 1, low.find("\n", at)
            match = re.search(pattern, text[start : stop if stop >= 0 else len(text)], _I)
            if match:
                return match
            end = start
    return None


def startup_numbers(text: str, low: str | None = None) -> list[Number]:
    """The last of each start-up and sleep figure vLLM logged (weights loaded, KV cache memory, memory freed by its
    sleep mode), in MiB; ``low`` is ``text`` in lower case."""
    low = text.lower() if low is None else low
    out = []
    for name, needles, pattern in _STARTUP:
        last = _last(low, text, needles, pattern)
        if last is not None:  # vLLM divides by 2**30 and prints "GB"
            unit = "GiB" if last.group(2) == "GB" else last.group(2)
            out.append(Number(name, to_mib(last.group(1), unit), "MiB", f"{last.group(1)} {last.group(2)}"))
    tokens = _last(low, text, ("gpu kv cache size",), r"GPU KV cache size: ([0-9,]+) tokens")
    if tokens is not None:
        value = tokens.group(1).replace(",", "")
        out.append(Number("kv_cache_tokens", float(value), "tokens", tokens.group(1)))
    return out
