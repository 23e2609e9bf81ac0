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
plain values ``accept`` makes of it leave the call. In a child process those values come back as JSON
(:mod:`.containment.wire`, never a pickle) and are checked once more by the command (``check``, by default
``accept`` itself: a check of plain values accepts what it made), since the child may send anything.
What user code printed, and its tracebacks, are shown escaped.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
from collections.abc import Callable
from typing import Any, Literal

from ..errors import (
    InputError,
    RLVRAMBenchError,
    UserCodeError,
    UserCodeInterrupted,
    first_line,
    one_line,
    quote,
    type_name,
)
from . import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT  # the default, named where signatures can read it cheaply
from .contained import DISK_ENV, MEMORY_ENV, Child, Output, disk_budget, memory_budget, shown

Isolation = Literal["inline", "thread", "process"]
#: A call's outcome: ("ok", value) | ("raised" or "unreadable", interrupted, text, trace) | ("refused", error) |
#: ("died", how) | ("timeout",).
Reply = tuple[Any, ...]
_TIMED_OUT: Reply = ("timeout",)
#: What a write beyond user code's disk bound fails with (its file size, its folder's room, the read-only rest).
_DISK_FULL = ("File too large", "No space left on device", "Read-only file system", "Disk quota exceeded")


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
        self._child: Child | None = None
        if isolation == "process":
            self._child = obj.take_child() if isinstance(obj, RemoteObject) else contained(obj)

    def call(
        self,
        method: str,
        *args: Any,
        where: str = "",
        accept: Callable[[Any], Any] = discard,
        check: Callable[[Any], Any] | None = None,
    ) -> Any:
        """``accept(obj.method(*args))`` under the time limit; ``where`` names the case in errors; ``check`` (by
        default ``accept``) checks in this process what a child process sent back."""
        return self._outcome(self._ask((method, args, accept), check or accept), method, where)

    def get(
        self, attribute: str, default: Any, accept: Callable[[Any], Any], check: Callable[[Any], Any] | None = None
    ) -> Any:
        """``accept(getattr(obj, attribute, default))`` under the time limit (a property is user code too)."""
        reply = self._ask((None, (attribute, default), accept), check or accept)
        return self._outcome(reply, f"reading {attribute}", "")

    def close(self) -> None:
        """End the child process, if any; what the user code printed is shown on standard error (a bounded
        excerpt), unless an error is on its way (its note has the excerpt)."""
        self._end(show=sys.exc_info()[1] is None)

    def _end(self, *, show: bool) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        child.stop()
        if child.output.total and show:
            _show_output(f"{self.owner} printed {child.output.total:,} bytes:", child.output.excerpt())

    def __enter__(self) -> UserObject:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ask(self, request: tuple[Any, ...], check: Callable[[Any], Any]) -> Reply:
        if self._child is not None:
            self._printed = self._child.output
            reply = self._child.ask(request, self.timeout)
            if reply is not None and reply[0] == "ok":
                return settle(check, reply[1])
            return _TIMED_OUT if reply is None else reply
        if self.isolation == "process":
            return ("died", "it was stopped earlier")
        if self.isolation == "inline":
            return run_request(self.obj, *request)
        return _in_thread(self.obj, request, self.timeout)

    def _outcome(self, reply: Reply, method: str, where: str) -> Any:
        kind = reply[0]
        if kind == "ok":
            return reply[1]
        try:
            self._fail(reply, method, where)
        except RLVRAMBenchError as failure:
            self._add_output(failure)
            raise

    def _add_output(self, failure: RLVRAMBenchError) -> None:
        """Say in ``failure`` what the child printed, if anything (``--debug`` shows the excerpt)."""
        printed: Output | None = getattr(self, "_printed", None)
        if printed is None or not printed.total:
            return
        failure.args = (one_line(f"{failure.args[0]} (it printed {printed.total:,} bytes; --debug shows them)"),)
        failure.add_note(f"what {shown(self.owner)} printed:\n{printed.excerpt()}")

    def _fail(self, reply: Reply, method: str, where: str) -> None:
        prefix = f"{self.owner}, {where}" if where else self.owner
        kind = reply[0]
        if kind == "refused":
            error: RLVRAMBenchError = reply[1]
            said = str(error).removeprefix(f"{self.owner}: ")  # a check that named the owner itself
            raise type(error)(f"{prefix}: {said}", **error.fields)
        if kind == "timeout":
            fate = "it was stopped" if self.isolation == "process" else "it was asked to stop"
            self._end(show=False)
            raise UserCodeError(
                f"{prefix}: {method} did not return within {self.timeout:g} s (the time limit; --timeout SECONDS "
                f"or timeout= raises it); {fate}"
            )
        if kind == "stray":
            self._end(show=False)
            raise UserCodeError(f"{prefix}: {method} {reply[1]}")
        if kind == "died":
            self._end(show=False)
            raise UserCodeError(f"{prefix}: {method} ended the process it ran in ({reply[1]}) without returning")
        interrupted, text, trace = reply[1], reply[2], reply[3]
        said = text if kind == "unreadable" else f"raised {text}"
        if text.startswith("MemoryError") and self.isolation == "process":
            said += f" (user code may allocate {memory_budget() >> 20:,} MiB; {MEMORY_ENV} raises it)"
        elif self.isolation == "process" and any(words in text for words in _DISK_FULL):
            said += (
                f" (user code may write {disk_budget() >> 20:,} MiB, in its working folder only; {DISK_ENV} raises it)"
            )
        failure = (UserCodeInterrupted if interrupted else UserCodeError)(f"{prefix}: {method} {said}")
        if trace:  # --debug shows where the user's code failed
            failure.add_note("\n".join(shown(line) for line in trace.splitlines()))
        raise failure


#: The request for the parameters of one of the object's methods, answered where the object lives.
PARAMETERS = "rlvrambench: parameters"


def parameters_of(function: Any) -> list[tuple[str, str]]:
    """The parameters of ``function`` as (name, kind name); none when it has no signature to read (a builtin)."""
    import inspect

    try:
        return [(p.name, p.kind.name) for p in inspect.signature(function).parameters.values()]
    except (TypeError, ValueError):
        return []


def run_request(obj: Any, method: str | None, args: tuple[Any, ...], accept: Callable[[Any], Any]) -> Reply:
    """Run one request on ``obj`` (a method call, an attribute read when ``method`` is None, or the parameters of
    a method for :data:`PARAMETERS`) and check what it returned with ``accept``; every exception becomes a reply."""
    try:
        if method == PARAMETERS:
            result: Any = parameters_of(getattr(obj, args[0]))
        else:
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


def settle(check: Callable[[Any], Any], value: Any) -> Reply:
    """What the command makes of ``value``, the plain data a child sent back: ``("ok", check(value))``, or the
    refusal of ``check``, or the reply saying that it is not what the call returns."""
    try:
        return ("ok", check(value))
    except RLVRAMBenchError as exc:
        return ("refused", exc)
    except Exception as exc:  # data of a shape the check did not foresee
        return ("unreadable", False, f"sent back {quote(value)}, which the command cannot use ({type_name(exc)})", "")


def _show_output(header: str, excerpt: str) -> None:
    """Print what user code printed, after the fact, on standard error (never on the command's output)."""
    with contextlib.suppress(Exception):
        sys.stderr.write(one_line(header) + "\n" + excerpt.rstrip("\n") + "\n")
        sys.stderr.flush()


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


def contained(obj: Any) -> Child:
    """A child process holding ``obj`` (forked with it in memory), ready for requests."""
    child = Child(lambda step: obj, run_request)
    child.receive(None)  # ("ready", name): nothing of the user's runs before it
    return child


_MISSING = ("rlvrambench: no such attribute",)


def _view(value: Any) -> list[Any]:
    """What an attribute read on a :class:`RemoteObject` sends back: ``["missing"]``, ``["method"]`` or
    ``["value", value]``."""
    if value is _MISSING or (type(value) is tuple and value == _MISSING):
        return ["missing"]
    return ["method"] if callable(value) else ["value", value]


def _viewed(value: Any) -> list[Any]:
    """The command's check of an attribute read that came back from a child (see :func:`_view`)."""
    if type(value) is list and value and value[0] in ("missing", "method", "value"):
        if len(value) == (2 if value[0] == "value" else 1):
            return value
    raise UserCodeError(f"reading an attribute sent back {quote(value)}")


def _as_is(value: Any) -> Any:
    return value


class RemoteObject:
    """A user's object that lives in a child process of its own, where it was imported and created
    (:func:`~.user.load_object` on POSIX): nothing of it ever runs in the command's process. Reading an attribute
    reads it there, under the time limit (a method becomes a call into the child whose result comes back as it
    is); :class:`UserObject` takes its child over. Named ``owner`` in errors; ``child`` holds the object, ``start``
    makes another child that holds a new one (see :class:`~.contained.Child`)."""

    def __init__(self, start: Callable[[], Child], owner: str, timeout: float | None, child: Child) -> None:
        self._start, self._owner, self._timeout = start, owner, timeout
        self._user: UserObject | None = None
        self._child: Child | None = child

    def take_child(self) -> Child:
        """The child holding the object (started again when an earlier one was taken); the caller now owns it."""
        child = self._child
        if self._user is not None:
            child, self._user._child, self._user = self._user._child, None, None
        self._child = None
        return child if child is not None else self._start()

    def close(self) -> None:
        """End the child this object holds, if any."""
        if self._user is not None:
            self._user.close()
            self._user = None
        if self._child is not None:
            self._child.stop()
            self._child = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if self._user is None:
            self._user = UserObject(self, self._owner, timeout=self._timeout, isolation="process")
        kind, *value = self._user.get(name, _MISSING, _view, _viewed)
        if kind == "missing":
            raise AttributeError(name)
        if kind == "method":
            user = self._user
            return lambda *args: user.call(name, *args, accept=_as_is)
        return value[0]

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
