"""The child process a user's code runs in, contained from import to exit (POSIX, where processes can be forked).

- **Its own process group**, which the command ends with ``killpg`` (the child and every process it started)
  whenever the child is closed, dies, runs out of time or the command exits. When the command itself is killed,
  the child follows it (``PR_SET_PDEATHSIG`` on Linux), and so does every process the user code forks from Python
  (each is given the same signal when its own parent dies).
- **Bounded memory**: the child may allocate :data:`MEMORY_ENV` MiB (default :data:`DEFAULT_MEMORY_MIB`) beyond
  what it inherits (``RLIMIT_DATA`` on Linux, ``RLIMIT_AS`` elsewhere); more is a ``MemoryError`` in the user's
  code. Core dumps are off.
- **Bounded output**: the child's standard output and error go to a pipe that the command drains, keeping the first
  :data:`OUTPUT_KEPT` bytes and counting the rest — never to the command's own output. Its standard input is empty.
- **Bounded replies**: an answer larger than :data:`REPLY_LIMIT` bytes is refused.
- **Exits that are not answers**: ``os._exit``, a crash or a signal never look like success. Neither does user
  code that forks (a forked copy that returns is ended quietly: only the process the command started answers) or
  leaves a non-daemon thread running when it returns: both are errors (``("stray", what)``), and the child ends
  with ``os._exit`` whatever its threads do.

Requests and replies are :mod:`.bounded`'s; this module moves them.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, cast

#: The environment variable that sets how many MiB a user's code may allocate beyond what its process inherits.
MEMORY_ENV = "RLVRAMBENCH_USER_MEMORY_MIB"
DEFAULT_MEMORY_MIB = 4096
#: How much of what user code prints is kept (the rest is counted), bytes.
OUTPUT_KEPT = 2048
#: The largest answer a child may send, bytes (a policy's decisions or an estimator's predictions take kilobytes).
REPLY_LIMIT = 64 << 20
#: A reply of a child that stopped answering.
Reply = tuple[Any, ...]
_LIVE: set[Child] = set()


def memory_budget() -> int:
    """The bytes user code may allocate beyond what it inherits (:data:`MEMORY_ENV`, else the default)."""
    given = os.environ.get(MEMORY_ENV, "")
    try:
        mib = float(given) if given.strip() else DEFAULT_MEMORY_MIB
    except ValueError:
        mib = DEFAULT_MEMORY_MIB
    return int(max(mib, 16) * 2**20)


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
        """The kept output as text (invalid bytes escaped), cut where the count says more was printed."""
        text = bytes(self.kept).decode("utf-8", "backslashreplace")
        more = self.total - len(self.kept)
        return text + (f"\n… ({more:,} more bytes not shown)" if more > 0 else "")


class Child:
    """A forked child in its own process group that runs ``setup`` (which returns the object: an import, or the
    object already in memory) and then answers requests over a socket pair. ``serve(obj, request)`` makes a reply.
    Messages before the first reply: ``("step", doing)`` as each part of the setup starts, then ``("ready", name)``
    or the reply that says why not."""

    def __init__(self, setup: Callable[[Callable[[str], None]], Any], serve: Callable[..., Reply]) -> None:
        import multiprocessing

        self.conn, child_end = multiprocessing.get_context("fork").Pipe()
        out_read, out_write = os.pipe()
        for stream in (sys.stdout, sys.stderr):  # else the child would print what the parent had buffered
            with contextlib.suppress(Exception):
                stream.flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child, which never returns
            _child_main(parent, child_end, self.conn, out_read, out_write, setup, serve)
        self.pid = pid
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # also done by the child: whichever runs first
        child_end.close()
        os.close(out_write)
        self.output = Output(out_read)
        self.status: int | None = None
        _LIVE.add(self)

    def receive(self, timeout: float | None) -> Reply | None:
        """The next message, None when none came within ``timeout``; ``("died", how)`` when the child is gone."""
        try:
            if not self.conn.poll(timeout):
                return None
            return cast("Reply | None", pickle.loads(self.conn.recv_bytes(REPLY_LIMIT)))  # the user's own code answers
        except (EOFError, ConnectionError):
            return ("died", self.ending())
        except OSError:  # a message longer than REPLY_LIMIT
            self.stop()
            return ("raised", False, f"an answer of more than {REPLY_LIMIT >> 20} MiB", "")
        except Exception as exc:  # an answer that cannot be unpickled here
            self.stop()
            return ("raised", False, f"an answer that cannot be read ({type(exc).__name__})", "")

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

    def ending(self) -> str:
        """How the child ended (it is stopped, with its process group, if it still runs)."""
        deadline = time.monotonic() + 5
        while not _exited(self.pid) and time.monotonic() < deadline:  # not reaped: the group id stays its own
            time.sleep(0.01)
        ended = _exited(self.pid)
        self.stop()
        code = self.status
        if code is None or not ended:
            return "it stopped answering"
        if os.WIFSIGNALED(code):
            number = os.WTERMSIG(code)
            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(number).name}"
            return f"killed by signal {number}"
        return f"exit status {os.WEXITSTATUS(code)}"

    def stop(self) -> None:
        """End the child and every process of its group; reap it; close the pipes."""
        if self not in _LIVE:
            return
        _LIVE.discard(self)
        with contextlib.suppress(Exception):
            self.conn.send(None)
        deadline = time.monotonic() + 0.5
        while self.status is None and time.monotonic() < deadline and not _exited(self.pid):
            time.sleep(0.01)
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signal.SIGKILL)  # the group outlives its leader while a member lives
        self._reap(0)
        with contextlib.suppress(Exception):
            self.conn.close()
        self.output.close()

    def _reap(self, flags: int) -> None:
        if self.status is not None:
            return
        with contextlib.suppress(ChildProcessError):
            pid, status = os.waitpid(self.pid, flags)
            if pid == self.pid:
                self.status = status


def _exited(pid: int) -> bool:
    """Whether the child has ended (without reaping it, so that its process group id stays its own)."""
    try:
        found = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return found is not None


@atexit.register
def stop_all() -> None:
    """End every child still running (the command is exiting)."""
    for child in list(_LIVE):
        child.stop()


def _child_main(
    parent: int,
    conn: Any,
    parent_end: Any,
    out_read: int,
    out_write: int,
    setup: Callable[[Callable[[str], None]], Any],
    serve: Callable[..., Reply],
) -> None:  # pragma: no cover - runs in the child
    """The child: contain itself, run ``setup``, answer requests; always ends with ``os._exit``."""
    status = 0
    try:
        _contain(parent, out_read, out_write)
        with contextlib.suppress(Exception):
            parent_end.close()
        status = _run(conn, setup, serve)
    except BaseException:  # noqa: B036 - nothing may return into the parent's code
        status = 70
    finally:
        os._exit(status)


def _contain(parent: int, out_read: int, out_write: int) -> None:  # pragma: no cover - runs in the child
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    _die_with_parent()
    if os.getppid() != parent:  # the command died before the line above
        os._exit(1)
    os.register_at_fork(after_in_child=_die_with_parent)  # a process the user code forks follows its parent
    os.register_at_fork(after_in_parent=lambda: _FORKS.append(1))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the command's to handle: it stops this child
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _limit_memory()
    os.close(out_read)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_write, 1)
    os.dup2(out_write, 2)
    for fd in (null, out_write):
        os.close(fd)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    """Ask Linux to kill this process when its parent dies (elsewhere: nothing; the command ends the group)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # 1: PR_SET_PDEATHSIG


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    import resource

    with contextlib.suppress(Exception):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    kind = getattr(resource, "RLIMIT_DATA", None) if sys.platform.startswith("linux") else None
    kind = kind if kind is not None else resource.RLIMIT_AS
    field = "VmData" if kind != resource.RLIMIT_AS else "VmSize"
    with contextlib.suppress(Exception):
        soft, hard = resource.getrlimit(kind)
        limit = _in_use(field) + memory_budget()
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        if soft == resource.RLIM_INFINITY or limit < soft:
            resource.setrlimit(kind, (limit, hard))


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


def _run(conn: Any, setup: Callable[[Callable[[str], None]], Any], serve: Callable[..., Reply]) -> int:
    """Set up, then answer until told to stop; a forked copy of this process ends without a word."""
    me = os.getpid()

    def step(doing: str) -> None:
        _only(me)
        conn.send(("step", doing))

    try:
        obj = setup(step)
    except _Refused as refused:
        _only(me)
        conn.send(refused.reply)
        return 0
    _only(me)
    stray = _stray()
    if stray is not None:
        conn.send(("stray", stray))
        return 0
    conn.send(("ready", type.__dict__["__name__"].__get__(type(obj), type)[:100]))
    for request in _requests(conn):
        reply = serve(obj, *request)
        _only(me)
        stray = _stray()
        if stray is not None:
            conn.send(("stray", stray))
            return 0
        try:
            conn.send(reply)
        except Exception as exc:  # a reply that cannot be sent: say so rather than leave the parent waiting
            conn.send(("raised", False, f"an answer that cannot be sent back ({type(exc).__name__})", ""))
    return 0


_FORKS: list[int] = []


def _stray() -> str | None:  # pragma: no cover - runs in the child
    """What the user code left behind that a call may not: a process it forked, a thread still running."""
    if _FORKS:
        return f"forked a process ({len(_FORKS)} fork(s)); user code runs in one process, and its forks are ended"
    main = threading.main_thread()
    running = [t for t in threading.enumerate() if t is not main and not t.daemon and t.is_alive()]
    if running:
        return (
            f"left {len(running)} thread(s) running ({running[0].name[:40]!r}); user code must return without "
            "threads that outlive the call (they are ended)"
        )
    return None


def _only(me: int) -> None:  # pragma: no cover - runs in the child
    """End a forked copy of the child quietly: only the process the command started answers."""
    if os.getpid() != me:
        os._exit(0)


class _Refused(Exception):
    """Setup ended with ``reply`` (an error to report) instead of an object."""

    def __init__(self, reply: Reply) -> None:
        super().__init__("refused")
        self.reply = reply


def refuse(reply: Reply) -> _Refused:
    """The exception a ``setup`` raises to send ``reply`` instead of becoming ready."""
    return _Refused(reply)


def _requests(conn: Any) -> Iterator[tuple[Any, ...]]:
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        yield request
