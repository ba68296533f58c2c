"""Hub fixtures: an app on a temporary SQLite + folder, users with tokens, and a real server on 127.0.0.1."""

from __future__ import annotations

import base64
import datetime as dt
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hub_server import Settings, create_app
from hub_server.context import Hub
from hub_server.services import accounts
from tests.hub_server.dists import upload_form


def basic(token: str) -> dict[str, str]:
    """The Authorization header twine and pip send for a token."""
    return {"Authorization": "Basic " + base64.b64encode(f"__token__:{token}".encode()).decode()}


def bearer(token: str) -> dict[str, str]:
    """The Authorization header the vf-hub CLI sends."""
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "hub")


@pytest.fixture
def app(settings: Settings) -> Iterator[FastAPI]:
    application = create_app(settings)
    yield application
    application.state.hub.db.dispose()


@pytest.fixture
def hub(app: FastAPI) -> Hub:
    return app.state.hub  # type: ignore[no-any-return]


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def make_user(hub: Hub) -> Callable[..., str]:
    """``make_user(name) -> token`` (publish, unscoped)."""

    def make(name: str) -> str:
        with hub.db.write() as session:
            _user, token = accounts.create_user(session, name, dt.timedelta(days=1))
        return token

    return make


@pytest.fixture
def upload(client: TestClient) -> Callable[..., httpx.Response]:
    """``upload(token, path, name, version, url="/legacy/", **field_overrides)`` as twine would."""

    def send(token: str | None, path: Path, name: str, version: str, url: str = "/legacy/",
             **overrides: str) -> httpx.Response:
        headers = basic(token) if token else {}
        with open(path, "rb") as handle:
            return client.post(url, data=upload_form(path, name, version, **overrides),
                               files={"content": (path.name, handle, "application/octet-stream")}, headers=headers)

    return send


class LiveServer:
    """A real uvicorn server for ``app`` on 127.0.0.1, in a thread."""

    def __init__(self, app: FastAPI) -> None:
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                                    lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the Hub test server did not start")
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *_exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def live_url(app: FastAPI) -> Iterator[str]:
    """The base URL of a real HTTP server running ``app``."""
    with LiveServer(app) as url:
        yield url
