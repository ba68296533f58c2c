"""Behind nginx (``accel_redirect``): whole downloads of large local blobs are handed to nginx, after every check.

The unit tests read the Hub's own answer; the slow one runs the documented nginx config in front
of a real Hub server and downloads through it.
"""

from __future__ import annotations

import hashlib
import socket
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlalchemy import select

from hub_server import Settings
from hub_server.app import HubApp
from hub_server.context import Hub
from hub_server.db.models import Project
from hub_server.services.downloads import project_downloads
from hub_server.storage import LocalStorage, blob_key
from hub_server.testing.dists import make_wheel
from hub_server.testing.nginx import ACCEL_PREFIX, nginx_available, running_nginx
from tests.hub_server.conftest import LiveServer, basic

JSON = "application/vnd.pypi.simple.v1+json"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "hub", accel_redirect=ACCEL_PREFIX)


@pytest.fixture
def wheel(hub: Hub, make_user: Callable[[str], str], upload: Callable[..., httpx.Response], client: TestClient,
          tmp_path: Path) -> dict[str, str]:
    """A wheel too large for the Hub's memory (``max_blob`` lowered), uploaded by alice."""
    if not isinstance(hub.storage, LocalStorage):
        pytest.skip("n/a on S3: nginx sends blobs from a local folder only (S3 has presigned redirects)")
    hub.blobs.max_blob = 16
    token = make_user("alice")
    path = make_wheel(tmp_path, "demo-env", "0.1.0", body=f'DATA = "{"x" * 4096}"\n')
    assert upload(token, path, "demo-env", "0.1.0").status_code == 200
    info = client.get("/simple/demo-env/", headers={"Accept": JSON}).json()["files"][0]
    return {"url": info["url"], "sha256": info["hashes"]["sha256"], "token": token, "path": str(path)}


def _accel_target(sha256: str) -> str:
    return ACCEL_PREFIX + blob_key(sha256)


def test_a_whole_download_is_handed_to_nginx_with_the_blobs_headers(app: HubApp, client: TestClient,
                                                                     wheel: dict[str, str]) -> None:
    for method in ("GET", "HEAD"):
        answer = client.request(method, wheel["url"])
        assert answer.status_code == 200 and answer.content == b""
        assert answer.headers["x-accel-redirect"] == _accel_target(wheel["sha256"])
        assert answer.headers["etag"] == f'"{wheel["sha256"]}"' and answer.headers["content-type"] == "application/zip"
        assert "immutable" in answer.headers["cache-control"]
    app.state.downloads.flush()
    with app.state.hub.db.read() as session:
        assert project_downloads(session, "demo-env").total == 1  # the GET, not the HEAD


def test_ranges_and_conditionals_are_answered_by_the_hub(client: TestClient, wheel: dict[str, str]) -> None:
    data = Path(wheel["path"]).read_bytes()
    part = client.get(wheel["url"], headers={"Range": "bytes=2-9"})
    assert part.status_code == 206 and part.content == data[2:10] and "x-accel-redirect" not in part.headers
    unchanged = client.get(wheel["url"], headers={"If-None-Match": f'"{wheel["sha256"]}"'})
    assert unchanged.status_code == 304 and "x-accel-redirect" not in unchanged.headers


def test_small_blobs_stay_in_memory(hub: Hub, client: TestClient, wheel: dict[str, str]) -> None:
    hub.blobs.max_blob = 1024 * 1024
    answer = client.get(wheel["url"])
    assert answer.status_code == 200 and "x-accel-redirect" not in answer.headers
    assert hashlib.sha256(answer.content).hexdigest() == wheel["sha256"]


def test_private_missing_and_quarantined_blobs_are_never_handed_over(hub: Hub, client: TestClient,
                                                                    wheel: dict[str, str]) -> None:
    with hub.db.write() as session:
        session.scalars(select(Project)).one().private = True
    anonymous = client.get(wheel["url"])
    assert anonymous.status_code == 404 and "x-accel-redirect" not in anonymous.headers
    owner = client.get(wheel["url"], headers=basic(wheel["token"]))
    assert owner.headers["x-accel-redirect"] == _accel_target(wheel["sha256"])
    assert owner.headers["cache-control"].startswith("private")
    path = hub.storage.locate(blob_key(wheel["sha256"]))
    assert isinstance(path, Path)
    path.unlink()
    gone = client.get(wheel["url"], headers=basic(wheel["token"]))
    assert gone.status_code == 503 and "x-accel-redirect" not in gone.headers


@pytest.mark.parametrize("prefix", ["_blobs/", "/_blobs", "/", "/a/../b/", "http://x/", "/sp ace/"])
def test_a_bad_accel_prefix_is_refused_with_its_name(tmp_path: Path, prefix: str) -> None:
    with pytest.raises(ValidationError, match="accel_redirect: .* is not a location path"):
        Settings(data_dir=tmp_path, accel_redirect=prefix)


@pytest.mark.slow
@pytest.mark.skipif(not nginx_available(), reason="needs nginx (apt-get install nginx-light)")
def test_downloads_through_nginx_arrive_intact_and_the_blob_folder_stays_internal(
        app: HubApp, hub: Hub, wheel: dict[str, str], tmp_path: Path) -> None:
    assert isinstance(hub.storage, LocalStorage)
    data = Path(wheel["path"]).read_bytes()
    with LiveServer(app) as hub_url, running_nginx(tmp_path / "nginx", hub_url.removeprefix("http://"),
                                                   hub.storage.root) as (url, _process):
        whole = httpx.get(url + wheel["url"])
        assert whole.status_code == 200 and whole.content == data
        assert whole.headers["etag"] == f'"{wheel["sha256"]}"' and "x-accel-redirect" not in whole.headers
        head = httpx.head(url + wheel["url"])
        assert head.status_code == 200 and head.headers["content-length"] == str(len(data))
        part = httpx.get(url + wheel["url"], headers={"Range": "bytes=3-12"})
        assert part.status_code == 206 and part.content == data[3:13]
        assert httpx.get(url + _accel_target(wheel["sha256"])).status_code == 404  # internal: not for clients
        with hub.db.write() as session:
            session.scalars(select(Project)).one().private = True
        assert httpx.get(url + wheel["url"]).status_code == 404
        assert httpx.get(url + wheel["url"], headers=basic(wheel["token"])).content == data


@pytest.mark.slow
@pytest.mark.skipif(not nginx_available(), reason="needs nginx (apt-get install nginx-light)")
def test_half_sent_requests_are_dropped_by_nginx_in_front(app: HubApp, hub: Hub, tmp_path: Path) -> None:
    # the attack: many connections that each send part of a request's headers, then nothing
    assert isinstance(hub.storage, LocalStorage)
    with LiveServer(app) as hub_url, running_nginx(tmp_path / "nginx", hub_url.removeprefix("http://"),
                                                   hub.storage.root, read_timeout_s=2) as (url, _process):
        port = int(url.rsplit(":", 1)[1])
        slow = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(200)]
        for connection in slow:
            connection.sendall(b"GET /simple/ HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        assert httpx.get(url + "/health", timeout=5).status_code == 200  # the Hub serves others meanwhile
        started = time.monotonic()
        for connection in slow:  # nginx answers 408 (or just closes) once the headers stall past the timeout
            received = b""
            while chunk := connection.recv(4096):  # EOF: closed; a socket timeout (10 s) fails the test
                received += chunk
            assert received == b"" or b" 408 " in received.split(b"\r\n", 1)[0], received[:200]
        assert time.monotonic() - started < 8
        for connection in slow:
            connection.close()
