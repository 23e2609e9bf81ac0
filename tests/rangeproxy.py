"""HTTP Range in front of olah, for the tests that read Parquet through the Hub protocol.

olah's local mirrors answer every ranged GET with the whole file (status 200); huggingface.co honours Range, and
streaming Parquet (``datasets`` streaming, ``HfFileSystem``) reads the footer from the end of the file first.
"""

from __future__ import annotations


class RangeProxy:
    """HTTP Range on top of olah, whose local mirrors answer every ranged GET with the whole file (200).

    huggingface.co honours Range, and streaming Parquet needs it (the footer is read from the end of the file).
    Everything else is relayed unchanged.
    """

    def __init__(self, upstream: str) -> None:
        import http.server
        import threading
        import urllib.error
        import urllib.request

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None

        opener = urllib.request.build_opener(NoRedirect)

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _relay(self) -> None:
                skip = {"host", "range", "accept-encoding", "connection", "content-length"}
                headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else None
                request = urllib.request.Request(upstream + self.path, data=data, headers=headers, method=self.command)
                try:
                    response = opener.open(request, timeout=60)
                except urllib.error.HTTPError as exc:
                    response = exc
                body = response.read() if self.command != "HEAD" else b""
                status, wanted = response.status, self.headers.get("Range")
                extra = {}
                if wanted and status == 200 and self.command == "GET" and wanted.startswith("bytes="):
                    first, _, last = wanted[6:].split(",")[0].partition("-")
                    size = len(body)
                    start = size - int(last) if first == "" else int(first)
                    end = size - 1 if first == "" or last == "" else min(int(last), size - 1)
                    body, status = body[start : end + 1], 206
                    extra["Content-Range"] = f"bytes {start}-{end}/{size}"
                self.send_response(status)
                drop = {"transfer-encoding", "connection", "content-length", "content-range"}
                for key, value in response.headers.items():
                    if key.lower() not in drop:
                        self.send_header(key, value)
                for key, value in extra.items():
                    self.send_header(key, value)
                if self.command == "HEAD":
                    self.send_header("Content-Length", response.headers.get("Content-Length", "0"))
                else:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_HEAD = do_POST = _relay

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
