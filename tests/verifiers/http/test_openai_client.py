"""make_openai_client: the OpenAI client on openai's aiohttp client, against the scripted server and raw ones.

What the SDK relies on from its model client: connections kept alive and reused, the connection cap, idle
expiry, streaming, proxies, TLS, and failures raised as openai's own error classes.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import ssl
from pathlib import Path

import httpx2
import openai
import pytest

from tests.verifiers.http.conftest import RawServer, ok, raw_server
from verifiers.http import make_openai_client
from verifiers.testing import ScriptedServer

MESSAGES = [{"role": "user", "content": "x"}]
CHAT_BODY = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [
    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}]}).encode()


async def chat_ok(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer) -> None:
    """A keep-alive server that answers every request with the same chat completion, a little later."""
    while await server.next_request(reader):
        await asyncio.sleep(0.02)
        writer.write(ok(CHAT_BODY, b"content-type: application/json\r\n"))
        await writer.drain()


async def test_chat_and_completions_against_the_scripted_server() -> None:
    server = ScriptedServer("reverse")
    async with server.serving() as base_url:
        client = make_openai_client(base_url, api_key="k", max_connections=4, headers={"X-Run": "r1"})
        chats = await asyncio.gather(*(
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"abc{i}"}])
            for i in range(16)))
        completion = await client.completions.create(model="m", prompt="xyz")
        await client.close()
    assert [c.choices[0].message.content for c in chats] == [f"abc{i}"[::-1] for i in range(16)]
    assert completion.choices[0].text == "zyx"
    assert server.recent_requests[0].headers["x-run"] == "r1"
    assert server.recent_requests[0].headers["authorization"] == "Bearer k"


async def test_sequential_requests_share_one_kept_alive_connection() -> None:
    async with raw_server(chat_ok) as server:
        client = make_openai_client(server.url + "/v1", api_key="k")
        for _ in range(5):
            await client.chat.completions.create(model="m", messages=MESSAGES)
        await client.close()
    assert server.connections == 1 and len(server.requests) == 5


async def test_concurrent_requests_queue_behind_the_connection_cap() -> None:
    async with raw_server(chat_ok) as server:
        client = make_openai_client(server.url + "/v1", api_key="k", max_connections=3)
        replies = await asyncio.gather(*(client.chat.completions.create(model="m", messages=MESSAGES)
                                         for _ in range(30)))
        await client.close()
    assert [r.choices[0].message.content for r in replies] == ["hi"] * 30
    assert server.open_peak == 3 and server.connections == 3


async def test_no_cap_opens_a_connection_per_concurrent_request() -> None:
    async with raw_server(chat_ok) as server:
        client = make_openai_client(server.url + "/v1", api_key="k", max_connections=None)
        await asyncio.gather(*(client.chat.completions.create(model="m", messages=MESSAGES) for _ in range(150)))
        await client.close()
    assert server.open_peak == 150  # more than aiohttp's own default cap of 100


async def test_an_idle_connection_is_retired_after_the_keep_alive_expiry() -> None:
    async with raw_server(chat_ok) as server:
        client = make_openai_client(server.url + "/v1", api_key="k", keepalive_expiry=0.1)
        await client.chat.completions.create(model="m", messages=MESSAGES)
        await asyncio.sleep(0.4)
        assert server.open_now == 0  # closed by the client, not by the server
        await client.chat.completions.create(model="m", messages=MESSAGES)
        await client.close()
    assert server.connections == 2


async def test_server_errors_keep_their_openai_classes(serve) -> None:
    client = make_openai_client(serve("echo", fail_first=1, fail_status=503), api_key="k")
    with pytest.raises(openai.InternalServerError):
        await client.chat.completions.create(model="m", messages=MESSAGES)
    assert (await client.chat.completions.create(model="m", messages=MESSAGES)).choices


async def test_timeouts_and_refused_connections_are_openai_connection_errors(free_port: int) -> None:
    server = ScriptedServer("echo", delay_s=2.0)
    async with server.serving() as base_url:
        client = make_openai_client(base_url, api_key="k", timeout=0.2)
        with pytest.raises(openai.APITimeoutError):
            await client.chat.completions.create(model="m", messages=MESSAGES)
    refused = make_openai_client(f"http://127.0.0.1:{free_port}/v1", api_key="k")
    with pytest.raises(openai.APIConnectionError) as info:
        await refused.chat.completions.create(model="m", messages=MESSAGES)
    assert not isinstance(info.value, openai.APITimeoutError)  # openai's aiohttp client alone calls it a timeout
    assert isinstance(info.value.__cause__, httpx2.ConnectError) and "Connect call failed" in str(info.value.__cause__)


@pytest.mark.parametrize("reply", [b"not http at all\r\n\r\n", b""])
async def test_a_broken_answer_is_an_openai_connection_error(reply: bytes) -> None:
    async def broken(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer) -> None:
        await server.next_request(reader)
        writer.write(reply)
        await writer.drain()

    async with raw_server(broken) as server:
        client = make_openai_client(server.url + "/v1", api_key="k")
        with pytest.raises(openai.APIConnectionError):
            await client.chat.completions.create(model="m", messages=MESSAGES)
        await client.close()


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
            stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            assert "".join([chunk.choices[0].delta.content or "" async for chunk in stream]) == "Hello"
        await client.close()
    assert server.connections == 1
    assert json.loads(server.requests[0].split(b" ", 1)[1])["stream"] is True


async def _proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer) -> None:
    """A forward proxy that answers for the origin itself, recording the absolute URL it was asked for."""
    head = await reader.readuntil(b"\r\n\r\n")
    server.requests.append(head.split(b" ")[1])
    await reader.readexactly(int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0]))
    writer.write(ok(CHAT_BODY, b"content-type: application/json\r\n"))
    await writer.drain()


async def test_the_environments_proxy_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    async with raw_server(_proxy) as server:
        monkeypatch.setenv("HTTP_PROXY", server.url)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        client = make_openai_client("http://model.internal:8000/v1", api_key="k")
        reply = await client.chat.completions.create(model="m", messages=MESSAGES)
        await client.close()
    assert reply.choices[0].message.content == "hi"
    assert server.requests == [b"http://model.internal:8000/v1/chat/completions"]


async def test_an_explicit_proxy_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    async with raw_server(_proxy) as server:
        client = make_openai_client("http://model.internal:8000/v1", api_key="k", proxy=server.url)
        await client.chat.completions.create(model="m", messages=MESSAGES)
        await client.close()
    assert server.requests == [b"http://model.internal:8000/v1/chat/completions"]


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


async def test_tls_with_a_trusted_self_signed_certificate(tmp_path: Path) -> None:
    pytest.importorskip("cryptography")
    cert, key = _self_signed(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    async with raw_server(chat_ok, ssl_context=server_context) as server:
        trusting = make_openai_client(server.url + "/v1", api_key="k",
                                      ssl_context=ssl.create_default_context(cafile=str(cert)))
        for _ in range(3):
            await trusting.chat.completions.create(model="m", messages=MESSAGES)
        await trusting.close()
        assert server.connections == 1
        default = make_openai_client(server.url + "/v1", api_key="k")  # default trust store: the certificate is unknown
        with pytest.raises(openai.APIConnectionError) as info:
            await default.chat.completions.create(model="m", messages=MESSAGES)
        await default.close()
    assert "CERTIFICATE_VERIFY_FAILED" in repr(info.value.__cause__)


@pytest.mark.parametrize(("base_url", "error"), [("127.0.0.1:8000/v1", httpx2.UnsupportedProtocol),
                                                  ("http://no-such-host.invalid/v1", httpx2.ConnectError)])
async def test_bad_base_urls_fail_with_a_connection_error(base_url: str, error: type[Exception]) -> None:
    client = make_openai_client(base_url, api_key="k")
    with pytest.raises(openai.APIConnectionError) as info:
        await client.chat.completions.create(model="m", messages=MESSAGES)
    await client.close()
    assert isinstance(info.value.__cause__, error) and not isinstance(info.value, openai.APITimeoutError)


def test_one_client_serves_several_event_loops(serve) -> None:
    """``env.evaluate_sync`` twice with one client: each ``asyncio.run`` is a new event loop."""
    client = make_openai_client(serve("reverse"), api_key="k")

    async def ask() -> str | None:
        return (await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "ab"}])
                ).choices[0].message.content

    assert [asyncio.run(ask()) for _ in range(3)] == ["ba"] * 3


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="max_connections"):
        make_openai_client("http://127.0.0.1:1/v1", api_key="k", max_connections=0)
