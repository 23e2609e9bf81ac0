"""A failure log read and recognised (pure over text): the failure messages of PyTorch, vLLM, VERL, TRL, Ray, NCCL,
the kernel's OOM killer and the scheduler, in the wordings their versions print, with every number they state.

The log is read as text, never executed, through the package's user-file reader, and bounded: of a larger file
only the first :data:`HEAD_BYTES` and the last :data:`TAIL_BYTES` are read (a failure is at the end of a log, the
start-up figures at its start). Terminal colour codes and Ray's ``(WorkerDict pid=…)`` prefixes do not matter.
:func:`recognise` returns every :class:`Signal` with its figures (:mod:`.logfigures`); :mod:`.logphase` reads the
phase from the traceback around it.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ...errors import InputError, one_line, redact
from ...userfile import binary_head, file_mode, standard_input, user_input
from .figures import KV_NEW, KV_OLD, NUMBER, UNIT, VLLM_FREE, Number, numbers_of

#: Bytes read from the start and from the end of a larger log.
HEAD_BYTES, TAIL_BYTES = 1 << 20, 4 << 20
#: Characters of a log line an answer quotes.
EXCERPT_LIMIT = 240
#: Messages of one family read in full: the first ones and the last (the root cause is the first, the final
#: exception the last).
SIGNALS_PER_FAMILY = 20
#: Share of undecodable characters above which a log is binary, not text.
BINARY_SHARE = 0.05
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class LogText:
    """The text of a log as read: ``text``, the ``label`` naming it, its ``size`` in bytes and whether the middle
    of a larger log was left unread (``cut``)."""

    text: str
    label: str
    size: int
    cut: bool = False

    @property
    def note(self) -> str:
        if not self.cut:
            return f"{self.label}: {self.size:,} bytes read"
        return (
            f"{self.label}: {self.size / 2**20:,.1f} MiB; its first {HEAD_BYTES >> 20} MiB and last "
            f"{TAIL_BYTES >> 20} MiB read"
        )


@dataclass(frozen=True)
class Signal:
    """One failure message: its ``family`` (which pattern), ``source`` (the project that prints it), the
    ``position`` in the text, the 1-based ``line`` number, a redacted ``excerpt`` and the ``numbers`` it states."""

    family: str
    source: str
    position: int
    line: int
    excerpt: str
    numbers: tuple[Number, ...] = field(default=())

    def number(self, name: str) -> float | None:
        return next((n.value for n in self.numbers if n.name == name), None)


# ---- reading --------------------------------------------------------------------------------------------------


def read_log(path: str | os.PathLike[str]) -> LogText:
    """The text of the log at ``path`` (``-``: standard input), bounded as the module says; one line of
    :class:`~rlvrambench_hf.errors.InputError` when it is missing, a folder or binary."""
    name = os.fspath(path)
    label = "log (standard input)" if name == "-" else f"log {redact(name)}"
    if name == "-":
        return log_text(standard_input(label, refused=binary_head), label)
    found = user_input(name, label, refused=binary_head)
    if isinstance(found, bytes):
        return log_text(found, label)
    file_mode(found, label)
    try:
        with open(found, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size <= HEAD_BYTES + TAIL_BYTES:
                return log_text(handle.read(), label)
            head = handle.read(HEAD_BYTES)
            handle.seek(size - TAIL_BYTES)
            return log_text(head + b"\n" + handle.read(TAIL_BYTES), label, size=size)
    except OSError as exc:
        raise InputError(f"cannot read {label}: {exc.strerror or 'the system gave no reason'}") from None


def log_text(content: bytes, label: str, *, size: int | None = None) -> LogText:
    """``content`` (the bytes of a log, or its first and last bytes when ``size`` is larger) as :class:`LogText`."""
    cut = size is not None and size > len(content)
    if not cut and len(content) > HEAD_BYTES + TAIL_BYTES:  # a stream: keep its start and its end
        size, cut = len(content), True
        content = content[:HEAD_BYTES] + b"\n" + content[-TAIL_BYTES:]
    if binary_head(content[: 1 << 16]):
        raise InputError(f"{label} is binary data (NUL bytes), not a text log")
    text = content.decode("utf-8", errors="replace")
    if text.count("\ufffd") > BINARY_SHARE * max(len(text), 1):
        raise InputError(f"{label} is binary data (not UTF-8 text), not a text log")
    return LogText(_ANSI.sub("", text), label, len(content) if size is None else size, cut)


# ---- the families ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    """A failure message: its ``name``, the ``source`` that prints it and the ``pattern`` that finds it."""

    name: str
    source: str
    pattern: re.Pattern[str]


def _family(name: str, source: str, pattern: str) -> Family:
    return Family(name, source, re.compile(pattern))


FAMILIES: tuple[Family, ...] = (
    # PyTorch's caching allocator, 1.x-2.0: "(GPU 0; 39.39 GiB total capacity; ... reserved in total by PyTorch)"
    _family("torch_oom", "PyTorch", rf"(?:CUDA|HIP|XPU) out of memory\. Tried to allocate {NUMBER} ?{UNIT} \(GPU"),
    # PyTorch 2.1 and later: "GPU 0 has a total capacity of 39.39 GiB of which ... is free." (2.1: "capacty")
    _family("torch_oom", "PyTorch", rf"(?:CUDA|HIP|XPU) out of memory\. Tried to allocate {NUMBER} ?{UNIT}\. GPU"),
    _family("torch_oom", "PyTorch", r"(?:CUDA|HIP|XPU) out of memory\.?(?! Tried)"),
    _family(
        "cuda_error_oom",
        "CUDA",
        r"CUDA error: out of memory|CUBLAS_STATUS_ALLOC_FAILED|cudaErrorMemoryAllocation"
        r"|Cuda failure \d* ?'out of memory'",
    ),
    Family("vllm_free_memory", "vLLM", VLLM_FREE),
    Family("vllm_kv_cache", "vLLM", KV_OLD),
    Family("vllm_kv_cache", "vLLM", KV_NEW),
    _family("vllm_no_cache_blocks", "vLLM", r"No available memory for the cache blocks"),
    _family(
        "ray_host_oom",
        "Ray",
        r"Task was killed due to the node running low on memory|Ray killed this worker|NODE_OUT_OF_MEMORY"
        r"|RayOutOfMemoryError",
    ),
    _family(
        "kernel_oom",
        "Linux",
        r"(?:Memory cgroup )?[Oo]ut of memory: Kill(?:ed)? process (\d+) \(([^)\n]{0,80})\)"
        r"|oom-kill:constraint=|Detected \d+ oom[-_]kill event|killed by the cgroup out-of-memory handler",
    ),
    _family("port_collision", "network", r"(?i)address already in use|EADDRINUSE|errno:? 98\b"),
    _family(
        "nccl_timeout",
        "NCCL",
        r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w{1,40})[^\n]{0,400}?"
        r"ran for (\d+) milliseconds",
    ),
    _family(
        "nccl_error",
        "NCCL",
        r"NCCL error[^\n]{0,200}?(?:unhandled (?:system|cuda) error|internal error|invalid usage|remote process)"
        r"|nccl(?:UnhandledCudaError|SystemError|InternalError|RemoteError|InvalidUsage)|DistBackendError",
    ),
    _family(
        "configuration",
        "VERL",
        r"must be divisible by|must be >= |Please set at least one of|You have set both|real_train_batch_size"
        r"|should be larger than 0 after normalization|must be evenly divisible by|Could not override '"
        r"|is not in struct|MissingMandatoryValue|ConfigAttributeError|ConfigKeyError",
    ),
    _family(
        "environment",
        "Python",
        r"(?m)^(?:\([^)\n]*\)\s*)?(?:\[rank\d+\]:\s*)?(?:ModuleNotFoundError|ImportError): "
        r"|undefined symbol: |CUDA driver version is insufficient"
        r"|no kernel image is available for execution|no CUDA-capable device is detected",
    ),
    _family("killed", "process", r"(?m)died with <Signals\.SIGKILL: 9>|exit code:? 137\b|exitcode\s*:\s*-9\b|^Killed$"),
    _family(
        "ray_worker_lost",
        "Ray",
        r"ActorDiedError|RayActorError|The actor died|worker died or was killed|"
        r"Worker exit type: (?!NODE_OUT_OF_MEMORY)\w+",
    ),
    _family("segfault", "process", r"Segmentation fault|SIGSEGV|Fatal Python error"),
    _family("exception", "Python", r"(?m)^(?:[A-Za-z_][\w.]*\.)?([A-Z]\w*(?:Error|Exception))(?::[^\n]*)?$"),
)


# ---- recognising ----------------------------------------------------------------------------------------------


class Lines:
    """Line numbers and line texts of a text, by character position."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0, *(m.end() for m in re.finditer("\n", text))]

    def number(self, position: int) -> int:
        return bisect.bisect_right(self.starts, position)

    def line(self, number: int) -> str:
        start = self.starts[number - 1]
        end = self.starts[number] - 1 if number < len(self.starts) else len(self.text)
        return self.text[start:end]

    def span(self, first: int, last: int) -> str:
        first, last = max(first, 1), min(last, len(self.starts))
        end = self.starts[last] - 1 if last < len(self.starts) else len(self.text)
        return self.text[self.starts[first - 1] : end]


def recognise(text: str, lines: Lines | None = None) -> list[Signal]:
    """Every failure message of ``text``, in the order they appear (one per family and line)."""
    lines = lines or Lines(text)
    found: dict[tuple[int, str], Signal] = {}
    for family in FAMILIES:
        for match in _bounded(family.pattern.finditer(text)):
            number = lines.number(match.start())
            key = (number, family.name)
            if key in found or any((number, f) in found for f in _SHADOWED.get(family.name, ())):
                continue
            line = lines.line(number)
            if family.name not in _MEMORY and _CODE.match(line):
                continue  # the source line a traceback quotes, not the message
            found[key] = Signal(
                family.name, family.source, match.start(), number, excerpt(line), tuple(numbers_of(family.name, line))
            )
    return sorted(found.values(), key=lambda s: (s.position, s.family))


def _bounded(matches: Iterator[re.Match[str]]) -> list[re.Match[str]]:
    """The first :data:`SIGNALS_PER_FAMILY` matches and the last (a log repeating one message a million times)."""
    kept: list[re.Match[str]] = []
    last = None
    for last in matches:
        if len(kept) < SIGNALS_PER_FAMILY:
            kept.append(last)
    if last is not None and kept[-1] is not last:
        kept.append(last)
    return kept


#: Families a quoted source line never hides (their wording does not occur in code).
#: The families of a device out of memory, and of a host out of memory.
DEVICE_FAMILIES = ("torch_oom", "cuda_error_oom", "vllm_free_memory", "vllm_kv_cache", "vllm_no_cache_blocks")
HOST_FAMILIES = ("ray_host_oom", "kernel_oom")
_MEMORY = (*DEVICE_FAMILIES, "ray_host_oom")
#: A line of source code that a traceback quotes (``assert …``, ``raise …``, a string literal).
_CODE = re.compile(r"^(?:\([^)]*\)\s*)?(?:\[rank\d+\]:)?\s+(?:assert |raise |if |elif |f?\"|f?')")

#: A family not recorded on a line where a more specific one is (an exception line holding an OOM sentence).
_SHADOWED = {
    "exception": (
        *_MEMORY,
        "configuration",
        "environment",
        "port_collision",
        "nccl_error",
        "ray_worker_lost",
    ),
    "nccl_error": ("cuda_error_oom",),
}


def excerpt(line: str) -> str:
    """A log line as an answer quotes it: one line, credentials redacted, bounded."""
    return one_line(line.strip(), EXCERPT_LIMIT)
