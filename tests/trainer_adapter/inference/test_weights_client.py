"""WeightsClient over a server that drops idle keep-alive connections, as vLLM does after 5 s."""

from __future__ import annotations

import asyncio
import json

import pytest

from trainer_adapter.inference.errors import InferenceServerError
from trainer_adapter.inference.weights_client import WeightsClient


async def _closing_server(answers: list[int]) -> tuple[asyncio.AbstractServer, str]:
    """Answers one request per connection with keep-alive promised, then closes it silently."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length")), 0)
        await reader.readexactly(length)
        answers.append(len(answers) + 1)
        body = json.dumps({"version": len(answers), "weight_dir": "w", "seconds": 0.0}).encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: keep-alive\r\n"
                     b"content-length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.close()  # the server's idle timeout, as the client is about to reuse the connection

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/v1"


async def test_updates_survive_the_server_closing_idle_connections() -> None:
    answers: list[int] = []
    server, url = await _closing_server(answers)
    async with server, WeightsClient(url) as weights:
        for expected in (1, 2, 3):
            await asyncio.sleep(0.2)  # the previous connection is closed by now
            assert (await weights.update("/weights/step_1"))["version"] == expected


async def test_a_server_that_is_gone_is_a_clear_error() -> None:
    server, url = await _closing_server([])
    server.close()
    await server.wait_closed()
    async with WeightsClient(url) as weights:
        with pytest.raises(InferenceServerError, match="POST .*/update_weights"):
            await weights.update("/weights/step_1")


async def test_an_update_on_a_connection_the_server_drops_unanswered_is_sent_once_more() -> None:
    """The race itself: the server takes the request on a pooled connection, then closes it without an answer."""
    answered: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for turn in range(2):
            head = await reader.readuntil(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length")), 0)
            await reader.readexactly(length)
            if turn == 1:
                break  # the idle timeout struck as this request arrived
            answered.append(1)
            body = json.dumps({"version": len(answered), "weight_dir": "w", "seconds": 0.0}).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                         b"content-length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    async with server, WeightsClient(url) as weights:
        assert (await weights.update("/weights/step_1"))["version"] == 1
        assert (await weights.update("/weights/step_2"))["version"] == 2  # resent on a new connection
    assert len(answered) == 2
