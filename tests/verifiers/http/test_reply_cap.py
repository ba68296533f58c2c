"""A reply's size is bounded: a body over ``max_response_bytes`` — announced by its Content-Length or sent in
chunks without one — fails that request with ReplyTooLargeError as soon as the limit is passed, and a rollout
does not retry it (the same request would get the same reply)."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.verifiers.http.conftest import RawServer, raw_server
from verifiers.errors import ReplyTooLargeError
from verifiers.http import make_openai_client
from verifiers.rollout.model_call import RetryPolicy, request_model

MESSAGES = [{"role": "user", "content": "x"}]


def _chat_body(content: str) -> bytes:
    return json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}]}).encode()


def _server(size: int, chunked: bool):
    sent: list[int] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer) -> None:
        while await server.next_request(reader):
            body = _chat_body("y" * size)
            if not chunked:
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%b"
                             % (len(body), body))
                sent.append(len(body))
                await writer.drain()
                continue
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
            total = 0
            for start in range(0, len(body), 65536):
                piece = body[start:start + 65536]
                writer.write(b"%x\r\n%b\r\n" % (len(piece), piece))
                total += len(piece)
                try:
                    await writer.drain()
                except ConnectionError:
                    break  # the client stopped reading: what was sent is what it cost
            else:
                writer.write(b"0\r\n\r\n")
            sent.append(total)
            await writer.drain()

    return handler, sent


@pytest.mark.parametrize("chunked", [False, True])
async def test_a_reply_over_the_cap_is_one_error_and_not_retried(chunked: bool) -> None:
    handler, _ = _server(4 * 2**20, chunked)
    async with raw_server(handler) as server:
        client = make_openai_client(server.url + "/v1", api_key="k", max_response_bytes=2**20)
        with pytest.raises(ReplyTooLargeError, match="1,048,576"):
            await request_model(client, "m", MESSAGES, retry=RetryPolicy(max_retries=3, initial_delay_s=0.0))
        assert len(server.requests) == 1  # not retried
        await client.close()


@pytest.mark.parametrize("chunked", [False, True])
async def test_a_reply_under_the_cap_is_read_whole(chunked: bool) -> None:
    handler, _ = _server(100_000, chunked)
    async with raw_server(handler) as server:
        client = make_openai_client(server.url + "/v1", api_key="k", max_response_bytes=2**20)
        response = await request_model(client, "m", MESSAGES)
        assert response.choices[0].message.content == "y" * 100_000
        unlimited = make_openai_client(server.url + "/v1", api_key="k", max_response_bytes=None)
        assert (await request_model(unlimited, "m", MESSAGES)).choices[0].message.content == "y" * 100_000
        await client.close()
        await unlimited.close()


def test_a_bad_cap_is_refused() -> None:
    with pytest.raises(ValueError, match="max_response_bytes"):
        make_openai_client("http://127.0.0.1:9/v1", api_key="k", max_response_bytes=0)
