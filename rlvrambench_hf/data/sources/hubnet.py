"""Bounds on every exchange with the Hub: one deadline for a command's traffic, a cap on the bytes of every answer,
no waiting on a server that refused the connection, and a bounded retry budget.

The bounds live in the HTTP client that huggingface_hub uses for all its requests, installed through its public
hook :func:`huggingface_hub.set_client_factory` (the client keeps huggingface_hub's own request hooks: offline mode,
request ids). Nothing of huggingface_hub is patched; its own retries are ended from outside, by raising an error
it does not retry (:class:`HubTrafficError`) or by answering its retry of a status with the error it would raise
after its last attempt (:func:`huggingface_hub.utils.hf_raise_for_status`).

- **Deadline** (``RLVRAMBENCH_HUB_DEADLINE`` seconds, default :data:`DEFAULT_DEADLINE`): for a whole command (the
  CLI opens one :func:`hub_traffic` around it) or, in a program, for each call that reaches the Hub. Connecting
  waits at most :data:`CONNECT_TIMEOUT` s, the first byte of an answer at most :data:`FIRST_BYTE_TIMEOUT` s, both
  cut to what is left; at the deadline the connections still open are shut, whatever a server trickles.
- **Size**: an API (metadata) answer at most :data:`METADATA_CAP` bytes; a file at most the size the release's
  manifest gives, else the size the Hub declared for it and at most :data:`UNLISTED_FILE_CAP` (the card, the
  manifests). Answers are asked for uncompressed (``Accept-Encoding: identity``), so the bytes counted are the bytes
  written; an answer compressed all the same is refused.
- **Xet**: a file the Hub stores with Xet is fetched over HTTP like any other (huggingface_hub would hand it to
  hf_xet, whose own transport these bounds cannot reach); the Xet headers of the package's requests are dropped.
- **Scope**: only the package's own requests (inside :func:`hub_traffic`) are bounded; a program's own use of
  huggingface_hub in the same process goes through unchanged (without keep-alive connections).
- **Retries**: a refused connection (or an unknown host) is asked once per command; a timeout, 408, 429 or 5xx
  answer is retried by huggingface_hub at most :data:`RETRIES` times per request, never past the deadline (a
  ``Retry-After`` beyond it ends the command at once).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

from .hubtraffic import (
    CONNECT_TIMEOUT,
    CURRENT,
    DEADLINE_ENV,
    DEFAULT_DEADLINE,
    FIRST_BYTE_TIMEOUT,
    METADATA_CAP,
    RETRIES,
    UNLISTED_FILE_CAP,
    HubTrafficError,
    Traffic,
    deadline_seconds,
)

__all__ = [
    "CONNECT_TIMEOUT",
    "DEADLINE_ENV",
    "DEFAULT_DEADLINE",
    "FIRST_BYTE_TIMEOUT",
    "METADATA_CAP",
    "RETRIES",
    "UNLISTED_FILE_CAP",
    "HubTrafficError",
    "Traffic",
    "deadline_seconds",
    "expecting",
    "hub_traffic",
    "install",
]
_RETRY_STATUS = (408, 429, 500, 502, 503, 504)
_UNREACHABLE = (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH)


@contextlib.contextmanager
def hub_traffic(*, install_client: bool = True) -> Iterator[Traffic]:
    """The bounds of one command's Hub traffic; nested uses share the outermost one (the CLI opens one per
    command, ``install_client=False`` so that a command without Hub traffic does not import huggingface_hub; a
    call of the package that reaches the Hub opens its own when none is open, and installs the bounded client).
    Code of its own that calls huggingface_hub (``HfApi``) gets the same bounds inside ``with hub_traffic():``."""
    if install_client:
        install()
    current = CURRENT.get()
    if current is not None:
        yield current
        return
    traffic = Traffic()
    token = CURRENT.set(traffic)
    try:
        yield traffic
    finally:
        CURRENT.reset(token)
        traffic.close()


@contextlib.contextmanager
def expecting(size: int | None) -> Iterator[None]:
    """Within the block, a file download delivers at most ``size`` bytes (the manifest's size of the file)."""
    with hub_traffic() as traffic:
        before, traffic.expected = traffic.expected, size
        try:
            yield
        finally:
            traffic.expected = before


_INSTALLED = False
_INSTALL_LOCK = threading.Lock()


def install() -> None:
    """Make huggingface_hub use the bounded client (once per process)."""
    global _INSTALLED
    if _INSTALLED:
        return
    with _INSTALL_LOCK:
        if _INSTALLED:
            return
        from huggingface_hub import get_session, set_client_factory

        hooks = list(get_session().event_hooks.get("request", []))  # huggingface_hub's own: offline mode, ids
        set_client_factory(lambda: _bounded_client(hooks))
        _INSTALLED = True


def _bounded_client(request_hooks: list[Callable[..., Any]]) -> Any:
    import httpx2

    class BoundedClient(httpx2.Client):
        def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
            traffic = CURRENT.get()
            if traffic is None:  # not the package's traffic (a program's own use of huggingface_hub): as it was
                return super().send(request, **kwargs)
            response: httpx2.Response = _send(traffic, super().send, request, **kwargs)
            return response

    return BoundedClient(
        event_hooks={"request": request_hooks, "response": [_bound_response]},
        follow_redirects=True,
        timeout=None,  # as huggingface_hub's own client: a program's traffic keeps its timeouts; ours are per request
        limits=httpx2.Limits(max_keepalive_connections=0),  # every socket is seen connecting, so it can be shut
    )


def _origin(request: Any) -> tuple[str, str, int | None]:
    return (request.url.scheme, request.url.host, request.url.port)


def _send(traffic: Traffic, send: Callable[..., Any], request: Any, *, stream: bool = False, **kwargs: Any) -> Any:
    import httpx2

    traffic.sends += 1
    if _origin(request) in traffic.refused:
        raise HubTrafficError(traffic.refused[_origin(request)], unreachable=True)
    _bound_request(traffic, request)
    try:
        response = send(request, stream=True, **kwargs)
    except httpx2.TransportError as exc:
        raise _failed(traffic, request, exc) from exc
    try:
        _check_status(traffic, request, response)
        if not stream:
            response.read()
    except httpx2.TransportError as exc:
        response.close()
        raise _failed(traffic, request, exc) from exc
    except BaseException:
        response.close()
        raise
    return response


def _bound_request(traffic: Traffic, request: Any) -> None:
    left = traffic.left()
    if left <= 0:
        raise traffic.expired_error()
    given = request.extensions.get("timeout") or {}

    def bound(name: str, limit: float) -> float:
        value = given.get(name)
        return min(limit, left) if value is None else min(value, limit, left)

    request.extensions["timeout"] = {
        "connect": bound("connect", CONNECT_TIMEOUT),
        "read": bound("read", FIRST_BYTE_TIMEOUT),
        "write": bound("write", FIRST_BYTE_TIMEOUT),
        "pool": bound("pool", CONNECT_TIMEOUT),
    }

    def trace(event: str, info: dict[str, Any]) -> None:
        if event.endswith(("connect_tcp.complete", "start_tls.complete")):
            stream = info.get("return_value")
            traffic.watch(getattr(stream, "get_extra_info", lambda _: None)("socket"))

    request.extensions["trace"] = trace
    request.headers["Accept-Encoding"] = "identity"  # the bytes counted are the bytes written
    request.extensions["rlvrambench_traffic"] = traffic


def _failed(traffic: Traffic, request: Any, exc: BaseException) -> BaseException:
    """What a transport failure becomes: the deadline, a refusal remembered, or (within the budget) itself."""
    if traffic.left() <= 0:
        return traffic.expired_error()
    reason = _unreachable_reason(exc)
    if reason is not None:
        first = _origin(request) not in traffic.refused
        traffic.refused[_origin(request)] = reason
        return exc if first else HubTrafficError(reason, unreachable=True)  # the first: huggingface_hub's own path
    key = (request.method, str(request.url))
    traffic.failures[key] += 1
    if traffic.failures[key] > RETRIES:
        return HubTrafficError(f"{type(exc).__name__} {RETRIES + 1} times: {exc}")
    return exc


def _unreachable_reason(exc: BaseException) -> str | None:
    import socket  # here: every command opens the traffic's bounds, few meet an error

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, socket.gaierror):
            return "the host name could not be resolved"
        if isinstance(seen, OSError) and seen.errno in _UNREACHABLE:
            return "connection refused" if seen.errno == errno.ECONNREFUSED else "no route to the host"
        seen = seen.__cause__ or seen.__context__
    return None


def _check_status(traffic: Traffic, request: Any, response: Any) -> None:
    """A retryable status within the budget passes (huggingface_hub retries it); past it, or when the server asks
    to wait beyond the deadline, it is the error huggingface_hub raises after its last attempt."""
    if response.status_code not in _RETRY_STATUS:
        return
    key = (request.method, str(request.url))
    traffic.failures[key] += 1
    wait = _retry_after(response.headers)
    if wait is not None and wait + 1 >= traffic.left():
        beyond = f"beyond {DEADLINE_ENV}={traffic.seconds:g} s"
        raise HubTrafficError(
            f"it answered {response.status_code}, asking to wait {wait:g} s, {beyond}", unreachable=True
        )
    if traffic.failures[key] > RETRIES:
        from huggingface_hub import hf_raise_for_status

        response.read()
        hf_raise_for_status(response)


def _retry_after(headers: Any) -> float | None:
    """The wait a server asks for: ``Retry-After`` seconds, or the reset time of a ``RateLimit`` header (both of
    which huggingface_hub sleeps for before its next attempt)."""
    value = headers.get("retry-after")
    if value is None and headers.get("ratelimit"):
        found = re.search(r"\bt\s*=\s*(\d+)", headers["ratelimit"])
        value = found.group(1) if found else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _bound_response(response: Any) -> None:
    """Response hook: cap the bytes the answer may deliver, and shut its socket at the deadline."""
    traffic = response.request.extensions.get("rlvrambench_traffic")
    if not isinstance(traffic, Traffic):
        return
    method, path = response.request.method, response.request.url.path
    if method == "HEAD":
        for name in [name for name in response.headers if name.lower().startswith("x-xet-")]:
            del response.headers[name]  # Xet downloads run in hf_xet's own transport, outside these bounds: HTTP
        size = response.headers.get("x-linked-size") or response.headers.get("content-length")
        traffic.declared = int(size) if response.status_code < 400 and size and size.isdigit() else None
        return
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise HubTrafficError(f"the server sent a {encoding}-encoded answer, which was not asked for")
    cap = traffic.cap(method, path)
    resumed = re.match(r"\s*bytes\s*=\s*(\d+)-", response.request.headers.get("range", ""))
    if response.status_code == 206 and resumed:  # the rest of a download: what is left of its bound
        cap = max(cap - int(resumed.group(1)), 0)
    length = response.headers.get("content-length")
    if length and length.isdigit() and int(length) > cap:
        raise HubTrafficError(f"the server announced {int(length):,} bytes where at most {cap:,} are expected")
    response.stream = _capped_stream_class()(response.stream, cap, traffic, response.request)


@functools.cache
def _capped_stream_class() -> type:
    import httpx2

    class CappedStream(httpx2.SyncByteStream):
        """A response body that ends with :class:`HubTrafficError` past ``cap`` bytes or past the deadline; a
        transport failure while reading counts against the request's retry budget."""

        def __init__(self, inner: Any, cap: int, traffic: Traffic, request: Any) -> None:
            self._inner, self._cap, self._traffic, self._request, self._seen = inner, cap, traffic, request, 0

        @property
        def elapsed(self) -> Any:
            return getattr(self._inner, "elapsed", None)

        def __iter__(self) -> Iterator[bytes]:
            try:
                for chunk in self._inner:
                    self._seen += len(chunk)
                    if self._seen > self._cap:
                        raise HubTrafficError(f"the server sent more than the {self._cap:,} bytes expected")
                    if self._traffic.left() <= 0:
                        raise self._traffic.expired_error()
                    yield chunk
            except httpx2.TransportError as exc:
                failure = _failed(self._traffic, self._request, exc)
                if failure is exc:
                    raise
                raise failure from exc

        def close(self) -> None:
            self._inner.close()

    return CappedStream
