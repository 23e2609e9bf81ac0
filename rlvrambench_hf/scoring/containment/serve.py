"""What runs in the child process of user code (:mod:`..contained`): it confines itself (:mod:`.confine`), runs the
setup (an import, or the object already in memory) and answers requests, each reply sent as JSON (:mod:`.wire`).
It always ends with ``os._exit``: nothing of it returns into the command's code, whatever the user code does.

Forks and threads that user code leaves behind are errors (``("stray", what)``): a forked copy of the child that
returns is ended quietly (only the process the command started answers).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

from . import wire
from .confine import Plan, confine

Reply = tuple[Any, ...]


def child_main(
    plan: Plan,
    conn: Any,
    output: int,
    report: int,
    setup: Callable[[Callable[[str], None]], Any],
    serve: Callable[..., Reply],
) -> None:  # pragma: no cover - runs in the child
    """The child: confine itself, run ``setup``, answer requests; always ends with ``os._exit``."""
    from multiprocessing.connection import Connection

    status = 0
    try:
        _KEPT.append(conn)  # its descriptor is closed by confine: never closed again when the object goes
        socket_fd = confine(plan, conn.fileno(), output, report)
        os.register_at_fork(after_in_parent=lambda: _FORKS.append(1))
        status = _run(Connection(socket_fd), setup, serve)
    except BaseException:  # noqa: B036 - nothing may return into the parent's code
        status = 70
    finally:
        os._exit(status)


_KEPT: list[Any] = []


def _send(conn: Any, reply: Reply) -> None:  # pragma: no cover - runs in the child
    """Send ``reply`` as JSON; one that JSON cannot carry is replaced by the reply saying so."""
    try:
        data = wire.encode(reply)
    except (TypeError, ValueError, RecursionError) as exc:
        what = f"returned a value that cannot be sent back as data ({type(exc).__name__}: plain values only)"
        data = wire.encode(("unreadable", False, what, ""))
    conn.send_bytes(data)


def _run(conn: Any, setup: Callable[[Callable[[str], None]], Any], serve: Callable[..., Reply]) -> int:
    """Set up, then answer until told to stop; a forked copy of this process ends without a word."""
    me = os.getpid()

    def step(doing: str) -> None:
        _only(me)
        _send(conn, ("step", doing))

    try:
        obj = setup(step)
    except _Refused as refused:
        _only(me)
        _send(conn, refused.reply)
        return 0
    _only(me)
    stray = _stray()
    if stray is not None:
        _send(conn, ("stray", stray))
        return 0
    _send(conn, ("ready", type.__dict__["__name__"].__get__(type(obj), type)[:100]))
    for request in _requests(conn):
        reply = serve(obj, *request)
        _only(me)
        stray = _stray()
        if stray is not None:
            _send(conn, ("stray", stray))
            return 0
        _send(conn, reply)
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
