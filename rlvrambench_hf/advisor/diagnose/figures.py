"""The figures of a failure log's messages (pure over text): what PyTorch's out-of-memory sentence (every
version's wording), vLLM's start-up and KV-cache checks, Ray's memory monitor, the kernel's OOM killer and NCCL's
watchdog state, converted to MiB (tokens, fractions and milliseconds kept in their own units)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

NUMBER = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
UNIT = r"(bytes|B|KiB|MiB|GiB|TiB|kB|KB|MB|GB|TB)"
_BYTES = {"bytes": 1, "B": 1, "KiB": 1 << 10, "kB": 1 << 10, "KB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
_BYTES |= {"TiB": 1 << 40, "MB": 10**6, "GB": 10**9, "TB": 10**12}


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
    rf"utilization \({_FLOAT}, {_FLOAT} GiB\)"
)
# vLLM's V0 engine, then V1's (0.8 and later; the estimated length since 0.8.5)
KV_OLD = re.compile(
    r"The model's max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in KV "
    r"cache \((\d+)\)"
)
KV_NEW = re.compile(
    r"To serve at least one request with the models?'s max seq len \((\d+)\), \(([0-9]+(?:\.[0-9]+)?) GiB KV cache is "
    r"needed, which is larger than the available KV cache memory \((-?[0-9]+(?:\.[0-9]+)?) GiB\)(?:\. Based on the "
    r"available memory, the estimated maximum model length is (\d+))?"
)


def to_mib(value: str, unit: str) -> float:
    return float(value.replace(",", "")) * _BYTES[unit] / 2**20


def numbers_of(family: str, line: str) -> Iterator[Number]:
    """The figures of one failure line, memory in MiB."""
    reader = _READERS.get(family)
    if reader is not None:
        yield from reader(line)


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
    "reserved in total by PyTorch": "reserved_by_pytorch",
}


def _torch_numbers(line: str) -> Iterator[Number]:
    seen: set[str] = set()
    for name, pattern in _TORCH_NEW:
        match = re.search(pattern, line)
        if match:
            seen.add(name)
            yield _mib(name, match.group(1), match.group(2))
    for match in re.finditer(rf"(?:\(GPU \d+; |; ){NUMBER} ?{UNIT} ([a-zA-Z ]+?)(?=[;)])", line):
        old = _TORCH_OLD.get(match.group(3).strip())
        if old and old not in seen:
            seen.add(old)
            yield _mib(old, match.group(1), match.group(2))
    others = [m for m in re.finditer(rf"Process \d+ has {NUMBER} ?{UNIT} memory in use", line)]
    if others:
        total = sum(to_mib(m.group(1), m.group(2)) for m in others)
        yield Number("other_processes_in_use", total, "MiB", f"{len(others)} other process(es)")


def _vllm_free_numbers(line: str) -> Iterator[Number]:
    match = VLLM_FREE.search(line)
    if match:
        free, total, utilization, wanted = match.groups()
        yield _mib("free_at_startup", free, "GiB")
        yield _mib("total_capacity", total, "GiB")
        yield Number("gpu_memory_utilization", float(utilization), "fraction", utilization)
        yield _mib("vllm_budget", wanted, "GiB")


def _vllm_kv_numbers(line: str) -> Iterator[Number]:
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


def _ray_numbers(line: str) -> Iterator[Number]:
    # Ray's memory monitor divides bytes by 1024^3 and prints "GB"
    node = re.search(r"was ([0-9]+(?:\.[0-9]+)?) ?GB / ([0-9]+(?:\.[0-9]+)?) ?GB \(([0-9]+(?:\.[0-9]+)?)\)", line)
    if node:
        yield _mib("host_used", node.group(1), "GiB")
        yield _mib("host_total", node.group(2), "GiB")
    threshold = re.search(r"memory usage threshold of ([0-9]+(?:\.[0-9]+)?)", line)
    if threshold:
        yield Number("ray_memory_threshold", float(threshold.group(1)), "fraction", threshold.group(1))
    worker = re.search(r"memory used=([0-9]+(?:\.[0-9]+)?) ?GB", line)
    if worker:
        yield _mib("killed_worker_used", worker.group(1), "GiB")


def _kernel_numbers(line: str) -> Iterator[Number]:
    for name, key in (("total_vm", "total-vm"), ("anon_rss", "anon-rss"), ("file_rss", "file-rss")):
        match = re.search(rf"{key}:(\d+)kB", line)
        if match:
            yield _mib(name, match.group(1), "KiB")


def _nccl_numbers(line: str) -> Iterator[Number]:
    match = re.search(r"Timeout\(ms\)=(\d+)\) ran for (\d+) milliseconds", line)
    if match:
        yield Number("timeout_ms", float(match.group(1)), "ms", match.group(1))
        yield Number("ran_for_ms", float(match.group(2)), "ms", match.group(2))


_READERS: dict[str, Callable[[str], Iterator[Number]]] = {
    "torch_oom": _torch_numbers,
    "vllm_free_memory": _vllm_free_numbers,
    "vllm_kv_cache": _vllm_kv_numbers,
    "ray_host_oom": _ray_numbers,
    "kernel_oom": _kernel_numbers,
    "nccl_timeout": _nccl_numbers,
}

#: Figures vLLM logs while it starts (not failures): read from the whole log.
_STARTUP = (
    ("vllm_weights", rf"(?:Loading model weights took|Model loading took|model weights take) {NUMBER} ?{UNIT}"),
    ("kv_cache_available", rf"Available KV cache memory: {NUMBER} ?{UNIT}"),
    ("kv_cache_reserved", rf"reserved for KV Cache is {NUMBER} ?{UNIT}"),
    ("total_capacity", rf"total_gpu_memory[ =(]+{NUMBER} ?{UNIT}"),
)


def _last(pattern: str, text: str) -> re.Match[str] | None:
    found = None
    for found in re.finditer(pattern, text):  # noqa: B007 - the last match is the one kept
        continue
    return found


def startup_numbers(text: str) -> list[Number]:
    """The last of each start-up figure vLLM logged (weights loaded, KV cache memory), in MiB."""
    out = []
    for name, pattern in _STARTUP:
        last = _last(pattern, text)
        if last is not None:  # vLLM divides by 2**30 and prints "GB"
            unit = "GiB" if last.group(2) == "GB" else last.group(2)
            out.append(Number(name, to_mib(last.group(1), unit), "MiB", f"{last.group(1)} {last.group(2)}"))
    tokens = _last(r"GPU KV cache size: ([0-9,]+) tokens", text)
    if tokens is not None:
        value = tokens.group(1).replace(",", "")
        out.append(Number("kv_cache_tokens", float(value), "tokens", tokens.group(1)))
    return out
