"""make_openai_client: the OpenAI client over KeepAliveTransport, against the scripted server and raw ones."""

from __future__ import annotations

import asyncio
import json

import httpx
import openai
import pytest

from tests.verifiers.http.conftest import RawServer, ok, raw_server
from verifiers.http import KeepAliveTransport, make_openai_client
from verifiers.testing import ScriptedServer


def _transport(client: openai.AsyncOpenAI) -> httpx.AsyncBaseTransport:
    return client._client._transport  # the httpx client's transport


async def test_chat_and_completions_against_the_scripted_server() -> None:
    server = ScriptedServer("reverse")
    async with server.serving() as base_url:
        client = make_openai_client(base_url, api_key="k", max_connections=4, headers={"X-Run": "r1"})
        assert isinstance(_transport(client), KeepAliveTransport)
        chats = await asyncio.gather(*(
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"abc{i}"}])
            for i in range(16)))
        completion = await client.completions.create(model="m", prompt="xyz")
        await client.close()
    assert [c.choices[0].message.content for c in chats] == [f"abc{i}"[::-1] for i in range(16)]
    assert completion.choices[0].text == "zyx"
    assert server.recent_requests[0].headers["x-run"] == "r1"
    assert server.recent_requests[0].headers["authorization"] == "Bearer k"


async def test_server_errors_keep_their_openai_classes(serve) -> None:
    client = make_openai_client(serve("echo", fail_first=1, fail_status=503), api_key="k")
    with pytest.raises(openai.InternalServerError):
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert (await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])).choices


async def test_timeouts_and_refused_connections_are_openai_connection_errors(free_port: int) -> None:
    server = ScriptedServer("echo", delay_s=2.0)
    async with server.serving() as base_url:
        client = make_openai_client(base_url, api_key="k", timeout=0.2)
        with pytest.raises(openai.APITimeoutError):
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    refused = make_openai_client(f"http://127.0.0.1:{free_port}/v1", api_key="k")
    with pytest.raises(openai.APIConnectionError):
        await refused.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])


def _sse(chunks: list[str]) -> bytes:
    events = b""
    for i, text in enumerate(chunks):
        data = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m",
                "choices": [{"index": 0, "delta": {"content": text},
                             "finish_reason": None if i < len(chunks) - 1 else "stop"}]}
        events += b"data: " + json.dumps(data).encode() + b"\n\n"
    return events + b"data: [DONE]\n\n"


async def test_streaming_chat_completions() -> None:
    async def sse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer) -> None:
        while await server.next_request(reader):
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
            for line in _sse(["Hel", "lo"]).split(b"\n\n")[:-1]:
                event = line + b"\n\n"
                writer.write(b"%x\r\n%b\r\n" % (len(event), event))
                await writer.drain()
                await asyncio.sleep(0.01)
            writer.write(b"0\r\n\r\n")

    async with raw_server(sse) as server:
        client = make_openai_client(server.url + "/v1", api_key="k")
        for _ in range(2):  # the connection is reused after a fully read stream
            stream = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}],
                                                          stream=True)
            assert "".join([chunk.choices[0].delta.content or "" async for chunk in stream]) == "Hello"
        await client.close()
    assert server.connections == 1
    assert json.loads(server.requests[0].split(b" ", 1)[1])["stream"] is True


async def test_an_environment_proxy_switches_to_httpx_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        seen.append(head.split(b" ")[1])  # a proxy gets the absolute URL
        await reader.readexactly(int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0]))
        body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "via proxy"}}]}).encode()
        writer.write(ok(body, b"content-type: application/json\r\n"))
        await writer.drain()

    async with raw_server(proxy) as server:
        monkeypatch.setenv("HTTP_PROXY", server.url)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        client = make_openai_client("http://model.internal:8000/v1", api_key="k")
        assert not isinstance(_transport(client), KeepAliveTransport)
        reply = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        await client.close()
    assert reply.choices[0].message.content == "via proxy"
    assert seen == [b"http://model.internal:8000/v1/chat/completions"]


@pytest.mark.parametrize(("base_url", "error"), [("127.0.0.1:8000/v1", httpx.UnsupportedProtocol),
                                                  ("http://no-such-host.invalid/v1", httpx.ConnectError)])
async def test_bad_base_urls_fail_with_a_connection_error(base_url: str, error: type[Exception]) -> None:
    client = make_openai_client(base_url, api_key="k")
    with pytest.raises(openai.APIConnectionError) as info:
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert isinstance(info.value.__cause__, error)


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="max_connections"):
        make_openai_client("http://127.0.0.1:1/v1", api_key="k", max_connections=0)
