"""A relay is a real nginx: it takes PUT and DELETE, and holds each client to its rate and connection limits."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from tests.trainer_adapter.broadcast.conftest import free_port, need_nginx
from trainer_adapter.broadcast.errors import RelayError
from trainer_adapter.broadcast.relay import NginxRelay, RelayConfig


def test_put_get_delete_and_a_version_listing(relays) -> None:
    url = relays[0].url
    assert httpx.put(url + "3/0.shard", content=b"abc").status_code == 201
    assert httpx.get(url + "3/0.shard").content == b"abc"
    assert [e["name"] for e in httpx.get(url).json()] == ["3"]
    assert httpx.delete(url + "3/").status_code == 204
    assert httpx.get(url + "3/0.shard").status_code == 404


def test_each_connection_is_held_to_the_rate_limit(start_relays) -> None:
    [relay] = start_relays(1, rate_limit_bytes=100_000)
    httpx.put(relay.url + "blob", content=bytes(250_000)).raise_for_status()
    started = time.monotonic()
    assert len(httpx.get(relay.url + "blob").content) == 250_000
    assert time.monotonic() - started > 1.4  # 250 kB at 100 kB/s (nginx lets the first chunk through unthrottled)


async def test_a_client_over_its_connection_limit_is_turned_away(start_relays) -> None:
    [relay] = start_relays(1, rate_limit_bytes=50_000, max_conns_per_client=1)
    httpx.put(relay.url + "blob", content=bytes(100_000)).raise_for_status()
    async with httpx.AsyncClient() as client:
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
