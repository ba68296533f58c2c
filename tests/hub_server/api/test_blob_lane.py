"""The blob lane answers plain cached downloads exactly as the files route does, and declines the rest."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from hub_server.app import HubApp
from hub_server.context import Hub
from hub_server.services.downloads import project_downloads
from hub_server.storage import LocalStorage, blob_key
from hub_server.testing.dists import make_wheel
from tests.hub_server.conftest import basic, bearer
from tests.hub_server.scale import overwrite_blob

JSON = "application/vnd.pypi.simple.v1+json"


@dataclass
class Answer:
    """What the lane sent, if it answered."""

    answered: bool
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


def lane(app: HubApp, url: str, method: str = "GET", headers: dict[str, str] | None = None) -> Answer:
    """Ask the lane alone (not the app behind it) to answer ``method url``."""
    messages: list[dict[str, object]] = []

    async def send(message: dict[str, object]) -> None:
        messages.append(message)

    scope = {"type": "http", "method": method, "path": url, "root_path": "", "query_string": b"",
             "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]}
    if not asyncio.run(app.blob_lane.answer(scope, send)):  # type: ignore[arg-type]
        assert not messages
        return Answer(False)
    start, body = messages
    raw = start["headers"]
    assert isinstance(raw, list)
    return Answer(True, int(start["status"]),  # type: ignore[call-overload]
                  {k.decode(): v.decode() for k, v in raw}, bytes(body["body"]))  # type: ignore[call-overload]


@pytest.fixture
def wheel(hub: Hub, make_user: Callable[[str], str], upload: Callable[..., httpx.Response], client: TestClient,
          tmp_path: Path) -> dict[str, str]:
    if not isinstance(hub.storage, LocalStorage):
        pytest.skip("n/a on S3: the lane serves blobs from a local folder only (S3 blobs always go to the route)")
    token = make_user("alice")
    path = make_wheel(tmp_path, "demo-env", "0.1.0")
    assert upload(token, path, "demo-env", "0.1.0").status_code == 200
    info = client.get("/simple/demo-env/", headers={"Accept": JSON}).json()["files"][0]
    return {"url": info["url"], "sha256": info["hashes"]["sha256"], "token": token, "filename": info["filename"]}


def test_the_lane_answers_what_the_route_answered(app: HubApp, client: TestClient, wheel: dict[str, str]) -> None:
    assert not lane(app, wheel["url"]).answered  # nothing cached yet: the route answers and fills the caches
    routed = client.get(wheel["url"])
    assert routed.headers["etag"] == f'"{wheel["sha256"]}"'
    assert hashlib.sha256(routed.content).hexdigest() == wheel["sha256"]
    fast = lane(app, wheel["url"])
    assert fast.answered and fast.status == 200 and fast.body == routed.content
    assert fast.headers == {k: v for k, v in routed.headers.items()}
    head = lane(app, wheel["url"], "HEAD")
    assert head.answered and head.body == b"" and head.headers["content-length"] == str(len(routed.content))
    metadata = client.get(wheel["url"] + ".metadata")
    assert lane(app, wheel["url"] + ".metadata").body == metadata.content
    assert lane(app, wheel["url"] + ".metadata").headers["etag"] != fast.headers["etag"]


@pytest.mark.parametrize("header", [{"Range": "bytes=0-9"}, {"If-None-Match": "*"}, {"Authorization": "Bearer x"}])
def test_the_lane_leaves_ranges_conditionals_and_credentials_to_the_route(
        app: HubApp, client: TestClient, wheel: dict[str, str], header: dict[str, str]) -> None:
    client.get(wheel["url"])
    assert lane(app, wheel["url"]).answered
    assert not lane(app, wheel["url"], headers=header).answered


def test_etags_answer_304_and_if_range_guards_ranges(client: TestClient, wheel: dict[str, str]) -> None:
    etag = client.get(wheel["url"]).headers["etag"]
    assert client.get(wheel["url"], headers={"If-None-Match": etag}).status_code == 304
    assert client.get(wheel["url"], headers={"If-None-Match": f'"other", W/{etag}'}).status_code == 304
    assert client.get(wheel["url"], headers={"If-None-Match": '"other"'}).status_code == 200
    assert client.get(wheel["url"], headers={"Range": "bytes=0-9", "If-Range": etag}).status_code == 206
    stale = client.get(wheel["url"], headers={"Range": "bytes=0-9", "If-Range": '"other"'})
    assert stale.status_code == 200 and hashlib.sha256(stale.content).hexdigest() == wheel["sha256"]


def test_lane_downloads_are_counted_once_each(app: HubApp, client: TestClient, wheel: dict[str, str]) -> None:
    client.get(wheel["url"])  # the route: counted
    for _ in range(3):
        assert lane(app, wheel["url"]).answered  # the lane: counted
    lane(app, wheel["url"], "HEAD")
    lane(app, wheel["url"] + ".metadata")
    client.get(wheel["url"], headers={"If-None-Match": "*"})  # 304: not a download
    app.state.downloads.flush()
    with app.state.hub.db.read() as session:
        assert project_downloads(session, "demo-env").total == 4


def test_deleted_and_private_files_leave_the_lane_at_once(app: HubApp, client: TestClient,
                                                          wheel: dict[str, str]) -> None:
    client.get(wheel["url"])
    assert lane(app, wheel["url"]).answered
    deleted = client.delete(f"/api/v1/projects/alice/demo-env/files/{wheel['filename']}",
                            headers=bearer(wheel["token"]))
    assert deleted.status_code in (200, 204), deleted.text
    assert not lane(app, wheel["url"]).answered
    assert client.get(wheel["url"]).status_code == 404


def test_a_blob_changed_on_disk_is_read_again_and_its_wrong_bytes_never_sent(
        app: HubApp, hub: Hub, client: TestClient, wheel: dict[str, str]) -> None:
    client.get(wheel["url"])
    overwrite_blob(hub.storage, blob_key(wheel["sha256"]), b"other bytes, a different size")
    assert not lane(app, wheel["url"]).answered
    again = client.get(wheel["url"])  # read again, hashed on the way into memory: not what its address says
    assert again.status_code == 503 and b"other bytes" not in again.content and "corrupt" in again.text


def test_large_blobs_stream_with_ranges_and_etags(hub: Hub, client: TestClient, wheel: dict[str, str]) -> None:
    hub.blobs.max_blob = 16  # every blob is "large": streamed from storage, never held in memory
    whole = client.get(wheel["url"])
    assert hashlib.sha256(whole.content).hexdigest() == wheel["sha256"]
    assert whole.headers["etag"] == f'"{wheel["sha256"]}"'
    part = client.get(wheel["url"], headers={"Range": "bytes=5-14"})
    assert part.status_code == 206 and part.content == whole.content[5:15]
    assert client.get(wheel["url"], headers={"If-None-Match": whole.headers["etag"]}).status_code == 304
    head = client.head(wheel["url"], headers=basic(wheel["token"]))
    assert head.status_code == 200 and head.headers["content-length"] == str(len(whole.content))
