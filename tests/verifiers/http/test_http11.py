"""The HTTP/1.1 reader and writer, fed raw bytes."""

from __future__ import annotations

import asyncio

import pytest

from verifiers.http.http11 import (
    HttpError,
    encode_response,
    read_request,
)


def reader_with(data: bytes, eof: bool = True) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=1 << 16)
    reader.feed_data(data)
    if eof:
        reader.feed_eof()
    return reader


async def test_reads_consecutive_keep_alive_requests():
    reader = reader_with(
        b"POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}"
        b"GET /v1/models HTTP/1.1\r\nConnection: close\r\n\r\n"
    )
    first = await read_request(reader)
    assert first is not None
    assert (first.method, first.path, first.body, first.keep_alive) == ("POST", "/v1/chat/completions", b"{}", True)
    assert first.headers["host"] == "a"
    second = await read_request(reader)
    assert second is not None and second.keep_alive is False and second.body == b""
    assert await read_request(reader) is None


async def test_http10_closes_unless_asked_to_keep_alive():
    plain = await read_request(reader_with(b"GET / HTTP/1.0\r\n\r\n"))
    kept = await read_request(reader_with(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"))
    assert plain is not None and not plain.keep_alive
    assert kept is not None and kept.keep_alive


async def test_reads_chunked_bodies():
    request = await read_request(reader_with(
        b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3;ext=1\r\n{\"a\r\n5\r\n\": 1}\r\n0\r\nX-Trailer: y\r\n\r\n"
    ))
    assert request is not None and request.body == b'{"a": 1}'


@pytest.mark.parametrize(
    "data, status",
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET / SPDY/3\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nno colon here\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a", 400),
    ],
)
async def test_malformed_requests_raise_http_errors(data, status):
    with pytest.raises(HttpError) as info:
        await read_request(reader_with(data))
    assert info.value.status == status


async def test_oversized_headers_are_431():
    with pytest.raises(HttpError) as info:
        await read_request(reader_with(b"GET / HTTP/1.1\r\nX: " + b"a" * (1 << 17) + b"\r\n\r\n"))
    assert info.value.status == 431


async def test_truncated_body_is_an_incomplete_read():
    with pytest.raises(asyncio.IncompleteReadError):
        await read_request(reader_with(b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n{}"))


def test_encode_response():
    raw = encode_response(404, b'{"e": 1}', keep_alive=False, headers={"x-a": "b"})
    head, body = raw.split(b"\r\n\r\n")
    assert head.split(b"\r\n") == [
        b"HTTP/1.1 404 Not Found", b"content-type: application/json", b"content-length: 8", b"connection: close",
        b"x-a: b",
    ]
    assert body == b'{"e": 1}'
    assert encode_response(299, b"", True).startswith(b"HTTP/1.1 299 Status\r\n")
