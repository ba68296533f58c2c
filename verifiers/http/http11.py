"""The server side of HTTP/1.1 on asyncio streams, for the scripted server and the Kubernetes executor.

:func:`read_request` and :func:`encode_response`: keep-alive, Content-Length and chunked
request bodies; no pipelining guarantees beyond in-order handling, no ``Expect: 100-continue``.
(The SDK's model client is openai's aiohttp client, :mod:`verifiers.http.aiohttp_client`.)
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from http import HTTPStatus

MAX_HEADER_BYTES = 1 << 20


class ProtocolError(ValueError):
    """The bytes on the wire are not valid HTTP/1.1."""


class HttpError(ProtocolError):
    """The bytes on the wire are not a request this server can read."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(slots=True)
class HttpRequest:
    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased; a repeated header keeps its last value."""
    body: bytes
    keep_alive: bool


async def read_request(reader: asyncio.StreamReader) -> HttpRequest | None:
    """The next request on the connection, or ``None`` when the client closed it between requests."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if e.partial.strip():
            raise HttpError(400, "connection closed inside the request headers") from None
        return None
    except asyncio.LimitOverrunError:
        raise HttpError(431, "request headers too large") from None
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HttpError(400, f"malformed request line {lines[0][:100]!r}")
    method, target, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, sep, value = line.partition(":")
            if not sep:
                raise HttpError(400, f"malformed header line {line[:100]!r}")
            headers[name.strip().lower()] = value.strip()
    body = await _read_body(reader, headers)
    connection = headers.get("connection", "").lower()
    keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    return HttpRequest(method, target.split("?", 1)[0], headers, body, keep_alive)


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return await _read_chunked(reader)
    length = headers.get("content-length", "0")
    if not length.isdigit():
        raise HttpError(400, f"bad Content-Length {length!r}")
    return await reader.readexactly(int(length)) if length != "0" else b""


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    while True:
        size_line = (await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip()
        try:
            size = int(size_line, 16)
        except ValueError:
            raise HttpError(400, "bad chunk size") from None
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                pass
            return b"".join(chunks)
        chunks.append(await reader.readexactly(size))
        await reader.readexactly(2)


def encode_response(status: int, body: bytes, keep_alive: bool, headers: dict[str, str] | None = None) -> bytes:
    """A complete HTTP/1.1 response with a JSON body."""
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Status"
    lines = [
        f"HTTP/1.1 {status} {reason}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        f"connection: {'keep-alive' if keep_alive else 'close'}",
    ]
    lines.extend(f"{name}: {value}" for name, value in (headers or {}).items())
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


__all__ = [
    "HttpError",
    "HttpRequest",
    "MAX_HEADER_BYTES",
    "ProtocolError",
    "encode_response",
    "read_request",
]
