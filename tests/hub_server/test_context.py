"""Who is asking (``Hub.principal`` / ``optional_principal``): the failed-authentication limits per address and
per token id, valid tokens never refused, read paths never limited, X-Forwarded-For only from trusted proxies."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hub_server import Settings, create_app
from hub_server.context import Hub
from hub_server.services import accounts
from tests.hub_server.conftest import basic

LIMIT = 3


def _bad(i: int) -> dict[str, str]:
    """A well-formed token with its own id (``i``) and a wrong secret."""
    return basic(f"vfh_{i:012x}_" + "a" * 43)


@pytest.fixture
def hub_and_token(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[FastAPI, str]]:
    """An app allowing LIMIT failures a minute (trusting the proxies in the test's param) and a valid token."""
    trusted = getattr(request, "param", [])
    app = create_app(Settings(data_dir=tmp_path / "hub", failed_auth_per_minute=LIMIT, forwarded_allow_ips=trusted))
    hub: Hub = app.state.hub
    with hub.db.write() as session:
        _, token = accounts.create_user(session, "alice", None)
    yield app, token
    hub.db.dispose()


def _client(hub_and_token: tuple[FastAPI, str], address: str = "192.0.2.1") -> TestClient:
    """A client connecting from ``address``."""
    return TestClient(hub_and_token[0], client=(address, 40000))


def test_a_valid_token_is_accepted_from_an_address_over_its_failure_budget(
        hub_and_token: tuple[FastAPI, str]) -> None:
    client, (_hub, token) = _client(hub_and_token), hub_and_token
    codes = [client.get("/api/v1/whoami", headers=_bad(i)).status_code for i in range(LIMIT + 1)]
    assert codes == [403] * LIMIT + [429]
    assert client.get("/api/v1/whoami", headers=basic(token)).status_code == 200  # was 429
    assert client.get("/api/v1/whoami", headers=_bad(99)).status_code == 429  # failures are still refused
    other = _client(hub_and_token, "192.0.2.2")
    assert other.get("/api/v1/whoami", headers=_bad(100)).status_code == 403  # another address: its own budget


def test_failures_for_one_token_id_are_limited_whatever_address_they_come_from(
        hub_and_token: tuple[FastAPI, str]) -> None:
    codes = [_client(hub_and_token, f"198.51.100.{i}").get("/api/v1/whoami", headers=_bad(7)).status_code
             for i in range(LIMIT + 1)]
    assert codes == [403] * LIMIT + [429]
    assert _client(hub_and_token, "198.51.100.200").get("/api/v1/whoami", headers=_bad(8)).status_code == 403


def test_public_reads_with_a_stale_token_are_served_as_anonymous_and_not_counted(
        hub_and_token: tuple[FastAPI, str]) -> None:
    client = _client(hub_and_token)
    for i in range(3 * LIMIT):
        assert client.get("/simple/", headers=_bad(i)).status_code == 200
        assert client.get("/simple/", headers=basic("not-a-token")).status_code == 200
    assert client.get("/api/v1/whoami", headers=_bad(1000)).status_code == 403  # nothing was counted
    for i in range(LIMIT):
        client.get("/api/v1/whoami", headers=_bad(2000 + i))
    assert client.get("/simple/", headers=_bad(3000)).status_code == 200  # over budget: reads still served


def test_x_forwarded_for_is_ignored_without_trusted_proxies(hub_and_token: tuple[FastAPI, str]) -> None:
    client = _client(hub_and_token, "127.0.0.1")
    codes = [client.get("/api/v1/whoami", headers={**_bad(i), "X-Forwarded-For": f"203.0.113.{i}"}).status_code
             for i in range(LIMIT + 1)]
    assert codes == [403] * LIMIT + [429]


@pytest.mark.parametrize("hub_and_token", [["127.0.0.1"]], indirect=True)
def test_x_forwarded_for_from_a_trusted_proxy_names_the_client(hub_and_token: tuple[FastAPI, str]) -> None:
    proxy = _client(hub_and_token, "127.0.0.1")
    for i in range(LIMIT):
        proxy.get("/api/v1/whoami", headers={**_bad(i), "X-Forwarded-For": "203.0.113.1"})
    assert proxy.get("/api/v1/whoami", headers={**_bad(50), "X-Forwarded-For": "203.0.113.1"}).status_code == 429
    assert proxy.get("/api/v1/whoami", headers={**_bad(51), "X-Forwarded-For": "203.0.113.2"}).status_code == 403
    # a client that is not the proxy cannot pick its address: its own is counted
    direct = _client(hub_and_token, "192.0.2.9")
    codes = [direct.get("/api/v1/whoami", headers={**_bad(60 + i), "X-Forwarded-For": f"203.0.113.{10 + i}"})
             .status_code for i in range(LIMIT + 1)]
    assert codes == [403] * LIMIT + [429]
