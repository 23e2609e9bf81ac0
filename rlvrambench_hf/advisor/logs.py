"""A failure log read and recognised (pure over text): the failure messages of PyTorch, vLLM, VERL, TRL, Ray, NCCL,
the kernel's OOM killer and the scheduler, in the wordings their versions print, with every number they state.

The log is read as text, never executed, through the package's user-file reader, and bounded: of a larger file
only the first :data:`HEAD_BYTES` and the last :data:`TAIL_BYTES` are read (a failure is at the end of a log, the
start-up figures at its start). Terminal colour codes and Ray's ``(WorkerDict pid=…)`` prefixes do not matter.
:func:`recognise` returns every :class:`Signal`; :func:`phase_near` reads the phase from the frames of the
traceback around a signal (VERL's worker methods, vLLM's start-up, TRL's trainer).
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..data.tables.userfile import binary_head, file_mode, standard_input, user_input
from ..errors import InputError, one_line

#: Bytes read from the start and from the end of a larger log.
HEAD_BYTES, TAIL_BYTES = 1 << 20, 8 << 20
#: Characters of a log line an answer quotes.
EXCERPT_LIMIT = 240
#: Share of undecodable characters above which a log is binary, not text.
BINARY_SHARE = 0.05
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_NUMBER = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
_UNIT = r"(bytes|B|KiB|MiB|GiB|TiB|kB|KB|MB|GB|TB)"
_BYTES = {"bytes": 1, "B": 1, "KiB": 1 << 10, "kB": 1 << 10, "KB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
_BYTES |= {"TiB": 1 << 40, "MB": 10**6, "GB": 10**9, "TB": 10**12}


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
class Number:
    """A figure a log states: ``name`` (what it is), ``value`` in ``unit`` (MiB for memory), as ``written``."""

    name: str
    value: float
    unit: str
    written: str

    def as_dict(self) -> dict:
        value = round(self.value, 1 if self.unit == "MiB" else 4)
        return {"name": self.name, "value": value, "unit": self.unit, "written": self.written}


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


def read_log(path: str | os.PathLike) -> LogText:
    """The text of the log at ``path`` (``-``: standard input), bounded as the module says; one line of
    :class:`~rlvrambench_hf.errors.InputError` when it is missing, a folder or binary."""
    name = os.fspath(path)
    label = "log (standard input)" if name == "-" else f"log {name}"
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


_FLOAT = r"([0-9]+(?:\.[0-9]+)?)"
# vLLM 0.6 and later ("Free memory on device cuda:0 (…)" in 0.11 and later)
_VLLM_FREE = re.compile(
    rf"Free memory on device(?: [\w:]+)? \({_FLOAT}/{_FLOAT} GiB\) on startup is less than desired GPU memory "
    rf"utilization \({_FLOAT}, {_FLOAT} GiB\)"
)
# vLLM's V0 engine, then V1's (0.8 and later; the estimated length since 0.8.5)
_KV_OLD = re.compile(
    r"The model's max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in KV "
    r"cache \((\d+)\)"
)
_KV_NEW = re.compile(
    r"To serve at least one request with the models?'s max seq len \((\d+)\), \(([0-9]+(?:\.[0-9]+)?) GiB KV cache is "
    r"needed, which is larger than the available KV cache memory \((-?[0-9]+(?:\.[0-9]+)?) GiB\)(?:\. Based on the "
    r"available memory, the estimated maximum model length is (\d+))?"
)


FAMILIES: tuple[Family, ...] = (
    # PyTorch's caching allocator, 1.x-2.0: "(GPU 0; 39.39 GiB total capacity; ... reserved in total by PyTorch)"
    _family("torch_oom", "PyTorch", rf"(?:CUDA|HIP|XPU) out of memory\. Tried to allocate {_NUMBER} ?{_UNIT} \(GPU"),
    # PyTorch 2.1 and later: "GPU 0 has a total capacity of 39.39 GiB of which ... is free." (2.1: "capacty")
    _family("torch_oom", "PyTorch", rf"(?:CUDA|HIP|XPU) out of memory\. Tried to allocate {_NUMBER} ?{_UNIT}\. GPU"),
    _family("torch_oom", "PyTorch", r"(?:CUDA|HIP|XPU) out of memory\.?(?! Tried)"),
    _family(
        "cuda_error_oom",
        "CUDA",
        r"CUDA error: out of memory|CUBLAS_STATUS_ALLOC_FAILED|cudaErrorMemoryAllocation"
        r"|Cuda failure \d* ?'out of memory'",
    ),
    Family("vllm_free_memory", "vLLM", _VLLM_FREE),
    Family("vllm_kv_cache", "vLLM", _KV_OLD),
    Family("vllm_kv_cache", "vLLM", _KV_NEW),
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
        r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)[^\n]*?ran for (\d+) "
        r"milliseconds",
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
        r"ModuleNotFoundError: No module named|ImportError: |undefined symbol: |CUDA driver version is insufficient"
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
        for match in family.pattern.finditer(text):
            number = lines.number(match.start())
            key = (number, family.name)
            if key in found or any((number, f) in found for f in _SHADOWED.get(family.name, ())):
                continue
            line = lines.line(number)
            if family.name not in _MEMORY and _CODE.match(line):
                continue  # the source line a traceback quotes, not the message
            found[key] = Signal(
                family.name, family.source, match.start(), number, excerpt(line), tuple(numbers_of(family, line))
            )
    return sorted(found.values(), key=lambda s: (s.position, s.family))


#: Families a quoted source line never hides (their wording does not occur in code).
_MEMORY = ("torch_oom", "cuda_error_oom", "vllm_free_memory", "vllm_kv_cache", "vllm_no_cache_blocks", "ray_host_oom")
#: A line of source code that a traceback quotes (``assert …``, ``raise …``, a string literal).
_CODE = re.compile(r"^(?:\([^)]*\)\s*)?(?:\[rank\d+\]:)?\s+(?:assert |raise |if |elif |f?\"|f?')")

#: A family not recorded on a line where a more specific one is (an exception line holding an OOM sentence).
_SHADOWED = {
    "exception": (
        "torch_oom",
        "cuda_error_oom",
        "vllm_free_memory",
        "vllm_kv_cache",
        "vllm_no_cache_blocks",
        "ray_host_oom",
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


def to_mib(value: str, unit: str) -> float:
    return float(value.replace(",", "")) * _BYTES[unit] / 2**20


def numbers_of(family: Family, line: str) -> Iterator[Number]:
    """The figures of one failure line, memory in MiB."""
    reader = _READERS.get(family.name)
    if reader is not None:
        yield from reader(line)


def _mib(name: str, value: str, unit: str) -> Number:
    return Number(name, to_mib(value, unit), "MiB", f"{value} {unit}")


_TORCH_NEW = (
    ("tried_to_allocate", rf"Tried to allocate {_NUMBER} ?{_UNIT}"),
    ("total_capacity", rf"total capac\w* of {_NUMBER} ?{_UNIT}"),
    ("free", rf"of which {_NUMBER} ?{_UNIT} is free"),
    ("process_in_use", rf"this process has {_NUMBER} ?{_UNIT} memory in use"),
    ("allocated_by_pytorch", rf"Of the allocated memory {_NUMBER} ?{_UNIT} is allocated by PyTorch"),
    ("private_pools", rf"with {_NUMBER} ?{_UNIT} allocated in private pools"),
    ("reserved_unallocated", rf"and {_NUMBER} ?{_UNIT} is reserved by PyTorch but unallocated"),
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
    for match in re.finditer(rf"(?:\(GPU \d+; |; ){_NUMBER} ?{_UNIT} ([a-zA-Z ]+?)(?=[;)])", line):
        old = _TORCH_OLD.get(match.group(3).strip())
        if old and old not in seen:
            seen.add(old)
            yield _mib(old, match.group(1), match.group(2))
    others = [m for m in re.finditer(rf"Process \d+ has {_NUMBER} ?{_UNIT} memory in use", line)]
    if others:
        total = sum(to_mib(m.group(1), m.group(2)) for m in others)
        yield Number("other_processes_in_use", total, "MiB", f"{len(others)} other process(es)")


def _vllm_free_numbers(line: str) -> Iterator[Number]:
    match = _VLLM_FREE.search(line)
    if match:
        free, total, utilization, wanted = match.groups()
        yield _mib("free_at_startup", free, "GiB")
        yield _mib("total_capacity", total, "GiB")
        yield Number("gpu_memory_utilization", float(utilization), "fraction", utilization)
        yield _mib("vllm_budget", wanted, "GiB")


def _vllm_kv_numbers(line: str) -> Iterator[Number]:
    old = _KV_OLD.search(line)
    if old:
        yield Number("max_model_len", float(old.group(1)), "tokens", old.group(1))
        yield Number("kv_cache_tokens", float(old.group(2)), "tokens", old.group(2))
        return
    new = _KV_NEW.search(line)
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


_READERS = {
    "torch_oom": _torch_numbers,
    "vllm_free_memory": _vllm_free_numbers,
    "vllm_kv_cache": _vllm_kv_numbers,
    "ray_host_oom": _ray_numbers,
    "kernel_oom": _kernel_numbers,
    "nccl_timeout": _nccl_numbers,
}

#: Figures vLLM logs while it starts (not failures): read from the whole log.
_STARTUP = (
    ("vllm_weights", rf"(?:Loading model weights took|Model loading took|model weights take) {_NUMBER} ?{_UNIT}"),
    ("kv_cache_available", rf"Available KV cache memory: {_NUMBER} ?{_UNIT}"),
    ("kv_cache_reserved", rf"reserved for KV Cache is {_NUMBER} ?{_UNIT}"),
    ("total_capacity", rf"total_gpu_memory[ =(]+{_NUMBER} ?{_UNIT}"),
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


# ---- the phase ------------------------------------------------------------------------------------------------

#: Frames and Ray task names that place a failure in a phase of the colocated loop, most specific first: the
#: weight sync runs inside generate_sequences in older VERL, vLLM's start-up inside init_model.
PHASE_MARKERS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (phase, re.compile(pattern))
    for phase, pattern in (
        (
            "weight_sync",
            r"sharding_manager|ShardingManager|sync_weights|update_weights|load_weights|layered_summon|"
            r"collect_lora_params|summon_full_params|merge_and_unload|rollout_mode|_sync_fsdp_params_to_vllm|"
            r"_move_model_to_vllm|get_peft_model_state_dict|\bwake_up\b",
        ),
        (
            "initializing",
            r"determine_num_available_blocks|profile_run|_initialize_kv_caches|initialize_cache|init_device|"
            r"_init_executor|from_engine_args|determine_available_memory|_build_rollout|EngineCore.__init__|"
            r"LLMEngine.__init__|request_memory",
        ),
        ("checkpoint", r"save_checkpoint|_save_checkpoint|save_pretrained|_save\b"),
        ("validation", r"\b_validate\b|evaluation_loop|\bevaluate\b"),
        (
            "actor_update",
            r"update_policy|update_actor|\bbackward\b|optimizer\.step|_optimizer_step|compute_loss|"
            r"training_step|clip_grad_norm",
        ),
        ("reference_logprob", r"compute_ref_log_prob|compute_log_prob|_get_per_token_logps|logprobs_from_logits"),
        ("rollout", r"generate_sequences|_generate_and_score_completions|\bgenerate\b|_run_engine|execute_model"),
        ("initializing", r"init_model|WorkerDict.__init__|__init__"),
    )
)
_FRAME = re.compile(r'File "([^"\n]{1,300})", line \d+, in ([\w<>.]+)|ray::([\w.]+)|name=([\w:.]+)')


def phase_near(lines: Lines, signal: Signal) -> str | None:
    """The phase of the colocated loop the frames around ``signal`` name (its traceback, Ray's task name), or None."""
    first = signal.line
    for back in range(signal.line - 1, max(signal.line - 400, 0), -1):
        if "Traceback (most recent call last)" in lines.line(back):
            first = back - 3
            break
    else:
        first = signal.line - 40
    names = " ".join(" ".join(g for g in m.groups() if g) for m in _FRAME.finditer(lines.span(first, signal.line + 15)))
    for phase, pattern in PHASE_MARKERS:
        if pattern.search(names):
            return phase
    return None
