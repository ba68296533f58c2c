"""One HTTP/1.1 client connection over asyncio streams: send a request, read the response.

A connection serves one request at a time. It knows whether it can serve another
(keep-alive on both sides, body fully read, nothing arrived while it sat idle);
the pool decides what to do with it. Failures surface as the built-in errors
(``OSError``, ``TimeoutError``, :class:`~verifiers.http.http11.ProtocolError`,
:class:`ServerDisconnected`); :mod:`verifiers.http.transport` maps them to httpx's.
"""

from __future__ import annotations

import asyncio
import ssl
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Iterable
from typing import SupportsIndex, TypeVar

from verifiers.http.http11 import MAX_HEADER_BYTES, ProtocolError, ResponseHead, parse_response_head

_READ_SIZE = 1 << 16
_NO_BODY_STATUSES = frozenset((204, 304))
T = TypeVar("T")


class ServerDisconnected(ConnectionError):
    """The server closed the connection before sending a byte of the response."""


class _Reader(asyncio.StreamReader):
    """A stream reader that notices bytes or EOF arriving while its connection sits idle."""

    idle = False
    stale = False

    def feed_data(self, data: Iterable[SupportsIndex]) -> None:  # bytes, as the protocol feeds them
        if self.idle:
            self.stale = True  # e.g. a 408 before the server hangs up: never read it as our response
        super().feed_data(data)

    def feed_eof(self) -> None:
        if self.idle:
            self.stale = True
        super().feed_eof()


async def within(timeout: float | None, awaitable: Awaitable[T]) -> T:
    """``awaitable``, or ``TimeoutError`` after ``timeout`` seconds (``None``: no limit)."""
    if timeout is None:
        return await awaitable
    if sys.version_info < (3, 11):  # no asyncio.timeout yet, and its TimeoutError is not the built-in one
        try:
            return await asyncio.wait_for(awaitable, timeout)
        except asyncio.TimeoutError as error:
            raise TimeoutError(f"no result within {timeout} s") from error
    async with asyncio.timeout(timeout):
        return await awaitable


class Connection:
    """An open connection to one origin; see the module docstring."""

    __slots__ = ("reader", "writer", "served", "idle_since")

    def __init__(self, reader: _Reader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.served = 0
        """Responses read completely; a connection with ``served > 0`` is a reused one."""
        self.idle_since = 0.0

    @classmethod
    async def open(cls, host: str, port: int, ssl_context: ssl.SSLContext | None, timeout: float | None) -> Connection:
        """Connect (and handshake, for TLS) within ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        reader = _Reader(limit=MAX_HEADER_BYTES, loop=loop)
        protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
        server_hostname = host if ssl_context is not None else None
        connecting = loop.create_connection(lambda: protocol, host, port, ssl=ssl_context,
                                            server_hostname=server_hostname)
        transport, _ = await within(timeout, connecting)
        return cls(reader, asyncio.StreamWriter(transport, protocol, reader, loop))

    def park(self) -> None:
        """Mark the connection idle (in the pool)."""
        self.idle_since = time.monotonic()
        self.reader.idle = True

    def unpark(self) -> bool:
        """Take the connection out of the pool; ``False`` when it can no longer serve a request."""
        self.reader.idle = False
        return not (self.reader.stale or self.reader.at_eof() or self.writer.is_closing())

    def close(self) -> None:
        try:
            self.writer.close()
        except RuntimeError:  # its event loop is closed already; the socket goes with the transport
            pass

    async def send(self, head: bytes, body: bytes | AsyncIterator[bytes], chunked: bool, timeout: float | None) -> None:
        """Write a request; a streamed ``body`` is framed as chunks when ``chunked``."""
        if isinstance(body, bytes):
            self.writer.write(head + body)
        else:
            self.writer.write(head)
            async for part in body:
                if part:
                    self.writer.write(b"%x\r\n%b\r\n" % (len(part), part) if chunked else part)
                    await within(timeout, self.writer.drain())
            if chunked:
                self.writer.write(b"0\r\n\r\n")
        await within(timeout, self.writer.drain())

    async def read_head(self, timeout: float | None) -> ResponseHead:
        """The final response head (1xx interim responses are skipped).

        Raises:
            ServerDisconnected: the connection closed before any byte of the response.
        """
        while True:
            try:
                data = await within(timeout, self.reader.readuntil(b"\r\n\r\n"))
            except asyncio.IncompleteReadError as e:
                if e.partial:
                    raise ProtocolError("server closed the connection inside the response head") from None
                raise ServerDisconnected("Server disconnected without sending a response.") from None
            except asyncio.LimitOverrunError:
                raise ProtocolError("response head too large") from None
            head = parse_response_head(data)
            if head.status == 101:
                raise ProtocolError("the server switched protocols, which this client does not support")
            if head.status >= 200:
                return head

    async def body(self, head: ResponseHead, method: bytes, timeout: float | None) -> AsyncIterator[bytes]:
        """The response body, as it arrives; ``served`` counts it once fully read."""
        if method == b"HEAD" or head.status in _NO_BODY_STATUSES:
            pass
        elif head.chunked:
            async for part in self._chunked(timeout):
                yield part
        elif head.content_length is not None:
            remaining = head.content_length
            while remaining:
                part = await within(timeout, self.reader.read(min(remaining, _READ_SIZE)))
                if not part:
                    raise ProtocolError(f"server closed the connection with {remaining} body bytes unsent")
                remaining -= len(part)
                yield part
        else:  # delimited by the server closing the connection
            head.keep_alive = False
            while part := await within(timeout, self.reader.read(_READ_SIZE)):
                yield part
        self.served += 1

    async def _chunked(self, timeout: float | None) -> AsyncIterator[bytes]:
        reader = self.reader
        try:
            while True:
                size_line = await within(timeout, reader.readuntil(b"\r\n"))
                try:
                    size = int(size_line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    raise ProtocolError(f"bad chunk size line {size_line[:40]!r}") from None
                if size == 0:
                    while await within(timeout, reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                        pass
                    return
                part = await within(timeout, reader.readexactly(size))
                if await within(timeout, reader.readexactly(2)) != b"\r\n":
                    raise ProtocolError("chunk not followed by CRLF")
                yield part
        except asyncio.IncompleteReadError:
            raise ProtocolError("server closed the connection inside a chunked body") from None
        except asyncio.LimitOverrunError:
            raise ProtocolError("chunk size line too long") from None


__all__ = ["Connection", "ServerDisconnected", "within"]
