"""A loopback TCP proxy in front of the Hub server that injects network faults into chosen requests.

Every connection is relayed to the upstream server. A request whose first line has one of ``methods`` and
contains ``marker`` takes the next action of ``faults`` (the last action repeats once the list is used up):

- ``"pass"``: relayed untouched;
- ``"cut"``: only ``cut_after`` bytes of the answer are relayed, then both sides are closed (a flaky network);
- ``"hold"``: ``cut_after`` bytes are relayed, then the answer stalls until :meth:`close` (``held`` is set), so a
  test can kill the client in the middle of a download;
- ``"flip"``: relayed with one bit of the body changed, at byte ``cut_after`` (a server or proxy that corrupts);
- ``"500"``: the proxy answers ``500 Internal Server Error`` itself and closes the connection;
- ``"reset"``: the connection is reset (TCP RST) without an answer.

``counts`` tells how often each action was taken.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections import Counter
from collections.abc import Sequence

_ERROR_500 = (
    b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-length: 21\r\n"
    b"connection: close\r\n\r\nInternal Server Error"
)
ACTIONS = ("pass", "cut", "hold", "flip", "500", "reset")


class FaultProxy:
    def __init__(
        self,
        upstream_port: int,
        marker: bytes,
        faults: Sequence[str],
        *,
        cut_after: int = 0,
        methods: Sequence[bytes] = (b"GET",),
    ) -> None:
        assert faults and all(f in ACTIONS for f in faults), faults
        self.upstream_port = upstream_port
        self.marker = marker
        self.faults = list(faults)
        self.cut_after = cut_after
        self.methods = tuple(methods)
        self.counts: Counter[str] = Counter()
        self.held = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._matched = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _next_action(self, request_line: bytes) -> str:
        method = request_line.split(b" ", 1)[0]
        if method not in self.methods or self.marker not in request_line:
            return "pass"
        with self._lock:
            action = self.faults[min(self._matched, len(self.faults) - 1)]
            self._matched += 1
            self.counts[action] += 1
        return action

    def _accept(self) -> None:
        self.listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=60)
        state: dict = {"action": "pass", "left": self.cut_after, "flip_at": None}
        threading.Thread(target=self._forward_requests, args=(client, upstream, state), daemon=True).start()
        try:
            while data := upstream.recv(65536):
                if state["action"] == "flip":
                    data = self._flip(state, data)
                if state["action"] in ("cut", "hold"):
                    if len(data) >= state["left"]:
                        client.sendall(data[: state["left"]])
                        if state["action"] == "hold":
                            self.held.set()
                            self._stop.wait()
                        break
                    state["left"] -= len(data)
                client.sendall(data)
        except OSError:
            pass
        finally:
            _close(client, upstream)

    def _forward_requests(self, client: socket.socket, upstream: socket.socket, state: dict) -> None:
        """Client to server: each new request takes the next action (a 500 or a reset is answered here)."""
        try:
            while data := client.recv(65536):
                first_line = data.split(b"\r\n", 1)[0]
                if b" HTTP/1." in first_line:
                    state["action"] = self._next_action(first_line)
                    state["left"], state["flip_at"] = self.cut_after, None
                    if state["action"] == "500":
                        client.sendall(_ERROR_500)
                        _close(client, upstream)
                        return
                    if state["action"] == "reset":
                        _close(client, upstream, reset=True)
                        return
                upstream.sendall(data)
        except OSError:
            pass

    def _flip(self, state: dict, data: bytes) -> bytes:
        if state["flip_at"] is None:
            end = data.find(b"\r\n\r\n")
            if end < 0:
                return data
            state["flip_at"] = end + 4 + self.cut_after
        at = state["flip_at"]
        if at >= len(data):
            state["flip_at"] = at - len(data)
            return data
        state["action"] = "pass"
        return data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :]

    def close(self) -> None:
        self._stop.set()
        self.listener.close()


def _close(client: socket.socket, upstream: socket.socket, *, reset: bool = False) -> None:
    if reset:  # linger 0: close() sends RST instead of FIN
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    for sock in (client, upstream):
        if not reset or sock is upstream:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        sock.close()


class CuttingProxy(FaultProxy):
    """Cut every GET whose path contains ``cut_marker`` after ``cut_after`` bytes of the answer."""

    def __init__(self, upstream_port: int, cut_marker: bytes, cut_after: int) -> None:
        super().__init__(upstream_port, cut_marker, ["cut"], cut_after=cut_after)

    @property
    def cuts(self) -> int:
        return self.counts["cut"]


class HostileServer:
    """A loopback server that answers every request itself, the way a hostile or broken mirror does (port 0, so
    tests may run in parallel); ``requests`` counts the requests it has read, ``sent`` the body bytes it has sent.

    - ``"trickle"``: ``200 OK`` headers sent one byte every ``interval`` seconds, for ever;
    - ``"endless"``: a HEAD answered as the Hub answers for a file of ``declared`` bytes, every other request with
      ``200 OK`` and a body that never ends;
    - ``"status"``: every request answered with ``status`` and the ``headers`` given, then the connection closed.
    """

    COMMIT = "0123456789abcdef0123456789abcdef01234567"

    def __init__(
        self,
        mode: str,
        *,
        interval: float = 1.0,
        declared: int = 1000,
        status: int = 500,
        headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        assert mode in ("trickle", "endless", "status"), mode
        self.mode, self.interval, self.declared, self.status, self.headers = mode, interval, declared, status, headers
        self.requests = 0
        self.sent = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self.listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = client.recv(65536)
                if not chunk:
                    return
                request += chunk
            with self._lock:
                self.requests += 1
            getattr(self, f"_{self.mode}")(client, request.split(b" ", 1)[0])
        except OSError:
            pass
        finally:
            client.close()

    def _trickle(self, client: socket.socket, method: bytes) -> None:
        for byte in b"HTTP/1.1 200 OK\r\n" + b"X-Padding: " + b"x" * 1_000_000:
            if self._stop.wait(self.interval):
                return
            client.sendall(bytes([byte]))

    def _endless(self, client: socket.socket, method: bytes) -> None:
        hub = f'X-Repo-Commit: {self.COMMIT}\r\nETag: "{"e" * 40}"\r\n'
        if method == b"HEAD":
            client.sendall(f"HTTP/1.1 200 OK\r\n{hub}Content-Length: {self.declared}\r\n\r\n".encode())
            return
        client.sendall(f"HTTP/1.1 200 OK\r\n{hub}Connection: close\r\n\r\n".encode())
        block = b"0" * 65536
        while not self._stop.is_set():
            client.sendall(block)
            with self._lock:
                self.sent += len(block)

    def _status(self, client: socket.socket, method: bytes) -> None:
        extra = "".join(f"{name}: {value}\r\n" for name, value in self.headers)
        head = f"HTTP/1.1 {self.status} Failing\r\n{extra}Content-Length: 6\r\nConnection: close\r\n\r\n"
        client.sendall(head.encode() + (b"" if method == b"HEAD" else b"failed"))

    def close(self) -> None:
        self._stop.set()
        self.listener.close()
