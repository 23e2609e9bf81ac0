"""The failure messages a log is searched for (pure data): each family's wordings in every version that prints them,
written for the log's text in lower case (matching is case-insensitive), with the literal ``needles`` of which a
line must hold one to be read at all (so that a log of tens of MiB is read in well under a second).

Sources of the wordings (facts only): PyTorch's caching allocators (``c10/cuda/CUDACachingAllocator.cpp`` and its
HIP, XPU, MPS and torch_npu counterparts; ``CUDAMallocAsyncAllocator.cpp``), vLLM's start-up checks (``gpu_worker``,
``kv_cache_utils``, the V0 cache engine), its sleep-mode allocator (``csrc/cumem_allocator.cpp``: ``CUDA Error: %s at
%s:%d``) and sampler warm-up, Ray's memory monitor, raylet summary and worker-exit messages, NCCL and
``ProcessGroupNCCL``'s watchdog, the Linux OOM killer, Slurm, LSF and Kubernetes, DeepSpeed, and Python's own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: What a family's message says about memory: ``device`` or ``host`` (a memory failure), ``other`` (a failure that
#: is not one), ``unestablished`` (a failure whose cause the log does not state), ``wrapper`` (an OutOfMemoryError
#: Ray relays, device or host by the task that raised it) and ``context`` (no failure: a warning worth listing).
KINDS = ("device", "host", "wrapper", "other", "unestablished", "context")


@dataclass(frozen=True)
class Family:
    """A failure message: its ``name``, the ``source`` that prints it, its ``kind`` (:data:`KINDS`), the lower-case
    ``needles`` a line must hold, the ``pattern`` that finds it (on the lower-cased line, or as written when
    ``cased``) and how many lines after it hold its figures (``follow``)."""

    name: str
    source: str
    kind: str
    needles: tuple[str, ...]
    pattern: re.Pattern[str]
    cased: bool = False
    follow: int = 0


def _family(name: str, source: str, kind: str, needles: tuple[str, ...], pattern: str, **extra: object) -> Family:
    return Family(name, source, kind, needles, re.compile(pattern), **extra)  # type: ignore[arg-type]


FAMILIES: tuple[Family, ...] = (
    # ---- device memory ----
    _family(  # every backend of torch's allocators (1.x "(GPU 0; … total capacity; …)", 2.1+ "GPU 0 has a total
        # capacity of … of which … is free"), torch_npu's "(NPU 0; …)", MPS, and the cudaMallocAsync backend
        "torch_oom",
        "PyTorch",
        "device",
        ("out of memory", "outofmemoryerror", "would exceed allowed memory"),
        r"\b(?:cuda|hip|xpu|npu|mlu|musa|gcu|mps backend) out of memory(?! occurred when)"
        r"|\btorch\.(?:cuda\.|npu\.)?outofmemoryerror\b|allocation on device \d+ would exceed allowed memory",
        follow=6,
    ),
    _family(
        "cuda_error_oom",
        "CUDA",
        "device",
        ("out of memory", "alloc_failed", "memoryallocation", "failed to cuda", "erroroutofmemory", "out_of_memory"),
        r"\b(?:cuda|hip) error: out of memory(?! at \S*cumem)|cuda runtime error \(2\) ?: out of memory"
        r"|cu(?:blas|dnn|sparse|fft)_status_alloc_failed|cudaerrormemoryallocation|hiperroroutofmemory"
        r"|cuda failure \d* ?'out of memory'|failed to cuda [cm]alloc|cuda_error_out_of_memory",
    ),
    _family(  # vLLM's sleep-mode allocator waking up (the weight sync of a colocated trainer)
        "vllm_cumem_oom", "vLLM", "device", ("cumem_allocator",), r"cuda error: out of memory at \S*cumem_allocator"
    ),
    _family(  # vLLM 0.6 and later ("on device cuda:0" in 0.11 and later)
        "vllm_free_memory",
        "vLLM",
        "device",
        ("free memory on device",),
        r"free memory on device(?: [\w:]+)? \([0-9.]+/[0-9.]+ gib\) on startup is less than desired gpu memory "
        r"utilization \([0-9.]+, [0-9.]+ gib\)",
    ),
    _family(  # V0's cache engine, then V1's check (the estimated length since 0.8.5)
        "vllm_kv_cache",
        "vLLM",
        "device",
        ("max seq len",),
        r"the model's max seq len \(\d+\) is larger than the maximum number of tokens that can be stored in kv cache"
        r"|to serve at least one request with the models?'s max seq len \(\d+\), \([0-9.]+ gib kv cache is needed",
    ),
    _family("vllm_no_cache_blocks", "vLLM", "device", ("cache blocks",), r"no available memory for the cache blocks"),
    _family(
        "vllm_sampler_warmup",
        "vLLM",
        "device",
        ("warming up",),
        r"out of memory occurred when warming up (?:the )?(?:sampler|pooler)",
    ),
    _family("ray_task_oom", "Ray", "wrapper", ("outofmemoryerror)",), r"raytaskerror\((?:cuda)?outofmemoryerror\)"),
    # ---- host memory ----
    _family(  # the memory monitor's kill, its node line, its table, its prevention paragraph; the raylet's summary
        "ray_host_oom",
        "Ray",
        "host",
        (
            "low on memory",
            "memory on the node",
            "memory pressure",
            "node_out_of_memory",
            "rayoutofmemoryerror",
            "ray-oom-prevention",
            "memory_usage_threshold",
            "memory users:",
            "due to oom",
            "ray killed this worker",
            "exceptions.outofmemoryerror",
            "provisioning more memory",
        ),
        r"killed due to the node running low on memory|memory on the node \(ip:[^\n]*?was [0-9.]+ ?gb / [0-9.]+ ?gb"
        r"|workers \(tasks / actors\) killed due to memory pressure|node_out_of_memory|rayoutofmemoryerror"
        r"|ray-oom-prevention|ray_memory_usage_threshold|top \d+ memory users:|failed due to oom|ray killed this worker"
        r"|ray\.exceptions\.outofmemoryerror|provisioning more memory on this node",
        follow=12,
    ),
    _family(
        "ray_object_store",
        "Ray",
        "host",
        ("object store", "objectstorefull"),
        r"objectstorefullerror|in object store because it is full|object store is full",
    ),
    _family(  # the kernel (every wording since 2.6), Slurm, LSF, Kubernetes and Docker
        "kernel_oom",
        "Linux",
        "host",
        (
            "out of memory",
            "oom-kill",
            "oom_kill",
            "oomkilled",
            "memory limit",
            "memlimit",
            "oom_reaper",
            "killed process",
            "out-of-memory handler",
        ),
        r"(?:memory cgroup )?out of memory: kill(?:ed)? process \d+|oom-kill:constraint=|invoked oom-killer"
        r"|detected \d+ oom[-_]kill event|killed by the cgroup out-of-memory handler|task \d+: out of memory"
        r"|exceeded (?:job |step )?memory limit|term_memlimit|\boomkilled\b|oom_reaper: reaped process"
        r"|^(?:\[[^\]]*\] )?killed process \d+ \([^)]*\) total-vm",
    ),
    _family(  # torch's CPU allocator, Python's MemoryError, NumPy's, a failed fork
        "host_alloc",
        "Python",
        "host",
        ("defaultcpuallocator", "memoryerror", "unable to allocate", "cannot allocate memory"),
        r"defaultcpuallocator: (?:can't allocate memory|not enough memory)|(?:^|[\s:(.])memoryerror\b"
        r"|unable to allocate [0-9.]+ ?[kmgtp]?i?b for an array|\[errno 12\] cannot allocate memory"
        r"|error code 12 \(cannot allocate memory\)",
    ),
    # ---- not memory ----
    _family(
        "port_collision",
        "network",
        "other",
        ("already in use", "eaddrinuse"),
        r"address already in use|eaddrinuse|errno:? 98\b",
    ),
    _family(
        "nccl_timeout",
        "NCCL",
        "other",
        ("watchdog",),
        r"watchdog caught collective operation timeout: work[nh]ccl\(seqnum=(\d+), optype=(\w{1,40})[^\n]{0,400}?"
        r"ran for (\d+) milliseconds|watchdog got stuck for \d+ seconds",
    ),
    _family(
        "nccl_error",
        "NCCL",
        "other",
        ("nccl", "distbackenderror"),
        r"nccl error[^\n]{0,200}?(?:unhandled (?:system|cuda) error|internal error|invalid usage|remote process)"
        r"|nccl(?:unhandledcudaerror|systemerror|internalerror|remoteerror|invalidusage)|distbackenderror"
        r"|some nccl operations have failed or timed out|nccl communicator was aborted",
    ),
    _family(
        "illegal_memory_access",
        "CUDA",
        "other",
        ("illegal", "misaligned", "device-side assert", "launch failure"),
        r"(?:cuda|hip) error: an illegal (?:memory access|instruction) was encountered|cudaerrorillegaladdress"
        r"|(?:cuda|hip) error: misaligned address|device-side assert(?:ion)? triggered"
        r"|(?:cuda|hip) error: unspecified launch failure",
    ),
    _family(  # VERL's "actor/pg_loss:nan", TRL's "'loss': nan", torch's anomaly and sampling checks
        "numerical",
        "metrics",
        "other",
        ("nan", "inf"),
        r"(?:loss|grad_norm|kl|entropy|score|reward|advantages?)[\w/.@-]*['\"]?\s*[:=]\s*['\"]?-?(?:nan|inf)\b"
        r"|returned nan values|probability tensor contains either `inf`, `nan`"
        r"|(?:loss|grad(?:ient)? ?norm)s? (?:is|are|became|has become) (?:nan|inf|not finite)",
    ),
    _family(
        "configuration",
        "VERL",
        "other",
        (
            "divisible",
            "must be >=",
            "please set at least one of",
            "you have set both",
            "real_train_batch_size",
            "after normalization",
            "could not override",
            "is not in struct",
            "missingmandatoryvalue",
            "configattributeerror",
            "configkeyerror",
        ),
        r"must be divisible by|must be >= |please set at least one of|you have set both|real_train_batch_size"
        r"|should be larger than 0 after normalization|must be evenly divisible by|could not override '"
        r"|is not in struct|missingmandatoryvalue|configattributeerror|configkeyerror",
    ),
    _family(
        "environment",
        "Python",
        "other",
        (
            "modulenotfounderror",
            "importerror",
            "undefined symbol",
            "driver version is insufficient",
            "no kernel image",
            "cuda-capable device",
            "repositorynotfounderror",
            "repository not found",
            "gatedrepoerror",
            "gated repo",
            "401 client error",
            "couldn't connect to",
            "localentrynotfounderror",
        ),
        r"^(?:\([^)\n]*\)\s*)?(?:\[rank\d+\]:\s*)?(?:modulenotfounderror|importerror): |undefined symbol: "
        r"|cuda driver version is insufficient|no kernel image is available for execution"
        r"|no cuda-capable device is detected|repositorynotfounderror|repository not found for url|gatedrepoerror"
        r"|cannot access gated repo|401 client error|we couldn't connect to 'https?://|localentrynotfounderror",
    ),
    _family(
        "shared_memory",
        "filesystem",
        "other",
        ("shared memory", "bus error", "</torch_", "/dev/shm"),
        r"insufficient shared memory|unexpected bus error encountered in worker|unable to write to file </torch_"
        r"|/dev/shm[^\n]*no space left|no space left[^\n]*/dev/shm",
    ),
    _family(
        "disk_full",
        "filesystem",
        "other",
        ("no space left", "outofdiskerror", "disk quota"),
        r"no space left on device|outofdiskerror|disk quota exceeded",
    ),
    _family("vllm_profiling", "vLLM", "other", ("memory profiling",), r"error in memory profiling"),
    _family(
        "time_limit",
        "scheduler",
        "other",
        ("time limit", "timelimit", "term_runlimit"),
        r"due to time ?limit|exceeded (?:the )?(?:wall ?(?:clock )?|run ?)time ?limit|term_runlimit",
    ),
    _family(  # Ray's dead-worker paragraph names SIGSEGV as a possible cause: not a segfault
        "segfault",
        "process",
        "other",
        ("segmentation fault", "sigsegv", "fatal python error"),
        r"segmentation fault|(?<!due to )sigsegv|fatal python error",
    ),
    _family(
        "interrupted",
        "process",
        "other",
        ("keyboardinterrupt", "death signal", "cancelled at", "preemption"),
        r"(?:^|\) |: )keyboardinterrupt\b|received (?:2|15) death signal|\*\*\* (?:job|step) \S+ on \S+ cancelled at "
        r"(?![^\n]*due to time ?limit)|due to preemption",
    ),
    # ---- a failure whose cause the log does not state ----
    _family(
        "ray_worker_lost",
        "Ray",
        "unestablished",
        ("actordied", "rayactorerror", "actor died", "worker died", "worker exit type", "workercrashed"),
        r"actordiederror|rayactorerror|the actor died|worker died or was killed|workercrashederror"
        r"|worker exit type: (?!node_out_of_memory|intended_)\w+|the worker died unexpectedly",
    ),
    _family(
        "killed",
        "process",
        "unestablished",
        ("sigkill", "exit code", "exitcode", "exit status", "exited with", "killed"),
        r"died with <signals\.sigkill: 9>|\bexit(?:ed with)?(?: code| status|code)?\s*:?\s*(?:137|-9)\b"
        r"|signal 9 \(sigkill\)|^killed$|\bsigkill\b",
    ),
    _family(
        "consequence",
        "process",
        "unestablished",
        ("engine core", "enginedeaderror", "childfailederror", "error executing job"),
        r"engine core initialization failed|enginedeaderror|childfailederror|error executing job with overrides"
        r"|enginecore encountered (?:a fatal|an issue)",
    ),
    # ---- context: no failure, but worth listing beside one ----
    _family(  # DeepSpeed ZeRO-3 flushing the allocator's cache under memory pressure
        "memory_pressure",
        "DeepSpeed",
        "context",
        ("allocator cache flushes",),
        r"pytorch allocator cache flushes since last step",
    ),
    # ---- the last resort: any exception line ----
    _family(
        "exception",
        "Python",
        "other",
        ("error:", "exception:", "error\n", "exception\n"),
        r"^(?:[A-Za-z_][\w.]*\.)?([A-Z]\w*(?:Error|Exception))(?::[^\n]*)?$",
        cased=True,
    ),
)
FAMILY = {f.name: f for f in FAMILIES}
#: Families by what they say about memory.
DEVICE_FAMILIES = tuple(f.name for f in FAMILIES if f.kind == "device")
HOST_FAMILIES = tuple(f.name for f in FAMILIES if f.kind == "host")
MEMORY_FAMILIES = (*DEVICE_FAMILIES, "ray_task_oom", *HOST_FAMILIES)
#: A family not recorded on a line where one of these is (the more specific wording of the same line).
SHADOWED: dict[str, tuple[str, ...]] = {
    "exception": tuple(f.name for f in FAMILIES if f.kind != "context" and f.name != "exception"),
    "nccl_error": ("cuda_error_oom",),
    "disk_full": ("shared_memory",),
    "killed": ("ray_worker_lost", "kernel_oom", "ray_host_oom"),
    "segfault": ("ray_worker_lost",),
}
#: Words of the memory messages a terminal's wrap may split: a line holding one is read joined to its neighbours.
WRAP_NEEDLES = ("memory", "out of", "allocate", "kv cache", "capacity")
#: Words that many needles hold: a line is searched for a needle only when it holds the needle's word (the first
#: of these it holds; a needle that holds none is searched for itself).
GATES = ("memory", "oom", "alloc", "cache", "kill", "error", "exit", "nccl", "time", "actor", "worker")

#: The stacks a log shows, by the lower-case words that name them.
STACKS: dict[str, tuple[str, ...]] = {
    "vllm": ("vllm",),
    "sglang": ("sglang",),
    "verl": ("verl", "workerdict"),
    "trl": ("trl/", "trl.", "grpotrainer", "grpoconfig", "rlootrainer"),
    "trlx": ("trlx",),
    "openrlhf": ("openrlhf",),
    "deepspeed": ("deepspeed",),
    "ray": ("ray::", "raylet", "ray.exceptions", "ray/_private"),
    "megatron": ("megatron",),
    "transformers": ("transformers/", "transformers."),
}
