"""The state of one command's Hub traffic (:class:`Traffic`) and its bounds, as :mod:`.hubnet` enforces them."""

from __future__ import annotations

import contextlib
import contextvars
import os
import socket
import threading
import time
import weakref
from collections import Counter
from dataclasses import dataclass, field

from ...errors import SourceError, quote

DEADLINE_ENV = "RLVRAMBENCH_HUB_DEADLINE"
DEFAULT_DEADLINE = 120.0
CONNECT_TIMEOUT = 5.0
FIRST_BYTE_TIMEOUT = 10.0
METADATA_CAP = 8 << 20
UNLISTED_FILE_CAP = 64 << 20
RETRIES = 2


class HubTrafficError(Exception):
    """A bound ended an exchange with the Hub (raised inside huggingface_hub calls, which do not retry it).

    ``unreachable``: the server cannot be asked again in this command (it refused the connection, could not be
    found, or the deadline has passed): the cache is all there is."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


def deadline_seconds() -> float:
    """The deadline of a command's Hub traffic, from ``RLVRAMBENCH_HUB_DEADLINE`` (one line when not a positive
    number of seconds)."""
    raw = os.environ.get(DEADLINE_ENV, "").strip()
    if not raw:
        return DEFAULT_DEADLINE
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1e7:
        raise SourceError(f"{DEADLINE_ENV}={quote(raw)} is not a positive number of seconds")
    return value


@dataclass
class Traffic:
    """The Hub exchanges of one command (or one call): its deadline, the servers that refused, the failures per
    request, the size the last file was declared with, and the sockets to shut at the deadline."""

    _seconds: float | None = None
    started: float | None = None  # the first request: time spent before it is not Hub traffic
    refused: dict[tuple[str, str, int | None], str] = field(default_factory=dict)
    failures: Counter[tuple[str, str]] = field(default_factory=Counter)
    sends: int = 0  # requests huggingface_hub asked to send (refused ones included)
    declared: int | None = None  # by the last HEAD of a file (huggingface_hub asks before each download)
    expected: int | None = None  # by the release's manifest, for the file being fetched
    _sockets: weakref.WeakSet[socket.socket] = field(default_factory=weakref.WeakSet)
    _timer: threading.Timer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def seconds(self) -> float:
        if self._seconds is None:
            self._seconds = deadline_seconds()
        return self._seconds

    def left(self) -> float:
        if self.started is None:
            self.started = time.monotonic()
        return self.started + self.seconds - time.monotonic()

    def expired_error(self) -> HubTrafficError:
        return HubTrafficError(f"no answer within {DEADLINE_ENV}={self.seconds:g} s", unreachable=True)

    def watch(self, sock: object) -> None:
        """Shut ``sock`` at the deadline (a blocked read then returns at once)."""
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._sockets.add(sock)
            if self._timer is None:
                self._timer = threading.Timer(max(self.left(), 0.0), self._shut_all)
                self._timer.daemon = True
                self._timer.start()

    def _shut_all(self) -> None:
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()

    def cap(self, method: str, path: str) -> int:
        """The most bytes an answer to ``method path`` may deliver: an API answer :data:`METADATA_CAP`; a file the
        size its manifest gives, else the size the Hub declared and at most :data:`UNLISTED_FILE_CAP`."""
        if method != "GET" or "/api/" in path:
            return METADATA_CAP
        if self.expected is not None:
            return self.expected
        return min(self.declared, UNLISTED_FILE_CAP) if self.declared is not None else UNLISTED_FILE_CAP


#: The traffic of the command (or call) in progress; None outside the package's own Hub traffic.
CURRENT: contextvars.ContextVar[Traffic | None] = contextvars.ContextVar("rlvrambench_hub_traffic", default=None)
