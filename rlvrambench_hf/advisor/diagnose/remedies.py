"""A fix in a failure log's answer (:class:`Fix`: VERL's and TRL's spellings, or the setting of neither, and the
stack it needs), and the fixes of the failures that are not memory failures, with where to look when the log does
not establish a cause (a worker killed without a word: the kernel's log, Ray's raylet log, the scheduler's record).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Fix:
    """A fix: its ``verl`` key and ``trl`` argument (None: the framework has none), or ``other`` (a setting of
    neither: DeepSpeed's config, Ray's environment, the scheduler, a command to look with), the ``change`` and
    ``why``; ``needs``: the stack it applies to (``vllm``, ``deepspeed``, ``ray``; None: any)."""

    verl: str | None
    trl: str | None
    change: str
    why: str
    other: str | None = None
    needs: str | None = None

    @property
    def key(self) -> str:
        return self.verl or self.other or self.trl or ""

    def as_dict(self, basis: str = "docs") -> dict[str, Any]:
        return {
            "key": self.key,
            "trl": self.trl,
            "verl": self.verl,
            "change": self.change,
            "why": self.why,
            "basis": basis,
        }


_LOOK_KERNEL = Fix(
    None,
    None,
    "look on the node that ran it",
    "the kernel's OOM killer, a common cause, kills with SIGKILL and writes only to the kernel log",
    other="dmesg -T | grep -iE 'killed process|out of memory'",
)

#: The fixes of each class that is not a memory failure, and where to look for those the log does not establish.
OTHER_FIXES: dict[str, tuple[Fix, ...]] = {
    "distributed_port_collision": (
        Fix(
            None,
            None,
            "a free port per concurrent job",
            "another process on the node holds the port",
            other="MASTER_PORT / ray start --port / VLLM_PORT",
        ),
    ),
    "nccl": (
        Fix(
            "actor_rollout_ref.nccl_timeout",
            "ddp_timeout",
            "raise only if a collective is slow, not stuck",
            "a timeout usually follows a failure on another rank: find that rank's first error (NCCL_DEBUG=INFO)",
        ),
    ),
    "configuration": (
        Fix(
            None,
            None,
            "consistent values",
            "VERL validates batch sizes before any memory is used: train_batch_size x rollout.n divisible by the "
            "GPUs, mini-batches by micro-batches",
            other="the keys the message names",
        ),
    ),
    "environment": (
        Fix(
            None,
            None,
            "install or grant what is missing",
            "a package, a driver or access to a model is missing",
            other="the environment",
        ),
    ),  # fmt: skip
    "numerical": (
        Fix("actor_rollout_ref.actor.optim.lr", "learning_rate", "lower", "a step too large sends the loss to inf"),
        Fix("actor_rollout_ref.actor.grad_clip", "max_grad_norm", "1.0 or lower", "clips the step that diverges"),
        Fix(None, "bf16", "True (not fp16)", "fp16's range overflows in large logits"),
    ),
    "cuda_kernel_error": (
        Fix(
            None,
            None,
            "set it and run again",
            "kernels then fail where they are called: an illegal access or a device-side assert is a bug or a bad "
            "input (a token id beyond the vocabulary), not a lack of memory",
            other="CUDA_LAUNCH_BLOCKING=1",
        ),
    ),
    "disk_full": (
        Fix("trainer.default_local_dir", "output_dir", "a folder on a disk with room", "checkpoints go there"),
        Fix(
            None,
            None,
            "on a disk with room",
            "caches and Ray's spill files go there",
            other="HF_HOME, TMPDIR, Ray's --temp-dir",
        ),
    ),  # fmt: skip
    "shared_memory": (
        Fix(
            None,
            None,
            "larger (16 GiB or more)",
            "the container's /dev/shm holds what processes pass each other, NCCL's buffers and data batches",
            other="docker run --shm-size / a Kubernetes emptyDir with medium: Memory on /dev/shm",
        ),
        Fix(
            "data.dataloader_num_workers", "dataloader_num_workers", "lower", "loader workers pass batches via /dev/shm"
        ),
    ),
    "vllm_memory_profiling": (
        Fix(
            None,
            None,
            "nothing else allocating or freeing on them while vLLM starts",
            "vLLM measures free memory before and after its profiling run; memory another process freed in between "
            "fails its check (in a colocated run: the trainer)",
            other="the devices vLLM starts on",
        ),
    ),
    "time_limit": (
        Fix(None, None, "longer", "the scheduler stopped the job at its time limit", other="#SBATCH --time"),
        Fix("trainer.resume_mode", "resume_from_checkpoint", "auto / True", "continue from the last checkpoint"),
    ),
    "crash": (
        Fix(
            None,
            None,
            "set it and run again",
            "Python then prints the stack of the thread that crashed",
            other="PYTHONFAULTHANDLER=1",
        ),
    ),  # fmt: skip
    "interrupted": (
        Fix(None, None, "resubmit", "a user or the scheduler stopped the run", other="the scheduler's record"),
    ),
    "worker_lost": (
        _LOOK_KERNEL,
        Fix(
            None,
            None,
            "look",
            "Ray's raylet records why workers exited, and the ones it killed for memory pressure",
            other="ray logs raylet.out -ip <the node's IP>",
            needs="ray",
        ),
    ),
    "killed": (
        _LOOK_KERNEL,
        Fix(
            None,
            None,
            "look at the job's state and peak memory",
            "a scheduler or a container runtime that killed for memory says so there (OOMKilled, OUT_OF_MEMORY)",
            other="sacct -j <job> --format=JobID,State,MaxRSS,ReqMem / kubectl describe pod / docker inspect",
        ),
    ),
    "ray_task_oom": (
        Fix(
            None,
            None,
            "look for the message",
            "PyTorch's device OOM says 'CUDA out of memory', Ray's host-memory kill 'Task was killed due to the node "
            "running low on memory'",
            other="the log of the Ray task that raised it",
        ),
    ),
    "consequence": (
        Fix(
            None,
            None,
            "look for its first error",
            "this failure reports another process's: vLLM's engine core, a Ray worker or a torchrun child; Hydra "
            "prints the whole error with HYDRA_FULL_ERROR=1",
            other="the log above it, or the failed process's own",
        ),
    ),
    "runtime": (Fix(None, None, "read the first error", "the log names no memory failure", other="the log"),),
}
