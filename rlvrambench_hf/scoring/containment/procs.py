"""Processes as Linux shows them in ``/proc``, and the system calls that contained user code needs (``prctl``,
``unshare``, ``mount``, cgroup v2), through ctypes: nothing here runs user code.

- :func:`table` reads every process's parent, process group, session and state; :func:`descendants` follows parents
  down from one process; :func:`end_all` kills a set of processes chosen afresh on each round (a process forking
  meanwhile is caught on the next), reaping those that are this process's children, until none is left.
- :class:`Cgroup` is a cgroup v2 folder of its own under this process's cgroup, where the OS lets this process
  make one (root, or a delegated hierarchy): every process moved into it, and every process they start, is ended
  at once by ``cgroup.kill`` whatever session it made.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

LINUX = os.path.isdir("/proc/self") and os.uname().sysname == "Linux"
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_GET_DUMPABLE = 1, 4, 3
PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 36, 38
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4


class Process(NamedTuple):
    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str

    @property
    def alive(self) -> bool:
        """Not a zombie (a zombie has ended: it only waits to be reaped) nor dead."""
        return self.state not in ("Z", "X", "x")


@functools.cache
def libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def prctl(option: int, arg: int = 0, *rest: int) -> bool:
    """``prctl(option, arg, ...)``; whether it succeeded (never raises)."""
    if not LINUX:
        return False
    try:
        args = [ctypes.c_ulong(a) for a in (arg, *rest, 0, 0, 0)[:4]]
        return int(libc().prctl(option, *args)) == 0
    except (OSError, AttributeError):
        return False


def stat_of(pid: int | str) -> Process | None:
    """One process's line of ``/proc/PID/stat`` (None when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()
    try:
        return Process(int(pid), int(fields[1]), int(fields[2]), int(fields[3]), fields[0])
    except (IndexError, ValueError):
        return None


def table() -> dict[int, Process]:
    """Every process this one can see, by pid."""
    found: dict[int, Process] = {}
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit():
                process = stat_of(name)
                if process is not None:
                    found[process.pid] = process
    return found


def children_of(pid: int) -> set[int]:
    """The children of process ``pid`` (``/proc/PID/task/*/children``; a scan of the table where Linux lacks it)."""
    found: set[int] = set()
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", "rb") as handle:
                found.update(int(x) for x in handle.read().split())
    except FileNotFoundError:
        return {p.pid for p in table().values() if p.ppid == pid}
    except (OSError, ValueError):
        pass
    return found


def alive_below(root: int) -> set[int]:
    """The processes below ``root`` that have not ended (followed child by child from ``root``)."""
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children_of(todo.pop()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return {pid for pid in found if (process := stat_of(pid)) is not None and process.alive}


def descendants(roots: Iterable[int], processes: dict[int, Process]) -> set[int]:
    """Every process below ``roots`` (the roots not included) by parent links."""
    children: dict[int, list[int]] = {}
    for process in processes.values():
        children.setdefault(process.ppid, []).append(process.pid)
    found: set[int] = set()
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def living(pids: Iterable[int], processes: dict[int, Process]) -> set[int]:
    return {pid for pid in pids if pid in processes and processes[pid].alive}


def reap_children() -> list[tuple[int, int]]:
    """Reap every child of this process that has ended: (pid, wait status) of each."""
    reaped: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        except OSError:
            return reaped
        if pid == 0:
            return reaped
        reaped.append((pid, status))


def end_all(choose: Callable[[dict[int, Process]], set[int]], *, seconds: float = 5.0) -> int:
    """Kill (SIGKILL) the processes ``choose`` picks from the process table, again and again until none it picks is
    alive, reaping those of them that are this process's children (zombies included); how many were killed."""
    killed: set[int] = set()
    deadline = time.monotonic() + seconds
    while True:
        processes = table()
        chosen = choose(processes) & processes.keys()
        alive = living(chosen, processes)
        for pid in alive:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
        for pid in chosen:  # ours to reap (the command and the keeper are subreapers); others' are not
            with contextlib.suppress(OSError):
                os.waitpid(pid, os.WNOHANG)
        if not alive or time.monotonic() > deadline:
            return len(killed)
        time.sleep(0.005)


def dumpable() -> int:
    """This process's ``PR_GET_DUMPABLE`` (1 where it cannot be read)."""
    if not LINUX:
        return 1
    try:
        return int(libc().prctl(PR_GET_DUMPABLE, 0, 0, 0, 0))
    except (OSError, AttributeError):
        return 1


class Cgroup:
    """A cgroup v2 folder made for one child (``make`` returns None where this process may not make one)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def make(cls, name: str) -> Cgroup | None:
        base = _own_cgroup()
        if base is None or not (base / "cgroup.procs").exists() or not os.access(base, os.W_OK):
            return None
        path = base / name
        try:
            path.mkdir()
        except OSError:
            return None
        if not (path / "cgroup.kill").exists():  # Linux before 5.14: no atomic kill; the sweep does it
            with contextlib.suppress(OSError):
                path.rmdir()
            return None
        return cls(path)

    def enter(self) -> bool:
        """Move the calling process into this cgroup."""
        try:
            (self.path / "cgroup.procs").write_text("0")
            return True
        except OSError:
            return False

    def members(self) -> list[int]:
        try:
            return [int(line) for line in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def remove(self, seconds: float = 5.0) -> None:
        """Kill every process of the cgroup, then remove it once it is empty (its ended processes reaped by their
        parents)."""
        deadline = time.monotonic() + seconds
        while True:
            with contextlib.suppress(OSError):
                (self.path / "cgroup.kill").write_text("1")
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.005)


def _own_cgroup() -> Path | None:
    """The folder of this process's cgroup in the cgroup v2 hierarchy (None without one)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    own = next((line[3:] for line in lines if line.startswith("0::")), None)
    for line in mounts:
        fields = line.split()
        if " - cgroup2 " in line and len(fields) > 4 and own is not None and fields[3] == "/":
            return Path(fields[4] + own)
    return None
