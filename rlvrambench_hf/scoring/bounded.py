"""Calls into a user's object (a policy, an estimator) under a time limit: user code never takes the process
hostage.

What can be stopped decides the mechanism (:class:`UserObject`'s ``isolation``):

- ``"process"`` — for an object the package loaded itself from ``module:attr`` (the only kind the command line
  has): the object lives in a child process forked for it, each call is sent over a pipe and must be answered
  before its deadline, else the child is killed. That stops anything — a pure-Python loop, ``time.sleep``, a C
  call that never releases the GIL — and contains ``os._exit`` and crashes. The object keeps its state from call
  to call, inside the child.
- ``"thread"`` — for an object a Python caller passed: it stays in the caller's process (its state stays theirs);
  each call runs in a worker thread that the caller waits for until the deadline. On expiry the thread is asked
  to stop (an exception raised into it, which ends Python code; a C call finishes first) and the call fails.
- ``"inline"`` — the package's own objects (the published rules): called directly.

In every mode any ``BaseException`` of the user code (``SystemExit``, ``KeyboardInterrupt``) is a
:class:`~rlvrambench_hf.errors.UserCodeError` naming the object, the call and the case, and what the call returned
is checked by the caller's ``accept`` inside the same deadline, before anything is formatted from it; only the
plain values ``accept`` makes of it leave the call.
"""

from __future__ import annotations

import contextlib
import math
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, Literal

from ..errors import InputError, RLVRAMBenchError, UserCodeError, UserCodeInterrupted, first_line, quote

#: Seconds one call into user code may take unless the caller says otherwise (a normal policy needs milliseconds).
DEFAULT_TIMEOUT = 300.0
Isolation = Literal["inline", "thread", "process"]
#: A call's outcome: ("ok", value) | ("raised" or "unreadable", interrupted, text, trace) | ("refused", error) |
#: ("died", how) | ("timeout",).
Reply = tuple[Any, ...]
_TIMED_OUT: Reply = ("timeout",)


def checked_timeout(timeout: object) -> float | None:
    """``timeout`` as seconds (None: no limit), or a one-line :class:`InputError`."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not math.isfinite(timeout) or timeout <= 0:
        raise InputError(f"timeout {quote(timeout)} must be a positive, finite number of seconds")
    return float(timeout)


def discard(value: object) -> None:
    """The ``accept`` of a call whose result is not used (nothing of it leaves the call)."""
    return None


def can_fork() -> bool:
    """Whether this platform can give user code a child process of its own."""
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


class UserObject:
    """``obj`` (a user's object, named ``owner`` in errors: ``"policy mine"``) and calls into it, each under
    ``timeout`` seconds (None: no limit), isolated as the module docstring says. A context manager: closing it
    ends the child process, if any."""

    def __init__(
        self, obj: Any, owner: str, *, timeout: float | None = DEFAULT_TIMEOUT, isolation: Isolation = "thread"
    ) -> None:
        self.obj, self.owner, self.timeout = obj, owner, checked_timeout(timeout)
        if isolation == "process" and not can_fork():
            isolation = "thread"
        self.isolation: Isolation = isolation
        self._child = _Child(obj) if isolation == "process" else None

    def call(self, method: str, *args: Any, where: str = "", accept: Callable[[Any], Any] = discard) -> Any:
        """``accept(obj.method(*args))`` under the time limit; ``where`` names the case in errors."""
        return self._outcome(self._ask((method, args, accept)), method, where)

    def get(self, attribute: str, default: Any, accept: Callable[[Any], Any]) -> Any:
        """``accept(getattr(obj, attribute, default))`` under the time limit (a property is user code too)."""
        return self._outcome(self._ask((None, (attribute, default), accept)), f"reading {attribute}", "")

    def close(self) -> None:
        if self._child is not None:
            self._child.stop()
            self._child = None

    def __enter__(self) -> UserObject:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ask(self, request: tuple[Any, ...]) -> Reply:
        if self._child is not None:
            return self._child.ask(request, self.timeout)
        if self.isolation == "inline":
            return run_request(self.obj, *request)
        return _in_thread(self.obj, request, self.timeout)

    def _outcome(self, reply: Reply, method: str, where: str) -> Any:
        prefix = f"{self.owner}, {where}" if where else self.owner
        kind = reply[0]
        if kind == "ok":
            return reply[1]
        if kind == "refused":
            error: RLVRAMBenchError = reply[1]
            said = str(error).removeprefix(f"{self.owner}: ")  # a check that named the owner itself
            raise type(error)(f"{prefix}: {said}", **error.fields)
        if kind == "timeout":
            fate = "it was stopped" if self.isolation == "process" else "it was asked to stop"
            self.close()
            raise UserCodeError(
                f"{prefix}: {method} did not return within {self.timeout:g} s (the time limit; --timeout SECONDS "
                f"or timeout= raises it); {fate}"
            )
        if kind == "died":
            self._child = None
            raise UserCodeError(f"{prefix}: {method} ended the process it ran in ({reply[1]}) without returning")
        interrupted, text, trace = reply[1], reply[2], reply[3]
        said = text if kind == "unreadable" else f"raised {text}"
        failure = (UserCodeInterrupted if interrupted else UserCodeError)(f"{prefix}: {method} {said}")
        if trace:
            failure.add_note(trace)  # --debug shows where the user's code failed
        raise failure


def run_request(obj: Any, method: str | None, args: tuple[Any, ...], accept: Callable[[Any], Any]) -> Reply:
    """Run one request on ``obj`` (a method call, or an attribute read when ``method`` is None) and check what it
    returned with ``accept``; every exception becomes a reply."""
    try:
        result = getattr(obj, method)(*args) if method is not None else getattr(obj, args[0], args[1])
    except BaseException as exc:  # noqa: B036 - SystemExit and KeyboardInterrupt of user code are errors too
        return ("raised", isinstance(exc, KeyboardInterrupt), first_line(exc, typed=True), _trace(exc))
    try:
        return ("ok", accept(result))
    except RLVRAMBenchError as exc:  # accept refused the result
        return ("refused", exc)
    except BaseException as exc:  # noqa: B036 - the returned object's own code failed while it was read
        what = f"returned {quote(result)}, which raised {first_line(exc, typed=True)} when it was read"
        return ("unreadable", isinstance(exc, KeyboardInterrupt), what, _trace(exc))


def _trace(exc: BaseException) -> str:
    import traceback

    try:
        return "the user code's traceback:\n" + "".join(traceback.format_exception(exc)).rstrip()
    except Exception:
        return ""


class _Stopped(BaseException):
    """Raised into a worker thread whose call ran out of time."""


def _in_thread(obj: Any, request: tuple[Any, ...], timeout: float | None) -> Reply:
    replies: list[Reply] = []
    worker = threading.Thread(
        target=lambda: replies.append(run_request(obj, *request)), name="rlvrambench user code", daemon=True
    )
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        _stop_thread(worker)
        return _TIMED_OUT
    return replies[0]


def _stop_thread(worker: threading.Thread) -> None:
    """Ask ``worker`` to stop: CPython raises :class:`_Stopped` in it at its next Python instruction."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident or 0), ctypes.py_object(_Stopped))


class _Child:
    """A forked child process that holds the object and answers requests over a pipe."""

    def __init__(self, obj: Any) -> None:
        import multiprocessing

        context = multiprocessing.get_context("fork")
        self.conn, child_end = context.Pipe()
        for stream in (sys.stdout, sys.stderr):  # else the child would print what the parent had buffered
            with contextlib.suppress(Exception):
                stream.flush()
        self.process = context.Process(target=_serve, args=(obj, child_end), name="rlvrambench user code")
        self.process.daemon = True
        self.process.start()
        child_end.close()

    def ask(self, request: tuple[Any, ...], timeout: float | None) -> Reply:
        try:
            self.conn.send(request)
            if not self.conn.poll(timeout):
                self.stop()
                return _TIMED_OUT
            reply: Reply = self.conn.recv()
            return reply
        except (EOFError, OSError):
            return ("died", self._ending())

    def _ending(self) -> str:
        self.process.join(5)
        code = self.process.exitcode
        self.stop()
        if code is None:
            return "it stopped answering"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(-code).name}"
            return f"killed by signal {-code}"
        return f"exit status {code}"

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.send(None)
        self.process.join(0.5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        with contextlib.suppress(Exception):
            self.conn.close()


def _serve(obj: Any, conn: Any) -> None:
    """The child's loop: answer each request until the parent sends None or goes away."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops this child
    for request in _requests(conn):
        reply = run_request(obj, *request)
        try:
            conn.send(reply)
        except Exception as exc:  # a reply that cannot be sent: say so rather than leave the parent waiting
            conn.send(("raised", False, f"an answer that cannot be sent back ({first_line(exc, typed=True)})", ""))


def _requests(conn: Any) -> Iterator[tuple[Any, ...]]:
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        yield request
