"""A relay is a real nginx: it takes PUT and DELETE, and holds each client to its rate and connection limits."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.trainer_adapter.admin_headers import admin_headers
from tests.trainer_adapter.broadcast.conftest import free_port, need_nginx
from trainer_adapter.broadcast.errors import RelayError
from trainer_adapter.broadcast.relay import NginxRelay, RelayConfig


def test_put_get_delete_and_a_version_listing(relays) -> None:
    url = relays[0].url
    assert httpx.put(url + "3/0.shard", content=b"abc", headers=admin_headers()).status_code == 201
    assert httpx.get(url + "3/0.shard", headers=admin_headers()).content == b"abc"
    assert [e["name"] for e in httpx.get(url, headers=admin_headers()).json()] == ["3"]
    assert httpx.delete(url + "3/", headers=admin_headers()).status_code == 204
    assert httpx.get(url + "3/0.shard", headers=admin_headers()).status_code == 404


def test_without_the_run_secret_nothing_is_written_or_read(relays) -> None:
    url = relays[0].url
    assert httpx.put(url + "latest.json", content=b'{"step": 1}', headers=admin_headers()).status_code == 201
    # the attack: an unauthenticated PUT of a version and of latest.json, and reading the run's weights
    for headers in ({}, {"Authorization": "Bearer wrong-secret-wrong-secret"}, {"Authorization": "Basic x"}):
        assert httpx.put(url + "999999/manifest.json", content=b"{}", headers=headers).status_code == 401
        assert httpx.put(url + "latest.json", content=b'{"step": 999999}', headers=headers).status_code == 401
        assert httpx.delete(url + "latest.json", headers=headers).status_code == 401
        assert httpx.get(url + "latest.json", headers=headers).status_code == 401
        assert httpx.get(url, headers=headers).status_code == 401
    assert httpx.get(url + "latest.json", headers=admin_headers()).content == b'{"step": 1}'
    assert not (relays[0].data_dir / "999999").exists()
    assert (relays[0].workdir / "nginx.conf").stat().st_mode & 0o077 == 0  # it holds the secret


def test_public_reads_serve_gets_and_still_refuse_writes(start_relays) -> None:
    [relay] = start_relays(1, public_reads=True)
    assert httpx.put(relay.url + "a", content=b"x", headers=admin_headers()).status_code == 201
    assert httpx.get(relay.url + "a").content == b"x"
    assert httpx.put(relay.url + "a", content=b"y").status_code == 401


def test_a_relay_needs_the_run_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    need_nginx()
    monkeypatch.delenv("VF_RUN_SECRET", raising=False)
    with pytest.raises(RelayError, match="needs the run secret"):
        NginxRelay(RelayConfig(port=free_port()), tmp_path / "r").start()
    with pytest.raises(RelayError, match="16-512 characters"):
        NginxRelay(RelayConfig(port=free_port()), tmp_path / "r", secret='short"; }').start()


def test_each_connection_is_held_to_the_rate_limit(start_relays) -> None:
    [relay] = start_relays(1, rate_limit_bytes=100_000)
    httpx.put(relay.url + "blob", content=bytes(250_000), headers=admin_headers()).raise_for_status()
    started = time.monotonic()
    assert len(httpx.get(relay.url + "blob", headers=admin_headers()).content) == 250_000
    assert time.monotonic() - started > 1.4  # 250 kB at 100 kB/s (nginx lets the first chunk through unthrottled)


async def test_a_client_over_its_connection_limit_is_turned_away(start_relays) -> None:
    [relay] = start_relays(1, rate_limit_bytes=50_000, max_conns_per_client=1)
    httpx.put(relay.url + "blob", content=bytes(100_000), headers=admin_headers()).raise_for_status()
    async with httpx.AsyncClient(headers=admin_headers()) as client:
        slow = asyncio.create_task(client.get(relay.url + "blob"))
        await asyncio.sleep(0.3)
        assert (await client.get(relay.url + "blob")).status_code == 503
        assert (await slow).status_code == 200


def test_a_relay_that_cannot_start_says_why(relays, tmp_path: Path) -> None:
    need_nginx()
    taken = relays[0].config.port
    with pytest.raises(RelayError, match="nginx did not start.*Address already in use"):
        NginxRelay(RelayConfig(port=taken), tmp_path / "second").start()
    with pytest.raises(RelayError, match="nginx is not installed; install it with bash scripts/setup_nginx.sh"):
        relay = NginxRelay(RelayConfig(port=free_port()), tmp_path / "third")
        relay.binary = None  # what a machine without nginx gets from nginx_binary()
        relay.start()


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="port"):
        RelayConfig(port=0)
    with pytest.raises(ValueError, match="rate_limit_bytes"):
        RelayConfig(port=8000, rate_limit_bytes=-1)


ROOT = Path(__file__).resolve().parents[3]


def _relay_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "trainer_adapter.broadcast.relay", *args]


def test_the_command_serves_a_relay_until_sigterm_and_stops_nginx(tmp_path: Path) -> None:
    need_nginx()
    port = free_port()
    process = subprocess.Popen(_relay_command("--port", str(port), "--dir", str(tmp_path / "relay"),
                                              "--rate-limit-bytes", "1000000"),
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == f"relay at http://127.0.0.1:{port}/ serving {tmp_path}/relay/data"
        answer = httpx.put(f"http://127.0.0.1:{port}/latest.json", content=b'{"step": 1}', headers=admin_headers())
        assert answer.status_code == 201
        assert (tmp_path / "relay" / "data" / "latest.json").read_bytes() == b'{"step": 1}'
        assert "limit_rate 1000000;" in (tmp_path / "relay" / "nginx.conf").read_text()
        nginx = int((tmp_path / "relay" / "nginx.pid").read_text())
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
    with pytest.raises(ProcessLookupError):  # nginx went down with it
        os.kill(nginx, 0)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dir", "DIR"], "the following arguments are required: --port"),
        (["--port", "x", "--dir", "DIR"], "argument --port: invalid int value: 'x'"),
        (["--port", "70000", "--dir", "DIR"], "--port: Input should be less than or equal to 65535"),
        (["--port", "8101", "--dir", "DIR", "--rate-limit-bytes", "-1"], "--rate-limit-bytes: Input should be greater"),
        (["--port", "8101", "--dir", "FILE"], "is not a folder"),
    ],
)
def test_bad_command_lines_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "file").write_text("")
    args = [a.replace("DIR", str(tmp_path / "relay")).replace("FILE", str(tmp_path / "file")) for a in args]
    result = subprocess.run(_relay_command(*args), cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert result.stdout == "" and result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert message in result.stderr
    assert not (tmp_path / "relay").exists()  # nothing started, nothing written
