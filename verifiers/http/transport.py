"""An ``httpx`` transport for many concurrent requests to a few origins: HTTP/1.1 keep-alive, O(1) per request.

httpx's default transport (httpcore) scans every pooled connection on each
request event, so at 1,000 rollouts in flight most of a client's CPU went there
(``docs/benchmarks.md``, "Where the time goes"). This transport keeps one
:class:`~verifiers.http.pool.OriginPool` per origin instead::

    client = httpx.AsyncClient(transport=KeepAliveTransport(max_connections=1024))

It speaks HTTP/1.1 over plain TCP or TLS: keep-alive, Content-Length, chunked and
close-delimited bodies, streamed responses, httpx's ``connect``/``read``/``write``/
``pool`` timeouts, and httpx's exceptions (``ConnectError``, ``ReadTimeout``,
``RemoteProtocolError``...), so callers classify and retry errors as before.
A request sent on a reused connection that the server had closed before
answering is sent once more on a new one (its body is bytes, so it can be).

Not supported: HTTP/2, proxies, Unix sockets. A proxy from the environment
(``HTTP(S)_PROXY``/``ALL_PROXY``, honouring ``NO_PROXY``) that applies to an origin
makes its first request raise :class:`ProxyNotSupported` (``trust_env=False``
skips the check); :func:`verifiers.http.make_openai_client` checks first and
falls back to httpx's own transport in that case.
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.request
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextlib import contextmanager
from typing import cast

import httpx

from verifiers.http.connection import Connection, ServerDisconnected
from verifiers.http.http11 import ProtocolError, ResponseHead, encode_request_head
from verifiers.http.pool import OriginPool

_DEFAULT_PORTS = {"http": 80, "https": 443}


class ProxyNotSupported(httpx.TransportError):
    """A proxy is configured for an origin; this transport only connects directly."""


def environment_proxy(url: httpx.URL) -> str | None:
    """The proxy the environment sets for ``url`` (``None`` when there is none or ``NO_PROXY`` exempts it)."""
    proxies = urllib.request.getproxies()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(url.host):
        return None
    return proxy


@contextmanager
def _mapped(request: httpx.Request | None, timeout_error: type[httpx.TimeoutException],
            os_error: type[httpx.TransportError]) -> Iterator[None]:
    """Re-raise one step's failures as the httpx exceptions its callers classify."""
    try:
        yield
    except TimeoutError as e:
        raise timeout_error(str(e) or timeout_error.__name__, request=request) from e
    except ServerDisconnected as e:
        raise httpx.RemoteProtocolError(str(e), request=request) from e
    except ProtocolError as e:
        raise httpx.RemoteProtocolError(str(e), request=request) from e
    except OSError as e:  # includes ssl.SSLError and refused/reset connections
        raise os_error(str(e) or type(e).__name__, request=request) from e


class _ResponseStream(httpx.AsyncByteStream):
    """A response body read off its connection; the connection goes back to the pool once the body is read."""

    def __init__(self, pool: OriginPool, conn: Connection, head: ResponseHead, request: httpx.Request,
                 timeout: float | None) -> None:
        self._pool, self._conn, self._head, self._request, self._timeout = pool, conn, head, request, timeout
        self._done = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._done:
            raise httpx.StreamClosed()
        try:
            with _mapped(self._request, httpx.ReadTimeout, httpx.ReadError):
                async for part in self._conn.body(self._head, self._request.method.encode(), self._timeout):
                    yield part
        except BaseException:
            self._finish(reusable=False)
            raise
        self._finish(reusable=self._head.keep_alive)

    async def aclose(self) -> None:
        self._finish(reusable=False)  # a no-op after a complete read

    def _finish(self, reusable: bool) -> None:
        if self._done:
            return
        self._done = True
        if reusable:
            self._pool.release(self._conn)
        else:
            self._pool.discard(self._conn)


class KeepAliveTransport(httpx.AsyncBaseTransport):
    """See the module docstring.

    Args:
        max_connections: open connections per origin at most; further requests wait in line. ``None``: no cap.
        keepalive_expiry: seconds an idle connection is kept open (httpx's default, 5 s, is what servers
            such as uvicorn allow too).
        ssl_context: for ``https`` origins; default: httpx's (certifi's CAs, ``SSL_CERT_FILE``).
        trust_env: refuse origins for which the environment sets a proxy (see the module docstring).
    """

    def __init__(self, *, max_connections: int | None = None, keepalive_expiry: float | None = 5.0,
                 ssl_context: ssl.SSLContext | None = None, trust_env: bool = True) -> None:
        if max_connections is not None and max_connections < 1:
            raise ValueError(f"max_connections must be >= 1 or None, got {max_connections}")
        self._max_connections = max_connections
        self._keepalive_expiry = keepalive_expiry
        self._ssl_context = ssl_context
        self._trust_env = trust_env
        self._pools: dict[tuple[str, str, int], OriginPool] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def pool(self, url: httpx.URL) -> OriginPool:
        """The pool for ``url``'s origin on the running event loop (created on first use)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            # Connections belong to the loop that opened them (e.g. one per ``asyncio.run``): start afresh.
            self._close_pools()
            self._loop = loop
        origin = (url.scheme, url.host, url.port or _DEFAULT_PORTS.get(url.scheme, 0))
        pool = self._pools.get(origin)
        if pool is None:
            pool = self._pools[origin] = self._new_pool(url, origin)
        return pool

    def _new_pool(self, url: httpx.URL, origin: tuple[str, str, int]) -> OriginPool:
        scheme, host, port = origin
        if scheme not in _DEFAULT_PORTS:
            raise httpx.UnsupportedProtocol(f"KeepAliveTransport speaks http and https, not {scheme!r}: {url}")
        proxy = environment_proxy(url) if self._trust_env else None
        if proxy:
            raise ProxyNotSupported(
                f"the environment sets the proxy {proxy!r} for {url.scheme}://{url.host}, and KeepAliveTransport "
                "connects directly only; use verifiers.http.make_openai_client (it falls back to httpx's transport), "
                "exempt the host with NO_PROXY, or pass trust_env=False")
        context = self._https_context() if scheme == "https" else None

        async def connect(timeout: float | None) -> Connection:
            with _mapped(None, httpx.ConnectTimeout, httpx.ConnectError):  # httpx's client adds the request
                return await Connection.open(host, port, context, timeout)

        return OriginPool(connect, self._max_connections, self._keepalive_expiry)

    def _https_context(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            self._ssl_context = httpx.create_ssl_context()
        return self._ssl_context

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        pool = self.pool(request.url)
        try:
            body: bytes | AsyncIterator[bytes] = request.content
        except httpx.RequestNotRead:
            # a streamed upload, sent once; an async client's requests carry async streams (the type allows sync)
            body = cast(AsyncIterable[bytes], request.stream).__aiter__()
        chunked = "chunked" in request.headers.get("transfer-encoding", "").lower()
        head = encode_request_head(request.method.encode(), request.url.raw_path, request.headers.raw)
        while True:
            with _mapped(request, httpx.PoolTimeout, httpx.ConnectError):  # connecting maps its own errors
                conn = await pool.acquire(timeouts.get("pool"), timeouts.get("connect"))
            try:
                with _mapped(request, httpx.WriteTimeout, httpx.WriteError):
                    await conn.send(head, body, chunked, timeouts.get("write"))
                with _mapped(request, httpx.ReadTimeout, httpx.ReadError):
                    response_head = await conn.read_head(timeouts.get("read"))
            except httpx.TransportError as error:
                pool.discard(conn)
                if conn.served and isinstance(body, bytes) and _unanswered(error):
                    continue  # a stale keep-alive connection: the server never saw or answered the request
                raise
            except BaseException:
                pool.discard(conn)
                raise
            break
        return httpx.Response(
            response_head.status, headers=response_head.headers,
            stream=_ResponseStream(pool, conn, response_head, request, timeouts.get("read")),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": response_head.reason},
        )

    async def aclose(self) -> None:
        self._close_pools()

    def _close_pools(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()


def _unanswered(error: httpx.TransportError) -> bool:
    """Whether the server closed the connection before sending any byte of a response."""
    cause = error.__cause__
    return isinstance(cause, (ServerDisconnected, ConnectionResetError, BrokenPipeError))


__all__ = ["KeepAliveTransport", "ProxyNotSupported", "environment_proxy"]
