"""Hub fixtures: an app on a temporary SQLite + folder, users with tokens, and a real server on 127.0.0.1.

With ``VF_HUB_TEST_DATABASE_URL``/``VF_HUB_TEST_STORAGE_URL`` set, every Hub built here or in a test
runs on PostgreSQL/S3 instead, a fresh schema and key prefix per module and per test (``scale.py``).
"""

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
from hub_server.testing.dists import upload_form
from tests.hub_server.scale import ScaleBackends, local_s3, with_fresh_prefix


def basic(token: str) -> dict[str, str]:
    """The Authorization header twine and pip send for a token."""
    return {"Authorization": "Basic " + base64.b64encode(f"__token__:{token}".encode()).decode()}


def bearer(token: str) -> dict[str, str]:
    """The Authorization header the vf-hub CLI sends."""
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="session")
def scale_backends() -> Iterator[ScaleBackends]:
    """The scale-path services named by the environment (inactive by default)."""
    backends = ScaleBackends.from_env()
    yield backends
    backends.close()


@pytest.fixture(scope="session")
def s3_base_url(scale_backends: ScaleBackends) -> Iterator[str]:
    """An ``s3://`` URL of a bucket on a real S3-compatible server on 127.0.0.1.

    The scale path's server when one is configured, else moto's server in a thread of this process.
    """
    if scale_backends.storage_url is not None:
        yield scale_backends.storage_url
        return
    with local_s3() as url:
        yield url


@pytest.fixture
def s3_url(s3_base_url: str) -> str:
    """``s3_base_url`` with a key prefix of this test's own."""
    return with_fresh_prefix(s3_base_url)


@pytest.fixture(scope="module", autouse=True)
def _scale_path_for_module(scale_backends: ScaleBackends) -> Iterator[None]:
    # Module-scoped Hubs (test_real_clients.py) are built before any per-test fixture runs.
    with pytest.MonkeyPatch.context() as patch:
        for key, value in scale_backends.environment().items():
            patch.setenv(key, value)
        yield


@pytest.fixture(autouse=True)
def _scale_path_for_test(scale_backends: ScaleBackends, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in scale_backends.environment().items():
        monkeypatch.setenv(key, value)


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
