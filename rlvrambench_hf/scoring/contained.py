"""The child process a user's code runs in, contained from import to exit (POSIX, where processes can be forked;
the containment below is Linux's, elsewhere what the OS has).

The command forks a **keeper** (:mod:`.containment.keeper`: the package's own code, a subreaper in a session of
its own), which forks the **child** that imports and runs the user code after confining itself
(:mod:`.containment.confine`). So:

- **Nothing outlives the command.** Every process user code starts — also after ``setsid()``, a double fork or
  ``posix_spawn`` — stays below the keeper (or in the child's cgroup, where the OS allows one) and is killed when
  the child is closed, dies, runs out of time, leaves a process running after a call (an error, like a fork), or
  when the command ends: at exit, on ``SIGINT`` (the command's own ``KeyboardInterrupt``), on ``SIGTERM`` or
  ``SIGHUP`` (handlers that end every child and then let the signal end the command), and on ``SIGKILL`` (the
  keeper is told by ``PR_SET_PDEATHSIG``). The command is a subreaper too: what escapes a killed keeper comes back
  to it and is ended as well.
- **Nothing reaches the command.** The child may not signal, trace or read the command (seccomp, no capabilities;
  the command is not dumpable while a child lives); where seccomp is missing, a command stopped while user code
  runs is resumed and the user code ended. The child has no inherited descriptor, no terminal, no secret in its
  environment, bounded memory and disk.
- **Bounded output**: the child's output goes to a pipe the command drains (the first :data:`OUTPUT_KEPT` bytes
  kept), never to the command's own; shown escaped, behind a margin: it cannot pass for the command's lines.
- **Replies are data**: JSON of plain values (:mod:`.containment.wire`), at most :data:`REPLY_LIMIT` bytes,
  never unpickled; the command checks them again itself (:mod:`.bounded`).
- **Exits that are not answers**: ``os._exit``, a crash or a signal never look like success; nor does user code
  that forks or leaves a thread running (:mod:`.containment.serve`).
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import select
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from types import FrameType
from typing import Any, Literal

from ..errors import OutputError, escaped
from .containment import wire
from .containment.confine import DEFAULT_MEMORY_MIB, DISK_ENV, MEMORY_ENV, Plan, disk_budget, memory_budget
from .containment.keeper import StatusPipe, keeper_main
from .containment.procs import (
    LINUX,
    PR_SET_CHILD_SUBREAPER,
    PR_SET_DUMPABLE,
    Cgroup,
    alive_below,
    children_of,
    descendants,
    dumpable,
    end_all,
    prctl,
)
from .containment.serve import child_main, refuse

__all__ = ["DEFAULT_MEMORY_MIB", "DISK_ENV", "MEMORY_ENV", "disk_budget", "memory_budget", "refuse"]
#: How much of what user code prints is kept (the rest is counted), bytes.
OUTPUT_KEPT = 2048
#: The largest answer a child may send, bytes (a policy's decisions or an estimator's predictions take kilobytes).
REPLY_LIMIT = 64 << 20
#: A reply of a child that stopped answering.
Reply = tuple[Any, ...]
#: What marks each line user code printed when it is shown.
MARGIN = "  | "
_LIVE: set[Child] = set()
_SERIAL = itertools.count(1)


def shown(text: str) -> str:
    """``text`` with every character that is not printable escaped (``\\x1b``, ``\\u202e``), tabs included."""
    return escaped(text, keep="")


class Output:
    """What a child writes to its standard output and error: the first :data:`OUTPUT_KEPT` bytes and the count."""

    def __init__(self, fd: int) -> None:
        self.fd, self.kept, self.total = fd, bytearray(), 0
        self.thread = threading.Thread(target=self._drain, name="rlvrambench user output", daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while True:
            try:
                block = os.read(self.fd, 1 << 16)
            except OSError:
                return
            if not block:
                return
            self.total += len(block)
            if len(self.kept) < OUTPUT_KEPT:
                self.kept += block[: OUTPUT_KEPT - len(self.kept)]

    def close(self) -> None:
        self.thread.join(2)
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def excerpt(self) -> str:
        """The kept output, each line escaped and behind :data:`MARGIN`, cut where the count says more was
        printed."""
        text = bytes(self.kept).decode("utf-8", "backslashreplace")
        lines = [MARGIN + shown(line) for line in text.removesuffix("\n").split("\n")]
        more = self.total - len(self.kept)
        return "\n".join(lines) + (f"\n… ({more:,} more bytes not shown)" if more > 0 else "")


class Child:
    """A child that runs ``setup`` (which returns the object: an import, or the object already in memory) and then
    answers requests. ``serve(obj, *request)`` makes a reply. Messages before the first reply: ``("step",
    doing)`` as each part of the setup starts, then ``("ready", name)`` or the reply that says why not. ``pid`` is
    its keeper's (the leader of a session and process group of its own), ``user_pid`` the child's."""

    def __init__(self, setup: Callable[[Callable[[str], None]], Any], serve: Callable[..., Reply]) -> None:
        import multiprocessing

        _prepare_command()
        command = os.getpid()
        folder = _working_folder()
        self.conn, child_end = multiprocessing.get_context("fork").Pipe()
        out_read, out_write = os.pipe()
        status_read, status_write = os.pipe()
        report_read, report_write = os.pipe()
        self.folder = folder
        self.cgroup = Cgroup.make(f"rlvrambench-{command}-{next(_SERIAL)}") if LINUX else None
        self._known = children_of(command) if LINUX else set()  # the command's own children: not the user's
        groups = tuple({os.getpgid(0), os.getsid(0)} - {0, 1})
        for stream in (sys.stdout, sys.stderr):  # else the child would print what the parent had buffered
            with contextlib.suppress(Exception):
                stream.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the keeper, which never returns
            keeper = os.getpid()
            plan = Plan(
                command, keeper, (*groups, keeper), self.folder, _path(self.cgroup), memory_budget(), disk_budget()
            )
            start = partial(child_main, plan, child_end, out_write, report_write, setup, serve)
            keeper_main(plan, status_write, report_read, (child_end.fileno(), out_write, report_write), start)
        self.pid = pid
        for fd in (out_write, status_write, report_read, report_write):
            os.close(fd)
        child_end.close()
        self.output = Output(out_read)
        self._status = StatusPipe(status_read)
        self.user_pid: int | None = None
        self.status: int | None = None
        self.resumed = False  # the command was stopped by the user code and resumed
        _LIVE.add(self)

    def receive(self, timeout: float | None) -> Reply | None:
        """The next message, None when none came within ``timeout``; ``("died", how)`` when the child is gone (its
        socket closed, or its keeper says it ended or is gone itself: a process the child started may hold the
        socket open)."""
        waited = self._wait(timeout)
        if waited is not True:
            return waited
        try:
            data = self.conn.recv_bytes(REPLY_LIMIT)
        except (EOFError, ConnectionError):
            return ("died", self.ending())
        except OSError:  # a message longer than REPLY_LIMIT
            self.stop()
            return ("unreadable", False, f"sent an answer of more than {REPLY_LIMIT >> 20} MiB", "")
        try:
            reply = wire.decode(data)
        except wire.WireError as exc:
            self.stop()
            return ("unreadable", False, f"sent an answer that is not data the command reads ({exc})", "")
        if reply[0] in ("ok", "ready"):
            left = self.left_running()
            if left:
                self.stop()
                return ("stray", f"left {len(left)} process(es) running; user code must not leave processes "
                        "running when it returns (they were ended)")  # fmt: skip
        return reply

    def _wait(self, timeout: float | None) -> Literal[True] | Reply | None:
        """True once the socket can be read, None after ``timeout``, ``("died", how)`` when the keeper says the
        child ended (or is gone itself)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(deadline - time.monotonic(), 0)
            try:
                ready, _, _ = select.select([self.conn.fileno(), self._status.fd], [], [], left)
            except (OSError, ValueError):
                return True  # a closed socket: reading it says so
            if not ready:
                return None
            if self.conn.fileno() in ready:
                return True
            self._read_status(0, until_end=True)
            if self._status.ended or self._status.gone:
                return ("died", self.ending())

    def ask(self, request: tuple[Any, ...], timeout: float | None) -> Reply | None:
        """Send ``request`` and wait for its reply (None: the time ran out, and the child was stopped)."""
        try:
            self.conn.send(request)
        except (OSError, ValueError):
            return ("died", self.ending())
        reply = self.receive(timeout)
        if reply is None:
            self.stop()
        return reply

    def left_running(self) -> set[int]:
        """The processes below the keeper, but the child, that still run."""
        if not LINUX:
            return set()
        if self.user_pid is None:
            self._read_status(5)
        return alive_below(self.pid) - {self.user_pid}

    def ending(self) -> str:
        """How the child ended (it is stopped, with everything it started, if it still runs)."""
        ended = self._read_status(5, until_end=True)
        self.stop()
        code = self.status
        if self.resumed:
            return "it stopped the command's process (the command was resumed)"
        if not ended or code is None:
            return "it stopped answering"
        if os.WIFSIGNALED(code):
            number = os.WTERMSIG(code)
            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(number).name}"
            return f"killed by signal {number}"
        return f"exit status {os.WEXITSTATUS(code)}"

    def _read_status(self, seconds: float, *, until_end: bool = False) -> bool:
        """Read the keeper's lines for up to ``seconds`` (until the child's pid, or its end); whether it ended."""
        for words in self._status.lines(seconds, until_end=until_end):
            if words[:1] == ["started"] and len(words) == 2:
                self.user_pid = int(words[1])
            elif words[:1] == ["ended"] and len(words) == 3:
                code, self.resumed = int(words[1]), words[2] == "1"
                self.status = code if code >= 0 else None
        return self._status.ended

    def stop(self) -> None:
        """End the child and everything it started; reap the keeper; remove the child's folder and cgroup."""
        if self not in _LIVE:
            return
        _LIVE.discard(self)
        with contextlib.suppress(Exception):
            self.conn.send(None)  # the child ends, and its keeper with it, once it reads this
        for ask, seconds in ((None, 0.5), (signal.SIGTERM, 2.0), (signal.SIGKILL, 0.0)):
            if ask is not None:
                with contextlib.suppress(OSError):
                    os.kill(self.pid, ask)
            if self._read_status(seconds, until_end=True):
                break
        self._reap_keeper()
        if LINUX:
            end_all(self._escaped)  # what came back to the command (a killed keeper's), reaped here
        if self.cgroup is not None:
            self.cgroup.remove()
        shutil.rmtree(self.folder, ignore_errors=True)
        with contextlib.suppress(Exception):
            self.conn.close()
        self.output.close()
        self._status.close()
        if not _LIVE:
            _restore_dumpable()

    def _reap_keeper(self) -> None:
        deadline = time.monotonic() + 5
        while True:
            try:
                pid, _ = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == self.pid:
                return
            if time.monotonic() > deadline:
                with contextlib.suppress(OSError):
                    os.kill(self.pid, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(self.pid, 0)
                return
            time.sleep(0.005)

    def _escaped(self, processes: dict[int, Any]) -> set[int]:
        """What escaped the keeper (it was killed): the command's children it did not have before this child, other
        than live keepers; the members of the keeper's and the child's sessions; and what they started."""
        me, keepers = os.getpid(), {child.pid for child in _LIVE}
        sessions = {self.pid, self.user_pid or -1}
        roots = {
            p.pid
            for p in processes.values()
            if p.pid != me
            and p.pid not in keepers
            and ((p.ppid == me and p.pid not in self._known) or p.sid in sessions)
        }
        return roots | (descendants(roots, processes) - keepers - {me})


def _working_folder() -> str:
    try:
        return tempfile.mkdtemp(prefix="rlvrambench-user-")
    except OSError as exc:
        raise OutputError(f"no working folder for user code can be made in {tempfile.gettempdir()} ({exc})") from None


def _path(cgroup: Cgroup | None) -> str | None:
    return None if cgroup is None else str(cgroup.path)


_PREPARED: list[bool] = []
_DUMPABLE: list[int] = []


def _prepare_command() -> None:
    """Once per process: make the command a subreaper, end every child on ``SIGTERM`` and ``SIGHUP``; while a
    child lives, the command is not dumpable (its memory, environment and descriptors closed to other processes)."""
    if not _LIVE and LINUX:
        _DUMPABLE[:] = [dumpable()]
        if _DUMPABLE[0] == 1:
            prctl(PR_SET_DUMPABLE, 0)
    if _PREPARED:
        return
    _PREPARED.append(True)
    if not LINUX:
        return
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    if threading.current_thread() is not threading.main_thread():
        return
    for number in (signal.SIGTERM, signal.SIGHUP):
        previous = signal.getsignal(number)
        if previous not in (signal.SIG_IGN, None):
            signal.signal(number, partial(_ended_by, previous=previous))


def _ended_by(number: int, frame: FrameType | None, previous: Any) -> None:
    """A signal that ends the command: end every child first, then do what was done before."""
    stop_all()
    if callable(previous):
        previous(number, frame)
        return
    signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)


def _restore_dumpable() -> None:
    if _DUMPABLE and _DUMPABLE[0] == 1:
        prctl(PR_SET_DUMPABLE, 1)


@atexit.register
def stop_all() -> None:
    """End every child still running (the command is exiting)."""
    for child in list(_LIVE):
        child.stop()
