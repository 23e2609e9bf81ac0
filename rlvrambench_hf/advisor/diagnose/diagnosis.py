"""Why did my run run out of memory? A failure log's answer in the release's own taxonomy (pure over the log's text,
the release's tables and, when given, the advisor's answer to the launch file and a per-phase model).

The failure class is a ``failure_kind`` of ``runs.csv`` / ``attempts.csv`` — ``rollout_init_memory``,
``weight_sync_oom``, ``rollout_oom``, ``actor_update_oom``, ``cuda_oom`` (a device OOM in another phase), and
``vllm_executor_failure`` (host memory, as the larger-model panel files it) — or a cause that is not a memory
failure: ``distributed_port_collision``, ``configuration``, ``environment``, ``nccl`` or ``runtime``. The phase is a
stage of ``stage_measurements``. The root cause is the earliest memory message, else the earliest message of the
most telling other family: an NCCL timeout or a lost Ray worker that follows an OOM is its consequence, never its
cause, and a host-memory kill is never called a device OOM, nor the reverse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..answer import Remedy
from .figures import Number, startup_numbers
from .fixes import DESCRIPTION, FIXES, HOST_KIND, KV_SHORT, UTILIZATION_KEY, device_of
from .logs import DEVICE_FAMILIES, HOST_FAMILIES, Lines, LogText, Signal, log_text, recognise
from .parts import LogDevice, PlanMatch, ReleaseFailures
from .phase import phase_near

#: Families by how telling they are (first: the root cause when present), memory families first.
TIERS: tuple[tuple[str, ...], ...] = (
    (*DEVICE_FAMILIES, *HOST_FAMILIES),
    ("configuration", "environment"),
    ("port_collision",),
    ("nccl_error", "nccl_timeout"),
    ("ray_worker_lost", "killed", "segfault"),
    ("exception",),
)
#: Failures where the KV cache was short: a larger vLLM reservation is then a fix, a smaller one never.
KV_FAMILIES = ("vllm_kv_cache", "vllm_no_cache_blocks")
#: A device OOM's failure kind by phase (any other phase: cuda_oom, the release's kind for the rest).
DEVICE_KIND_BY_PHASE = {
    "initializing": "rollout_init_memory",
    "weight_sync": "weight_sync_oom",
    "rollout": "rollout_oom",
    "actor_update": "actor_update_oom",
}
OTHER_KIND = {
    "configuration": "configuration",
    "environment": "environment",
    "port_collision": "distributed_port_collision",
    "nccl_error": "nccl",
    "nccl_timeout": "nccl",
}
#: The classes a device or host memory failure can have.
MEMORY_CLASSES = (*DEVICE_KIND_BY_PHASE.values(), "cuda_oom", HOST_KIND)


@dataclass(frozen=True)
class Diagnosis:
    """The answer to a failure log (see the module docstring): its class, phase and figures, the device the log
    names, the release's failures of that kind (``release``), the diagnosis made specific to a launch file's plan
    (``specific``) and the fixes, most specific first; :meth:`as_dict` is its JSON."""

    failure_class: str | None
    memory: str | None
    phase: str | None
    phase_basis: str
    reason: str
    signal: Signal | None
    others: tuple[Signal, ...]
    numbers: tuple[Number, ...]
    log_note: str
    device: LogDevice | None = None
    release: ReleaseFailures | None = None
    specific: PlanMatch | None = None
    fixes: tuple[Remedy, ...] = field(default=())
    note: str | None = None

    @property
    def is_memory(self) -> bool:
        return self.failure_class in MEMORY_CLASSES

    def headline(self) -> str:
        """The one line the answer leads with."""
        if self.failure_class is None:
            return f"no failure message recognised ({self.log_note})"
        where = f" in {self.phase}" if self.phase else ""
        if self.memory == "device":
            what = f"memory failure{where} ({self.failure_class})"
        elif self.memory == "host":
            what = f"host-memory failure{where} ({self.failure_class}), not a device OOM"
        else:
            what = f"not a memory failure: {self.failure_class}{where}"
        tail = f"; try `{self.fixes[0].pasted()}`" if self.fixes else ""
        return f"{what}: {self.reason}{tail}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "headline": self.headline(),
            "failure_class": self.failure_class,
            "memory": self.memory,
            "phase": self.phase,
            "phase_basis": self.phase_basis,
            "reason": self.reason,
            "message": _signal_dict(self.signal) if self.signal else None,
            "numbers": [n.as_dict() for n in self.numbers],
            "device": None if self.device is None else self.device.to_json(),
            "also_in_log": [_signal_dict(s) for s in self.others],
            "release": None if self.release is None else self.release.to_json(),
            "fixes": [f.to_json() for f in self.fixes],
            "specific": None if self.specific is None else self.specific.to_json(),
            "log": self.log_note,
            "note": self.note,
        }


def _signal_dict(signal: Signal) -> dict[str, Any]:
    return {"family": signal.family, "source": signal.source, "line": signal.line, "excerpt": signal.excerpt}


# ---- the core -------------------------------------------------------------------------------------------------


def root_signal(signals: Sequence[Signal]) -> Signal | None:
    """The earliest signal of the most telling family present (the exception fallback: the last one)."""
    for tier in TIERS:
        found = [s for s in signals if s.family in tier]
        if found:
            if tier == ("exception",):
                return found[-1]
            first = found[0]
            near = [s for s in found if s.family == first.family and s.line - first.line <= 5]
            return max(near, key=lambda s: len(s.numbers))  # the kernel's line with figures, not its preamble
    return None


def classify(signal: Signal, phase: str | None) -> tuple[str, str | None, str | None]:
    """The failure class, the memory kind (device, host, None) and the phase of ``signal`` found in ``phase``."""
    family = signal.family
    if family in ("vllm_free_memory", "vllm_kv_cache", "vllm_no_cache_blocks"):
        return "rollout_init_memory", "device", "initializing"
    if family in DEVICE_FAMILIES:
        return DEVICE_KIND_BY_PHASE.get(phase or "", "cuda_oom"), "device", phase
    if family in HOST_FAMILIES:
        return HOST_KIND, "host", phase
    return OTHER_KIND.get(family, "runtime"), None, phase


def diagnose_text(log: LogText | str) -> Diagnosis:
    """The diagnosis of a log's text alone: class, phase, reason, numbers, the device and the documented fixes."""
    if isinstance(log, str):
        log = log_text(log.encode("utf-8", errors="replace"), "log")
    lines = Lines(log.text)
    signals = recognise(log.text, lines)
    signal = root_signal(signals)
    if signal is None:
        return Diagnosis(None, None, None, "not stated", "", None, (), tuple(startup_numbers(log.text)), log.note)
    traced = phase_near(lines, signal)
    failure_class, memory, phase = classify(signal, traced)
    basis = "traceback frames" if traced and traced == phase else ("the message" if phase else "not stated")
    numbers = (*signal.numbers, *_new(startup_numbers(log.text), signal.numbers))
    others = tuple(s for s in signals if s is not signal and s.family != "exception")[:10]
    documented = FIXES[KV_SHORT if signal.family in KV_FAMILIES else failure_class]
    fixes = tuple(Remedy.of(f) for f in _log_fixes(signal, failure_class))
    fixes += tuple(Remedy(f.key, f.trl, f.change, f.why) for f in documented)
    return Diagnosis(
        failure_class,
        memory,
        phase,
        basis,
        reason_of(signal, failure_class),
        signal,
        others,
        numbers,
        log.note,
        device=LogDevice.of(device_of(_value(numbers, "total_capacity"))),
        fixes=fixes,
    )


def _new(extra: Sequence[Number], have: Sequence[Number]) -> list[Number]:
    names = {n.name for n in have}
    return [n for n in extra if n.name not in names]


def _value(numbers: Sequence[Number], name: str) -> float | None:
    return next((n.value for n in numbers if n.name == name), None)


def _mib(value: float | None) -> str:
    return "?" if value is None else f"{value:,.0f} MiB"


def reason_of(signal: Signal, failure_class: str) -> str:
    """The reason in words, with the message's own figures."""
    n = signal.number
    family = signal.family
    if family == "torch_oom" and n("tried_to_allocate") is not None:
        held = n("process_in_use") or n("reserved_by_pytorch")
        return (
            f"{DESCRIPTION[failure_class]}: PyTorch could not allocate {_mib(n('tried_to_allocate'))} with "
            f"{_mib(n('free'))} free of {_mib(n('total_capacity'))}; this process held {_mib(held)}"
        )
    if family == "vllm_free_memory":
        return (
            f"vLLM's start-up check: {_mib(n('free_at_startup'))} free of {_mib(n('total_capacity'))}, less than the "
            f"{_mib(n('vllm_budget'))} that utilization {n('gpu_memory_utilization')} asks for"
        )
    if family == "vllm_kv_cache":
        fit = n("estimated_max_model_len") or n("kv_cache_tokens")
        return f"vLLM's KV cache cannot hold one max_model_len sequence of {n('max_model_len'):,.0f} tokens" + (
            f" (about {fit:,.0f} fit)" if fit else ""
        )
    if family == "vllm_no_cache_blocks":
        return "vLLM's budget left no memory for KV-cache blocks after the weights and activations"
    if family == "kernel_oom" and n("anon_rss") is not None:
        return f"the kernel's OOM killer killed a process holding {_mib(n('anon_rss'))} of host memory (anon-rss)"
    if family == "ray_host_oom" and n("host_total") is not None:
        return (
            f"Ray killed a worker: host memory {_mib(n('host_used'))} of {_mib(n('host_total'))} used "
            f"(threshold {n('ray_memory_threshold')})"
        )
    return f"{DESCRIPTION[failure_class]} ({signal.source}: {signal.excerpt[:120]})"


def _log_fixes(signal: Signal, failure_class: str) -> list[dict[str, Any]]:
    """Fixes whose value the log's own figures give."""
    n = signal.number
    if signal.family == "vllm_free_memory" and n("free_at_startup") and n("total_capacity"):
        share = n("free_at_startup") / n("total_capacity")  # type: ignore[operator]
        value = int(share * 20) / 20
        value = round(value - 0.05 if value >= share else value, 2)
        if value > 0:
            return [
                {
                    "key": UTILIZATION_KEY,
                    "trl": "vllm_gpu_memory_utilization",
                    "change": f"{value}",
                    "basis": "log",
                    "setting": "vllm_gpu_memory_utilization",
                    "why": f"below the {share:.3f} of the device that was free at start-up",
                }
            ]
    if signal.family == "vllm_kv_cache":
        fit = n("estimated_max_model_len") or n("kv_cache_tokens")
        if fit:
            return [
                {
                    "key": "actor_rollout_ref.rollout.max_model_len",
                    "trl": "vllm_max_model_length",
                    "change": f"{int(fit)}",
                    "basis": "log",
                    "setting": "max_model_len",
                    "why": "at most the tokens the KV cache holds; prompt + response must still fit",
                }
            ]
    return []
