"""``verify_blobs`` and what serving does with a damaged blob, on the folder and on a real S3-compatible server.

A stored wheel's bytes are changed behind the Hub's back (``overwrite_blob``), or its blob is deleted;
before the fix the first was served as genuine (200, the original sha256 as ETag, immutable) and the
second was a 500.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select

from hub_server import Settings, create_app
from hub_server.context import Hub
from hub_server.db import DamagedBlob
from hub_server.services import accounts
from hub_server.services.blob_repair import stored_hash
from hub_server.services.verify import CORRUPT, MISSING, verify_blobs
from hub_server.storage import blob_key
from hub_server.testing.dists import make_wheel, upload_form
from tests.hub_server.conftest import basic
from tests.hub_server.scale import overwrite_blob

JSON = "application/vnd.pypi.simple.v1+json"
DAMAGE = b"PK\x03\x04 not the wheel that was uploaded"


@pytest.fixture(params=["folder", "s3"])
def backend_app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FastAPI]:
    """A Hub on the blob folder or on the S3 test server (each test runs on both)."""
    storage_url = request.getfixturevalue("s3_url") if request.param == "s3" else None
    app = create_app(Settings(data_dir=tmp_path / "hub", storage_url=storage_url))
    app.state.hub.blobs.max_blob = 16  # stream every blob: the path that cannot hash before it sends
    yield app
    app.state.hub.db.dispose()


@pytest.fixture
def published(backend_app: FastAPI, tmp_path: Path) -> tuple[TestClient, Path, dict[str, str], str]:
    """A client, the uploaded wheel, its JSON simple entry and its owner's token."""
    hub: Hub = backend_app.state.hub
    with hub.db.write() as session:
        _, token = accounts.create_user(session, "alice", None)
    client = TestClient(backend_app)
    wheel = make_wheel(tmp_path, "demo-env", "0.1.0")
    assert _upload(client, token, wheel).status_code == 200
    entry = client.get("/simple/demo-env/", headers={"Accept": JSON}).json()["files"][0]
    return client, wheel, entry, token


def _upload(client: TestClient, token: str, wheel: Path) -> httpx.Response:
    return client.post("/legacy/", data=upload_form(wheel, "demo-env", "0.1.0"),
                       files={"content": (wheel.name, wheel.read_bytes())}, headers=basic(token))


def _marks(hub: Hub) -> dict[str, str]:
    with hub.db.read() as session:
        return {row.sha256: row.problem for row in session.scalars(select(DamagedBlob))}


def test_a_corrupt_blob_is_quarantined_never_served_and_repaired_by_an_identical_upload(
        backend_app: FastAPI, published: tuple[TestClient, Path, dict[str, str], str],
        caplog: pytest.LogCaptureFixture) -> None:
    hub: Hub = backend_app.state.hub
    client, wheel, entry, token = published
    sha = entry["hashes"]["sha256"]
    overwrite_blob(hub.storage, blob_key(sha), DAMAGE)
    report = verify_blobs(hub.db, hub.storage)
    assert [(d.sha256, d.problem, d.found_sha256) for d in report.damaged] == [
        (sha, CORRUPT, hashlib.sha256(DAMAGE).hexdigest())]
    assert report.intact == 1 and _marks(hub) == {sha: CORRUPT}  # the METADATA blob is fine
    assert stored_hash(hub.storage, sha) == hashlib.sha256(DAMAGE).hexdigest()  # marked, never deleted
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="hub_server"):
        for method in ("GET", "HEAD"):
            answer = client.request(method, entry["url"])
            assert answer.status_code == 503 and DAMAGE not in answer.content
            assert "immutable" not in answer.headers.get("cache-control", "")
    served = [r for r in caplog.records if r.name == "hub_server.api.files"]
    assert [(r.levelno, sha in r.getMessage()) for r in served] == [(logging.ERROR, True)] * 2
    assert client.get(entry["url"] + ".metadata").status_code == 200  # its intact sibling still serves

    again = _upload(client, token, wheel)
    assert again.status_code == 200 and "damaged stored copy was replaced" in again.text
    assert client.get(entry["url"]).content == wheel.read_bytes() and _marks(hub) == {}
    assert "nothing changed" in _upload(client, token, wheel).text  # whole now: a plain no-op


def test_an_identical_upload_repairs_damage_verify_has_not_seen_yet(
        backend_app: FastAPI, published: tuple[TestClient, Path, dict[str, str], str]) -> None:
    hub: Hub = backend_app.state.hub
    client, wheel, entry, token = published
    overwrite_blob(hub.storage, blob_key(entry["hashes"]["sha256"]), DAMAGE)
    assert "damaged stored copy was replaced" in _upload(client, token, wheel).text  # was "nothing changed"
    assert client.get(entry["url"]).content == wheel.read_bytes()


def test_a_missing_blob_is_a_503_with_a_log_line_then_quarantined_and_repaired(
        backend_app: FastAPI, published: tuple[TestClient, Path, dict[str, str], str],
        caplog: pytest.LogCaptureFixture) -> None:
    hub: Hub = backend_app.state.hub
    client, wheel, entry, token = published
    metadata_sha = entry["core-metadata"]["sha256"]
    hub.storage.delete(blob_key(metadata_sha))
    with caplog.at_level(logging.ERROR, logger="hub_server"):
        answer = client.get(entry["url"] + ".metadata")  # was a 500
    assert answer.status_code == 503 and "missing from storage" in answer.text
    assert any(metadata_sha in r.getMessage() and "missing" in r.getMessage() for r in caplog.records)
    report = verify_blobs(hub.db, hub.storage)
    assert [(d.sha256, d.problem) for d in report.damaged] == [(metadata_sha, MISSING)]
    assert _marks(hub) == {metadata_sha: MISSING}
    assert "damaged stored copy was replaced" in _upload(client, token, wheel).text
    assert client.get(entry["url"] + ".metadata").status_code == 200 and _marks(hub) == {}


def test_a_blob_restored_by_hand_is_served_again_after_the_next_verify_and_dry_runs_mark_nothing(
        backend_app: FastAPI, published: tuple[TestClient, Path, dict[str, str], str]) -> None:
    hub: Hub = backend_app.state.hub
    client, wheel, entry, _token = published
    sha = entry["hashes"]["sha256"]
    overwrite_blob(hub.storage, blob_key(sha), DAMAGE)
    assert not verify_blobs(hub.db, hub.storage, dry_run=True).clean and _marks(hub) == {}
    verify_blobs(hub.db, hub.storage)
    overwrite_blob(hub.storage, blob_key(sha), wheel.read_bytes())  # e.g. from a backup
    report = verify_blobs(hub.db, hub.storage)
    assert report.clean and report.restored == [sha] and _marks(hub) == {}
    assert client.get(entry["url"]).content == wheel.read_bytes()


def test_keys_that_are_not_content_addresses_are_not_checked(backend_app: FastAPI,
                                                            make_file: Callable[[Hub, str], None]) -> None:
    hub: Hub = backend_app.state.hub
    make_file(hub, "sha256/zz/zz/not-a-digest")
    report = verify_blobs(hub.db, hub.storage)
    assert (report.examined, report.ignored, report.clean) == (0, 1, True)


@pytest.fixture
def make_file() -> Callable[[Hub, str], None]:
    """Store a few bytes under any key."""

    def make(hub: Hub, key: str) -> None:
        source = hub.storage.staging_dir() / "odd"
        source.write_bytes(b"odd")
        hub.storage.put(key, source)

    return make
