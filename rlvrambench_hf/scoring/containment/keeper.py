"""The keeper: a process of the package's own code between the command and the child that runs user code, which
makes sure that nothing user code starts outlives the child (Linux; elsewhere it only waits).

It is forked by the command, starts a session of its own and makes itself a *subreaper*
(``PR_SET_CHILD_SUBREAPER``): every process below it whose parent ends — a double fork, a process that called
``setsid()``, one started with ``posix_spawn`` — is re-parented to it instead of escaping to init. It then forks
the child (which confines itself, :mod:`.confine`) and waits. When the child ends, when the command asks
(``SIGTERM``), or when the command itself dies (``PR_SET_PDEATHSIG`` makes that a ``SIGTERM`` too, even for a
``SIGKILL`` of the command), it kills everything below it — the child's cgroup at once where there is one, then,
round after round, every descendant it can see — reaps them, tells the command how the child ended and exits.

Where the child could not install its seccomp filter, the keeper also watches the command: a command stopped
(``SIGSTOP``, ``SIGTSTP``) while user code runs is resumed, and the user code ended, so that it cannot hang it.

The keeper writes to the command, on its status pipe, ``started PID`` and then ``ended STATUS STOPPED`` (the
child's wait status, or -1 when it had to be killed; STOPPED 1 when it resumed the stopped command).
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from .confine import Plan
from .procs import (
    PR_SET_CHILD_SUBREAPER,
    PR_SET_PDEATHSIG,
    Cgroup,
    children_of,
    descendants,
    end_all,
    prctl,
    reap_children,
    stat_of,
)

#: How often the keeper looks at its child and the command when nothing happened, seconds.
POLL = 0.05
_WAIT = getattr(signal, "sigtimedwait", None)


def keeper_main(  # pragma: no cover - runs in the keeper, which never returns
    plan: Plan, status: int, report: int, kept: tuple[int, ...], start_child: Callable[[], None]
) -> None:
    """The keeper's life: set up, fork the child (``start_child`` never returns), watch, sweep, report, exit.
    ``status`` is its pipe to the command; ``report`` the read end of the pipe the child says on whether it is
    sealed; ``kept`` the descriptors the child needs (closed here once it has them, with every other one)."""
    try:
        if _WAIT is not None:  # told by sigtimedwait, not by handlers
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD, signal.SIGTERM})
        for number in (signal.SIGINT, signal.SIGHUP, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU):
            signal.signal(number, signal.SIG_IGN)
        os.setsid()
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != plan.command:
            _clean_up(plan)
            os._exit(0)
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        child = os.fork()  # before descriptors are closed: a library's fork handler may still need its own
        if child == 0:
            os.close(status)
            start_child()
            os._exit(70)
        _only_descriptors({status, report})
        _say(status, f"started {child}")
        ending, stopped = _watch(plan, child, _sealed(report))
        _sweep(plan)
        if stopped:
            with contextlib.suppress(OSError):
                os.kill(plan.command, signal.SIGCONT)
        if os.getppid() != plan.command:  # the command is gone: what it would have removed, the keeper does
            _clean_up(plan)
        _say(status, f"ended {-1 if ending is None else ending} {int(stopped)}")
    finally:
        os._exit(0)


def _only_descriptors(kept: set[int]) -> None:  # pragma: no cover - runs in the keeper
    null = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        if target not in kept:
            os.dup2(null, target)
    top = max(kept | {2}) + 1
    for fd in range(3, top):
        if fd not in kept and fd != null:
            with contextlib.suppress(OSError):
                os.close(fd)
    os.closerange(top, 1 << 16)
    if null not in kept and null > 2:
        with contextlib.suppress(OSError):
            os.close(null)


def _sealed(report: int) -> bool:  # pragma: no cover - runs in the keeper
    """Whether the child says it runs under its seccomp filter (one byte, ``S``, before any user code runs)."""
    try:
        ready, _, _ = select.select([report], [], [], 30)
        said = os.read(report, 1) if ready else b""
    except OSError:
        said = b""
    with contextlib.suppress(OSError):
        os.close(report)
    return said == b"S"


def _watch(plan: Plan, child: int, sealed: bool) -> tuple[int | None, bool]:  # pragma: no cover - in the keeper
    """Wait until the child ends (its wait status), the command asks or dies (None), or — without the seccomp
    filter — the command is stopped (None, True)."""
    while True:
        for pid, status in reap_children():
            if pid == child:
                return status, False
        if os.getppid() != plan.command:
            return None, False
        if not sealed and _stopped(plan.command):
            return None, True
        if _WAIT is None:  # no sigtimedwait (macOS): a SIGTERM ends the keeper at once
            time.sleep(POLL)
            continue
        with contextlib.suppress(InterruptedError):
            got = _WAIT({signal.SIGCHLD, signal.SIGTERM}, POLL)
            if got is not None and got.si_signo == signal.SIGTERM:
                for pid, status in reap_children():
                    if pid == child:
                        return status, False
                return None, False


def _stopped(pid: int) -> bool:  # pragma: no cover - runs in the keeper
    process = stat_of(pid)
    return process is not None and process.state in ("T", "t")


def _sweep(plan: Plan) -> None:  # pragma: no cover - runs in the keeper
    """Kill everything below the keeper (the cgroup first, at once), and reap it all."""
    if plan.cgroup is not None:
        with contextlib.suppress(OSError):
            (Path(plan.cgroup) / "cgroup.kill").write_text("1")
    me = os.getpid()
    end_all(lambda processes: descendants([me], processes))
    deadline = time.monotonic() + 2
    while children_of(me) and time.monotonic() < deadline:
        reap_children()
        time.sleep(0.002)


def _clean_up(plan: Plan) -> None:  # pragma: no cover - runs in the keeper
    if plan.cgroup is not None:
        Cgroup(Path(plan.cgroup)).remove()
    shutil.rmtree(plan.folder, ignore_errors=True)


def _say(fd: int, line: str) -> None:  # pragma: no cover - runs in the keeper
    with contextlib.suppress(OSError):
        os.write(fd, (line + "\n").encode("ascii"))


class StatusPipe:
    """The keeper's lines, as the command reads them (``started PID``, ``ended STATUS STOPPED``)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buffer, self.ended, self.closed = fd, b"", False, False
        self.gone = False  # the keeper closed the pipe (it ended, or was killed, without a word)

    def lines(self, seconds: float, *, until_end: bool) -> Iterator[list[str]]:
        deadline = time.monotonic() + seconds
        while not self.closed:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                words = line.decode("ascii", "replace").split()
                self.ended = self.ended or words[:1] == ["ended"]
                yield words
                if not until_end:
                    return
            if self.ended or self.gone:
                return
            try:
                ready, _, _ = select.select([self.fd], [], [], max(deadline - time.monotonic(), 0))
                block = os.read(self.fd, 4096) if ready else None
            except (OSError, ValueError):
                return
            if not block:
                self.gone = block == b""
                return
            self.buffer += block

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            with contextlib.suppress(OSError):
                os.close(self.fd)
