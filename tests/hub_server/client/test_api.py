"""The Hub client against what a user may point it at: no server, a server that is not a Hub, a real Hub."""

from __future__ import annotations

import socket

import pytest

from hub_server.client import HubClient
from hub_server.errors import HubError, NotFound
from verifiers.testing import ScriptedServer


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_no_server_is_one_clear_error_not_a_transport_traceback() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    with HubClient(url) as client, pytest.raises(HubError, match="cannot reach the Hub at") as raised:
        client.info("alice", "reverse-text")
    assert url in str(raised.value) and "VF_HUB_URL" in str(raised.value)


def test_a_model_server_on_the_hubs_port_is_not_read_as_a_missing_project() -> None:
    """The README's scripted OpenAI server answers 404 with its own body; that is not 'no such project'."""
    with ScriptedServer("echo", port=0).running() as base_url:
        url = base_url.removesuffix("/v1")
        with HubClient(url) as client, pytest.raises(HubError) as raised:
            client.info("alice", "reverse-text")
    assert not isinstance(raised.value, NotFound)
    assert "does not look like an Environments Hub" in str(raised.value) and "404" in str(raised.value)


def test_a_real_hubs_404_is_still_not_found(live_url: str) -> None:
    with HubClient(live_url) as client, pytest.raises(NotFound, match="404"):
        client.info("alice", "nothing-here")
