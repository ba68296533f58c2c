"""KeepAliveTransport against real sockets: reuse, limits, framing, streaming, timeouts and failures."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
from pathlib import Path

import httpx
import pytest

from tests.verifiers.http.conftest import RawServer, ok, raw_server
from verifiers.http import KeepAliveTransport, ProxyNotSupported


def client(**kwargs: object) -> httpx.AsyncClient:
    timeout = kwargs.pop("timeout", 5.0)
    return httpx.AsyncClient(transport=KeepAliveTransport(**kwargs), timeout=timeout)  # type: ignore[arg-type]


async def test_sequential_requests_share_one_connection() -> None:
    async with raw_server() as server, client() as http:
        bodies = [(await http.post(f"{server.url}/r{i}", content=b"x" * i)).content for i in range(20)]
    assert bodies == [b"ok"] * 20
    assert server.connections == 1
    assert server.requests[:3] == [b"/r0 ", b"/r1 x", b"/r2 xx"]


async def test_concurrent_requests_queue_behind_the_connection_limit() -> None:
    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer) -> None:
        while await server.next_request(reader):
            await asyncio.sleep(0.02)
            writer.write(ok())

    async with raw_server(slow) as server, client(max_connections=3) as http:
        responses = await asyncio.gather(*(http.get(f"{server.url}/{i}") for i in range(30)))
        pool = http._transport.pool(httpx.URL(server.url))  # type: ignore[attr-defined]
        assert (pool.open_connections, pool.idle_connections) == (3, 3)
    assert [r.status_code for r in responses] == [200] * 30
    assert server.connections == 3 and server.open_peak == 3


async def test_a_waiter_gives_up_after_the_pool_timeout() -> None:
    async def never(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer) -> None:
        await server.next_request(reader)
        await asyncio.sleep(30)

    async with raw_server(never) as server, client(max_connections=1) as http:
        hung = asyncio.create_task(http.get(server.url))
        await asyncio.sleep(0.05)
        with pytest.raises(httpx.PoolTimeout):
            await http.get(server.url, timeout=httpx.Timeout(5.0, pool=0.1))
        hung.cancel()
        with pytest.raises(asyncio.CancelledError):
            await hung
        pool = http._transport.pool(httpx.URL(server.url))  # type: ignore[attr-defined]
        assert pool.open_connections == 0  # the cancelled request's connection was closed, its slot freed


async def test_an_idle_connection_the_server_closed_is_replaced() -> None:
    async def one_per_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer) -> None:
        await server.next_request(reader)
        writer.write(ok())  # says keep-alive, then hangs up like an idle timeout
        await writer.drain()

    async with raw_server(one_per_connection) as server, client() as http:
        for _ in range(3):
            assert (await http.get(server.url)).content == b"ok"
            await asyncio.sleep(0.05)  # the FIN arrives while the connection is idle
    assert server.connections == 3


async def test_a_request_on_a_stale_connection_is_sent_once_more() -> None:
    async def drops_second(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer) -> None:
        await server.next_request(reader)
        writer.write(ok())
        await writer.drain()
        if server.connections == 1:
            await server.next_request(reader)  # read the second request, then hang up without an answer

    async with raw_server(drops_second) as server, client() as http:
        await http.get(f"{server.url}/a")
        response = await http.post(f"{server.url}/b", content=b"body")
    assert response.content == b"ok"
    assert server.connections == 2
    assert server.requests == [b"/a ", b"/b body", b"/b body"]


async def test_a_new_connection_closed_without_an_answer_is_a_protocol_error() -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer) -> None:
        await server.next_request(reader)

    async with raw_server(hang_up) as server, client() as http:
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            await http.get(server.url)
    assert server.connections == 1  # not retried: the request may have been acted on


async def test_chunked_and_close_delimited_bodies() -> None:
    async def framings(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer) -> None:
        await server.next_request(reader)
        writer.write(b"HTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n"
                     b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
                     b"5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nx-trailer: 1\r\n\r\n")
        await server.next_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil the end")
        await writer.drain()

    async with raw_server(framings) as server, client() as http:
        assert (await http.get(server.url)).content == b"hello world"
        assert (await http.get(server.url)).content == b"until the end"
        assert (await http.get(server.url)).content == b"hello world"
    assert server.connections == 2  # chunked kept the connection; close-delimited ended it


async def test_a_streamed_response_arrives_piece_by_piece() -> None:
    release = asyncio.Event()

    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer) -> None:
        await server.next_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n")
        await release.wait()
        writer.write(b"4\r\nlast\r\n0\r\n\r\n")

    async with raw_server(trickle) as server, client() as http:
        async with http.stream("GET", server.url) as response:
            parts = response.aiter_bytes()
            assert await anext(parts) == b"first"  # before the server has sent the rest
            release.set()
            assert [p async for p in parts] == [b"last"]


async def test_a_silent_server_raises_read_timeout() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer) -> None:
        await asyncio.sleep(30)

    async with raw_server(silent) as server, client(timeout=0.2) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.get(server.url)


@pytest.mark.parametrize("reply", [b"HTTP/2 200 OK\r\n\r\n", b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n",
                                   b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort"])
async def test_malformed_responses_raise_remote_protocol_error(reply: bytes) -> None:
    async def bad(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer) -> None:
        await server.next_request(reader)
        writer.write(reply)

    async with raw_server(bad) as server, client() as http:
        with pytest.raises(httpx.RemoteProtocolError):
            await http.get(server.url)


async def test_connection_refused_raises_connect_error(free_port: int) -> None:
    async with client() as http:
        with pytest.raises(httpx.ConnectError):
            await http.get(f"http://127.0.0.1:{free_port}/")


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/x", "ws://127.0.0.1/x"])
async def test_unsupported_schemes_are_refused(url: str) -> None:
    async with client() as http:
        with pytest.raises(httpx.UnsupportedProtocol):
            await http.get(url)


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="max_connections"):
        KeepAliveTransport(max_connections=0)


async def test_an_environment_proxy_is_refused_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with raw_server() as server:
        async with client() as http:
            with pytest.raises(ProxyNotSupported, match="proxy.invalid"):
                await http.get(server.url)
        async with client(trust_env=False) as http:
            assert (await http.get(server.url)).content == b"ok"
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        async with client() as http:
            assert (await http.get(server.url)).content == b"ok"


async def test_closing_the_transport_closes_idle_connections() -> None:
    async with raw_server() as server:
        http = client()
        await http.get(server.url)
        assert server.open_now == 1
        await http.aclose()
        await asyncio.sleep(0.05)
        assert server.open_now == 0


def test_one_client_serves_several_event_loops() -> None:
    async def scenario(http: httpx.AsyncClient) -> bytes:
        async with raw_server() as server:
            return (await http.get(server.url)).content

    http = client()
    assert [asyncio.run(scenario(http)) for _ in range(2)] == [b"ok", b"ok"]


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
    async with raw_server(ssl_context=server_context) as server:
        async with client(ssl_context=ssl.create_default_context(cafile=str(cert))) as http:
            responses = [await http.get(server.url) for _ in range(3)]
            assert [r.content for r in responses] == [b"ok"] * 3
        assert server.connections == 1
        async with client() as http:  # default trust store: the certificate is unknown
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await http.get(server.url)
