"""A loopback TCP proxy that cuts chosen downloads part-way, for deterministic network-fault tests.

Every connection is relayed to the upstream server. When the client sends a GET request whose path contains
``cut_marker``, the proxy forwards only ``cut_after`` more bytes of the answer and then closes both sides, as
a flaky network would. ``cuts`` counts how often that happened.
"""

from __future__ import annotations

import socket
import threading


class CuttingProxy:
    def __init__(self, upstream_port: int, cut_marker: bytes, cut_after: int) -> None:
        self.upstream_port = upstream_port
        self.cut_marker = cut_marker
        self.cut_after = cut_after
        self.cuts = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._stop = threading.Event()
        self._lock = threading.Lock()
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
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=30)
        state = {"armed": False, "left": self.cut_after}

        def up() -> None:
            try:
                while data := client.recv(65536):
                    if data.startswith(b"GET ") and self.cut_marker in data.split(b"\r\n", 1)[0]:
                        state["armed"] = True
                    upstream.sendall(data)
            except OSError:
                pass

        threading.Thread(target=up, daemon=True).start()
        try:
            while data := upstream.recv(65536):
                if state["armed"]:
                    if len(data) >= state["left"]:
                        client.sendall(data[: state["left"]])
                        with self._lock:
                            self.cuts += 1
                        break
                    state["left"] -= len(data)
                client.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (client, upstream):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()

    def close(self) -> None:
        self._stop.set()
        self.listener.close()
