"""Why did my run run out of memory? A failure log's answer in the release's own taxonomy (pure over the log's text,
the release's tables and, when given, the advisor's answer to the launch file and a per-phase model).

The answer has one of four outcomes (``outcome``): a **memory failure** (``memory`` says device or host), **not a
memory failure** (and what it is), **not established** (a failure whose cause the log does not state, and where to
look: a Ray worker or a process killed without a word is often the host's OOM killer) or **no failure** (nothing in
the log is a failure message).

The failure class of a memory failure is a ``failure_kind`` of ``runs.csv`` / ``attempts.csv`` —
``rollout_init_memory``, ``weight_sync_oom``, ``rollout_oom``, ``actor_update_oom``, ``cuda_oom`` (a device OOM in
another phase), and ``vllm_executor_failure`` (host memory, as the larger-model panel files it); of another failure
the release's ``distributed_port_collision``, ``configuration``, ``environment``, ``runtime`` or a finer cause
(``nccl``, ``numerical``, ``cuda_kernel_error``, ``disk_full``, ``shared_memory``, ``vllm_memory_profiling``,
``time_limit``, ``crash``, ``interrupted``; not established: ``worker_lost``, ``killed``, ``consequence``,
``ray_task_oom``). The phase is a stage of ``stage_measurements``, the operation what the stack shows inside it.
The root cause is the earliest memory message, else the earliest message of the most telling other family: an NCCL
timeout or a lost Ray worker that follows an OOM is its consequence, never its cause, and a host-memory kill is never
called a device OOM, nor the reverse.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..answer import Remedy
from ..plan.mapping import TRL_MAPPING
from .families import FAMILY, MEMORY_FAMILIES
from .figures import Number, startup_numbers
from .fixes import HOST_KIND, KV_SHORT, applies, device_of, fixes_for
from .logs import Lines, LogText, Signal, log_text, lowered, recognise, stack_of
from .parts import LogDevice, PlanMatch, ReleaseFailures
from .phase import MESSAGE_PLACES, placed
from .reasons import LOOK_AT, WHAT, log_fixes, reason_of

#: Families by how telling they are (first: the root cause when present), memory families first.
TIERS: tuple[tuple[str, ...], ...] = (
    MEMORY_FAMILIES,
    ("configuration", "environment", "vllm_profiling"),
    ("port_collision", "disk_full", "shared_memory", "time_limit"),
    ("illegal_memory_access",),
    ("numerical",),
    ("nccl_error", "nccl_timeout"),
    ("segfault", "interrupted"),
    ("ray_worker_lost", "killed", "consequence"),
    ("exception",),
)
#: Failures where the KV cache was short: a larger vLLM reservation is then a fix, a smaller one never.
KV_FAMILIES = ("vllm_kv_cache", "vllm_no_cache_blocks")
#: vLLM's start-up messages: the class and phase they name themselves.
STARTUP_FAMILIES = ("vllm_free_memory", "vllm_kv_cache", "vllm_no_cache_blocks", "vllm_sampler_warmup")
#: A device OOM's failure kind by phase (any other phase: cuda_oom, the release's kind for the rest).
DEVICE_KIND_BY_PHASE = {
    "initializing": "rollout_init_memory",
    "weight_sync": "weight_sync_oom",
    "rollout": "rollout_oom",
    "actor_update": "actor_update_oom",
}
#: The class of each family that is not a memory failure.
OTHER_KIND = {
    "configuration": "configuration",
    "environment": "environment",
    "port_collision": "distributed_port_collision",
    "nccl_error": "nccl",
    "nccl_timeout": "nccl",
    "illegal_memory_access": "cuda_kernel_error",
    "numerical": "numerical",
    "disk_full": "disk_full",
    "shared_memory": "shared_memory",
    "vllm_profiling": "vllm_memory_profiling",
    "time_limit": "time_limit",
    "segfault": "crash",
    "interrupted": "interrupted",
    "ray_worker_lost": "worker_lost",
    "killed": "killed",
    "consequence": "consequence",
    "ray_task_oom": "ray_task_oom",
    "exception": "runtime",
}
#: The classes a device or host memory failure can have.
MEMORY_CLASSES = (*DEVICE_KIND_BY_PHASE.values(), "cuda_oom", HOST_KIND)
#: A Ray task that runs a model on a device (an OutOfMemoryError it raised is PyTorch's), not a driver.
_WORKER_TASK = re.compile(r"ray::(?!\w*TaskRunner)[\w.]*(?:Worker|Actor|LLM|Rollout|Engine)")


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
    outcome: str = ""
    what: str | None = None
    look_at: str | None = None
    operation: str | None = None
    stack: tuple[str, ...] = ()
    log_skipped_bytes: int = 0

    def __post_init__(self) -> None:
        if not self.outcome:
            outcome = "no_failure" if self.failure_class is None else "memory_failure" if self.memory else "not_memory"
            object.__setattr__(self, "outcome", outcome)

    @property
    def is_memory(self) -> bool:
        return self.failure_class in MEMORY_CLASSES

    def headline(self) -> str:
        """The one line the answer leads with."""
        if self.failure_class is None:
            return f"no failure message recognised ({self.log_note})"
        where = f" in {self.phase}" if self.phase else ""
        if self.outcome == "not_established":
            return f"not established: {self.what}{where} ({self.failure_class}): {self.look_at}"
        if self.memory == "device":
            during = f" during the {self.operation}" if self.operation else ""
            what = f"memory failure{where} ({self.failure_class}){during}"
        elif self.memory == "host":
            what = f"host-memory failure{where} ({self.failure_class}), not a device OOM"
        else:
            what = f"not a memory failure: {self.what}{where} ({self.failure_class})"
        first = self.leading_fix()
        return f"{what}: {self.reason}{_tried(first) if first else ''}"

    def leading_fix(self) -> Remedy | None:
        """The fix the answer leads with: the log's own figures', else the launch file's, else the first in the
        documented order (the operation's first) whatever its basis, never one the log's stack or operation rules
        out; a change the release measured from a value that may not be the user's is stated by its direction."""
        usable = [f for f in self.fixes if applies(f.get("setting"), self.stack, self.operation)]
        for bases in (("log",), ("launch", "model")):
            found = next((f for f in usable if f["basis"] in bases), None)
            if found is not None:
                return found
        kind = KV_SHORT if self.signal is not None and self.signal.family in KV_FAMILIES else self.failure_class
        for wanted in fixes_for(kind or "", self.operation, self.stack):  # the documented order, whatever the basis
            found = next((f for f in usable if f["key"] == wanted.key), None)
            if found is not None:
                return found
        return usable[0] if usable else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "headline": self.headline(),
            "outcome": self.outcome,
            "failure_class": self.failure_class,
            "what": self.what,
            "memory": self.memory,
            "phase": self.phase,
            "phase_basis": self.phase_basis,
            "operation": self.operation,
            "reason": self.reason,
            "look_at": self.look_at,
            "message": _signal_dict(self.signal) if self.signal else None,
            "numbers": [n.as_dict() for n in self.numbers],
            "device": None if self.device is None else self.device.to_json(),
            "also_in_log": [_signal_dict(s) for s in self.others],
            "release": None if self.release is None else self.release.to_json(),
            "fixes": [f.to_json() for f in self.fixes],
            "specific": None if self.specific is None else self.specific.to_json(),
            "stack": list(self.stack),
            "log": self.log_note,
            "log_skipped_bytes": self.log_skipped_bytes,
            "note": self.note,
        }


def _signal_dict(signal: Signal) -> dict[str, Any]:
    return {"family": signal.family, "source": signal.source, "line": signal.line, "excerpt": signal.excerpt}


def _pasted(key: str, fix: Mapping[str, Any]) -> str:
    """A fix as the user pastes it: ``key=value`` when the value is known, else ``key: what to do``; a change the
    release measured from a value that may not be the user's (``0.8 -> 0.7``) by its direction only (``lower``)."""
    change = fix["change"]
    if fix.get("to") is not None:
        return f"{key}={fix['to']}"
    if fix["basis"] == "release":
        to, was = fix["release_to"], fix["from"]
        if to in ("True", "False"):
            return f"{key}={to}"
        return f"{key}: {'raise' if _number(to) > _number(was) else 'lower'}"
    if fix.get("basis") in ("launch", "model", "log") or change in ("True", "False"):
        return f"{key}={change}"
    return f"{key}: {change}"


def _number(value: object) -> float:
    try:
        return float(str(value))
    except ValueError:
        return 0.0


def _tried(fix: Mapping[str, Any]) -> str:
    """``; try `key=value``` and, where TRL spells it otherwise, ``(TRL: `argument=value`)``."""
    own = fix["basis"] in ("launch", "model")  # in the user's own keys already
    trl = None if own else fix.get("trl") or _TRL.get(fix.get("setting") or "")
    if not trl or trl == fix["key"]:
        return f"; try `{_pasted(fix['key'], fix)}`"
    spelled = _pasted(trl, fix) if re.fullmatch(r"[a-z_]+", trl) else trl
    return f"; try `{_pasted(fix['key'], fix)}` (TRL: `{spelled}`)"


#: TRL's argument for each setting of the dataset's vocabulary that TRL spells (the first of its keys).
_TRL = {m.setting: m.keys[0] for m in reversed(TRL_MAPPING)}


# ---- the core -------------------------------------------------------------------------------------------------


def root_signal(signals: Sequence[Signal]) -> Signal | None:
    """The earliest signal of the most telling family present (the exception fallback: the last one); of memory
    messages, an OutOfMemoryError Ray relays only when no memory message says more (one a worker raised first)."""
    for tier in TIERS:
        found = [s for s in signals if s.family in tier]
        if not found:
            continue
        if tier == ("exception",):
            return found[-1]
        if tier == MEMORY_FAMILIES:
            stated = [s for s in found if s.family != "ray_task_oom"]
            if not stated:
                return next((s for s in found if _WORKER_TASK.search(s.excerpt)), found[0])
            found = stated
        first = found[0]
        near = [s for s in found if s.family == first.family and 0 <= s.line - first.line <= 5]
        return max(near, key=lambda s: len(s.numbers))  # the kernel's line with figures, not its preamble
    return None


def classify(signal: Signal, phase: str | None) -> tuple[str, str | None, str]:
    """The failure class, the memory kind (device, host, None) and the outcome of ``signal`` found in ``phase``."""
    family = signal.family
    kind = FAMILY[family].kind
    if family in STARTUP_FAMILIES:
        return "rollout_init_memory", "device", "memory_failure"
    if kind == "device" or (kind == "wrapper" and _WORKER_TASK.search(signal.excerpt)):
        return DEVICE_KIND_BY_PHASE.get(phase or "", "cuda_oom"), "device", "memory_failure"
    if kind == "host":
        return HOST_KIND, "host", "memory_failure"
    return OTHER_KIND[family], None, "not_established" if kind in ("unestablished", "wrapper") else "not_memory"


def diagnose_text(log: LogText | str) -> Diagnosis:
    """The diagnosis of a log's text alone: outcome, class, phase, reason, numbers, the device and the fixes."""
    if isinstance(log, str):
        log = log_text(log.encode("utf-8", errors="replace"), "log")
    lines, low = Lines(log.text), lowered(log.text)
    signals = recognise(log.text, lines, low)
    stack = stack_of(low)
    read = {"log_note": log.note, "stack": tuple(sorted(stack)), "log_skipped_bytes": log.skipped}
    signal = root_signal(signals)
    if signal is None:
        startup = tuple(startup_numbers(log.text, low))
        return Diagnosis(None, None, None, "not stated", "", None, (), startup, **read)  # type: ignore[arg-type]
    stated = MESSAGE_PLACES.get(signal.family)
    after = FAMILY[signal.family].follow if FAMILY[signal.family].kind == "host" else 0
    traced, operation = placed(lines, signal, after) if stated is None else stated
    failure_class, memory, outcome = classify(signal, traced)
    basis = "not stated" if traced is None else "the message" if stated else "traceback frames"
    numbers = (*signal.numbers, *_new(startup_numbers(log.text, low), signal.numbers))
    others = tuple(s for s in signals if s is not signal and s.family != "exception")[:10]
    documented = fixes_for(KV_SHORT if signal.family in KV_FAMILIES else failure_class, operation, stack)
    fixes = tuple(Remedy.of(f) for f in (*log_fixes(signal), *(f.as_dict() for f in documented)))
    return Diagnosis(
        failure_class,
        memory,
        traced,
        basis,
        reason_of(signal, failure_class) if memory else _quoted(signal),
        signal,
        others,
        numbers,
        device=LogDevice.of(device_of(_value(numbers, "total_capacity"))),
        fixes=fixes,
        outcome=outcome,
        what=None if memory else WHAT.get(signal.family),
        look_at=LOOK_AT.get(signal.family),
        operation=operation,
        **read,  # type: ignore[arg-type]
    )


def _quoted(signal: Signal) -> str:
    return f"{signal.source}: {signal.excerpt[:160]}"


def _new(extra: Sequence[Number], have: Sequence[Number]) -> list[Number]:
    names = {n.name for n in have}
    return [n for n in extra if n.name not in names]


def _value(numbers: Sequence[Number], name: str) -> float | None:
    return next((n.value for n in numbers if n.name == name), None)
