"""What the child process of user code does to itself before the first line of user code runs (Linux; elsewhere the
parts the OS has): after this it cannot reach the command, its terminal, its secrets or more than its share of
memory and disk.

- **Its own session** (``setsid``: no controlling terminal, its own process group) and death with its keeper
  (``PR_SET_PDEATHSIG``); moved into the command's cgroup for it, where there is one (:class:`~.procs.Cgroup`).
- **No inherited file descriptor** but its request socket, its output pipe (as standard output and error) and
  ``/dev/null`` as standard input: nothing the command had open (a terminal, an output file) stays reachable.
- **No secret in its environment**: every variable named like a credential (``*_TOKEN``, ``*_KEY``, ``*_SECRET``,
  ``*_PASSWORD``, cloud credentials, ...) or holding one (a URL with a password, a Hugging Face token) is removed,
  also from the environment block ``/proc/self/environ`` shows; ``huggingface_hub`` finds no stored token.
- **Bounded disk**: a private working folder (``TMPDIR``) of at most :data:`DISK_ENV` MiB, and no file larger than
  that anywhere (``RLIMIT_FSIZE``; a write past it fails with ``EFBIG``). Where the OS allows a mount namespace
  (root, or unprivileged user namespaces), the folder is a tmpfs of that size and every other mount is read-only in
  the child's view: it cannot fill any disk.
- **Bounded memory** (:data:`MEMORY_ENV`; ``RLIMIT_DATA``, hard limit too), no core dumps.
- **No capability** (bounding, ambient, effective, permitted sets emptied), no new privileges, and a seccomp filter
  (:mod:`.seccomp`): no signal to the command or its keeper, no ``ptrace``, no access to another process's memory.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import resource
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...errors import redact
from . import seccomp
from .procs import (
    LINUX,
    PR_CAP_AMBIENT,
    PR_CAP_AMBIENT_CLEAR_ALL,
    PR_CAPBSET_DROP,
    PR_SET_PDEATHSIG,
    Cgroup,
    libc,
    prctl,
)

#: The environment variable that sets how many MiB a user's code may allocate beyond what its process inherits.
MEMORY_ENV = "RLVRAMBENCH_USER_MEMORY_MIB"
DEFAULT_MEMORY_MIB = 4096
#: The environment variable that sets how many MiB user code may write (its working folder; any one file).
DISK_ENV = "RLVRAMBENCH_USER_DISK_MIB"
DEFAULT_DISK_MIB = 256
#: Names of variables that hold credentials (matched anywhere in the name, any case).
SECRET_NAME = re.compile(
    r"(?i)(^|_)(TOKENS?|AUTH|OAUTH|AUTHORIZATION|COOKIES?)($|_)|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL"
    r"|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|_KEY$|^KEY$|CONNECTION_STRING|NETRC|_PWD$"
    r"|^AWS_|^AZURE_|^GOOGLE_|^GCP_|^GCLOUD_|^CLOUDSDK_"
)
CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUSER = 0x00020000, 0x02000000, 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_REC, MS_PRIVATE = 16384, 1 << 18
_KEPT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": 1024, "nodiratime": 2048}
_KEPT_FLAGS |= {"relatime": 1 << 21, "strictatime": 1 << 24}


def budget(name: str, default: float) -> int:
    """The bytes the environment variable ``name`` grants in MiB (the default where it is unset or not a number;
    at least 16 MiB)."""
    given = os.environ.get(name, "")
    try:
        mib = float(given) if given.strip() else default
    except ValueError:
        mib = default
    mib = mib if mib == mib and mib < 2**40 else default
    return int(max(mib, 16) * 2**20)


def memory_budget() -> int:
    """The bytes user code may allocate beyond what it inherits (:data:`MEMORY_ENV`, else the default)."""
    return budget(MEMORY_ENV, DEFAULT_MEMORY_MIB)


def disk_budget() -> int:
    """The bytes user code may write (:data:`DISK_ENV`, else the default)."""
    return budget(DISK_ENV, DEFAULT_DISK_MIB)


@dataclass(frozen=True)
class Plan:
    """What the child is confined to: the processes it may not touch, its working folder and its cgroup."""

    command: int
    keeper: int
    groups: tuple[int, ...]
    folder: str
    cgroup: str | None
    memory: int
    disk: int


def confine(plan: Plan, keep: int, output: int, report: int) -> int:  # pragma: no cover - runs in the child
    """Confine the calling process (the child) as the module says: ``keep`` is its request socket, ``output`` the
    write end of its output pipe, ``report`` the pipe to its keeper, which is told (``S``) whether the seccomp
    filter is on (else the keeper watches the command) and then closed. The socket's new descriptor."""
    os.setsid()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != plan.keeper:  # the keeper ended before the line above
        os._exit(1)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the command's to handle: it ends this child
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the file size bound fails with EFBIG instead
    socket_fd, report = _descriptors(keep, output, report)
    _environment(plan.folder)
    if plan.cgroup is not None and Cgroup(Path(plan.cgroup)).enter():
        _unshare(CLONE_NEWCGROUP)  # moving out of it again is refused to a process whose namespace starts there
    _mounts(plan.folder, plan.disk)
    _limits(plan.memory, plan.disk)
    _drop_capabilities()
    sealed = seccomp.install((plan.command, plan.keeper), plan.groups)
    os.write(report, b"S" if sealed else b"W")
    os.dup2(0, report, inheritable=False)  # told once: the keeper's pipe is closed, its number kept
    return socket_fd


def _descriptors(keep: int, output: int, report: int) -> tuple[int, int]:  # pragma: no cover - in the child
    """Standard input from /dev/null, output and error to ``output``; the socket ``keep`` and ``report`` moved to
    numbers of their own (not inherited by programs user code runs). Every other descriptor now points to
    /dev/null: nothing the command had open stays reachable, and no number a library still holds is left closed
    (pyarrow's fork handler aborts when the pipe it made cannot be closed) or taken by another file."""
    import fcntl

    socket_fd, output_fd, report_fd = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) for fd in (keep, output, report))
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    for fd in _open_descriptors():
        if fd > 2 and fd not in (socket_fd, report_fd):
            os.dup2(0, fd, inheritable=False)
    return socket_fd, report_fd


def _open_descriptors() -> list[int]:  # pragma: no cover - runs in the child
    try:
        return sorted(int(name) for name in os.listdir("/proc/self/fd"))
    except OSError:
        return [fd for fd in range(5, 4096) if _is_open(fd)]


def _is_open(fd: int) -> bool:  # pragma: no cover - runs in the child
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def secret(name: str, value: str) -> bool:
    """Whether the variable ``name=value`` holds a credential (by its name, or by a value that looks like one)."""
    return bool(SECRET_NAME.search(name)) or redact(value) != value


def _environment(folder: str) -> None:  # pragma: no cover - runs in the child
    removed = [name for name, value in os.environ.items() if secret(name, value)]
    for name in removed:
        del os.environ[name]  # unsetenv too
    _scrub_block({name.encode("utf-8", "surrogateescape") for name in removed})
    os.environ["HF_TOKEN_PATH"] = os.path.join(folder, "no-token")  # huggingface_hub's stored token: none
    os.environ["HF_HUB_DISABLE_IMPLICIT_TOKEN"] = "1"
    for name in ("TMPDIR", "TMP", "TEMP"):
        os.environ[name] = folder
    tempfile.tempdir = None


def _scrub_block(names: set[bytes]) -> None:  # pragma: no cover - runs in the child
    """Zero the entries of ``names`` in the process's initial environment block (what ``/proc/self/environ`` and
    the memory of a forked copy keep after ``unsetenv``)."""
    if not names or not LINUX:
        return
    try:
        with open("/proc/self/stat", "rb") as handle:
            fields = handle.read().rpartition(b")")[2].split()
        start, end = int(fields[47]), int(fields[48])
    except (OSError, IndexError, ValueError):
        return
    if not 0 < start < end or end - start > 1 << 24:
        return
    block = ctypes.string_at(start, end - start)
    offset = 0
    for entry in block.split(b"\0"):
        if entry.partition(b"=")[0] in names:
            ctypes.memset(start + offset, 0, len(entry))
        offset += len(entry) + 1


def _unshare(flags: int) -> bool:  # pragma: no cover - runs in the child
    try:
        return int(libc().unshare(flags)) == 0
    except (OSError, AttributeError):
        return False


def _mount(source: str | None, target: str, kind: str | None, flags: int, data: str | None = None) -> bool:
    def text(value: str | None) -> bytes | None:  # pragma: no cover - runs in the child
        return None if value is None else value.encode("utf-8", "surrogateescape")

    try:  # pragma: no cover - runs in the child
        return int(libc().mount(text(source), text(target), text(kind), ctypes.c_ulong(flags), text(data))) == 0
    except (OSError, AttributeError):  # pragma: no cover
        return False


def _mounts(folder: str, disk: int) -> bool:  # pragma: no cover - runs in the child
    """A mount namespace of the child's own (root's, else a user namespace's) where every mount is read-only but
    ``folder``, a tmpfs of ``disk`` bytes; whether it could be made."""
    if not LINUX:
        return False
    uid, gid = os.getuid(), os.getgid()
    if not _unshare(CLONE_NEWNS):
        if not _unshare(CLONE_NEWUSER | CLONE_NEWNS):
            return False
        try:
            for name, text in (("uid_map", f"{uid} {uid} 1"), ("setgroups", "deny"), ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as handle:
                    handle.write(text)
        except OSError:
            return False
    if not _mount(None, "/", None, MS_REC | MS_PRIVATE):
        return False
    for target, options in _mount_points():
        if target != folder and "ro" not in options:
            kept = sum(flag for name, flag in _KEPT_FLAGS.items() if name in options)
            _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept)
    return _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"size={disk},mode=0700")


def _mount_points() -> list[tuple[str, set[str]]]:  # pragma: no cover - runs in the child
    """Every mount point of this namespace with its per-mount options (octal escapes of mountinfo undone)."""
    try:
        with open("/proc/self/mountinfo", "rb") as handle:
            lines = handle.read().decode("utf-8", "surrogateescape").splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split()
        if len(fields) > 5:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            found.append((point, set(fields[5].split(","))))
    return found


def _limits(memory: int, disk: int) -> None:  # pragma: no cover - runs in the child
    """No core dumps; ``memory`` bytes beyond what is in use, ``disk`` bytes per file (soft and hard limits)."""
    with contextlib.suppress(Exception):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _lower(resource.RLIMIT_FSIZE, disk)
    kind = getattr(resource, "RLIMIT_DATA", None) if sys.platform.startswith("linux") else None
    kind = kind if kind is not None else resource.RLIMIT_AS
    _lower(kind, _in_use("VmData" if kind != resource.RLIMIT_AS else "VmSize") + memory)


def _lower(kind: int, limit: int) -> None:  # pragma: no cover - runs in the child
    """Set both limits of ``kind`` to ``limit`` (or keep a lower hard limit): user code cannot raise them again."""
    with contextlib.suppress(Exception):
        soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(kind, (limit, limit))


def _in_use(field: str) -> int:  # pragma: no cover - runs in the child
    """This process's ``VmData`` / ``VmSize`` in bytes (0 where /proc does not say)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _drop_capabilities() -> None:  # pragma: no cover - runs in the child
    """Empty the bounding and ambient sets, then the effective, permitted and inheritable ones (``capset``)."""
    if not LINUX:
        return
    try:
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            last = int(handle.read())
    except (OSError, ValueError):
        last = 40
    for capability in range(last + 1):
        prctl(PR_CAPBSET_DROP, capability)
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    data = (ctypes.c_uint32 * 6)()  # two {effective, permitted, inheritable}, all empty
    with contextlib.suppress(OSError, AttributeError):
        libc().capset(ctypes.byref(Header(0x20080522, 0)), data)
