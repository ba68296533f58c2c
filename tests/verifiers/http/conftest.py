"""A tiny asyncio HTTP server for edge cases the scripted server never produces: it answers with raw bytes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest

from verifiers.http.http11 import read_request

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, "RawServer"], Awaitable[None]]


def ok(body: bytes = b"ok", extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n%b\r\n%b" % (len(body), extra, body)


@dataclass
class RawServer:
    """Counts connections and requests; ``handler`` owns each connection."""

    handler: Handler
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    open_now: int = 0
    open_peak: int = 0
    url: str = ""

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open_now += 1
        self.open_peak = max(self.open_peak, self.open_now)
        try:
            await self.handler(reader, writer, self)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.open_now -= 1
            writer.close()

    async def next_request(self, reader: asyncio.StreamReader) -> bool:
        """Read one request (recording its path); ``False`` when the client hung up."""
        request = await read_request(reader)
        if request is None:
            return False
        self.requests.append(request.path.encode() + b" " + request.body)
        return True


async def keep_alive_ok(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer) -> None:
    while await server.next_request(reader):
        writer.write(ok())
        await writer.drain()


@asynccontextmanager
async def raw_server(handler: Handler = keep_alive_ok, ssl_context: object = None) -> AsyncIterator[RawServer]:
    server = RawServer(handler)
    listener = await asyncio.start_server(server.serve, "127.0.0.1", 0, ssl=ssl_context)  # type: ignore[arg-type]
    port = listener.sockets[0].getsockname()[1]
    server.url = f"{'https' if ssl_context else 'http'}://127.0.0.1:{port}"
    async with listener:
        yield server


@pytest.fixture
def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
