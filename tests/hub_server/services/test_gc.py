"""Blob garbage collection: unreferenced old blobs go; referenced, young and re-stored ones stay.

Runs on the folder storage by default and on S3 on the scale path (``hub`` follows the
environment). Ages are moved by collecting "in the future" (``now=``) rather than by waiting.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from hub_server.context import Hub
from hub_server.db import File
from hub_server.services import accounts
from hub_server.services.gc import collect_garbage
from hub_server.storage import LocalStorage, blob_key
from hub_server.storage.base import StoredBlob
from hub_server.testing.dists import make_wheel
from tests.hub_server.conftest import bearer

HOUR = dt.timedelta(hours=1)
JSON = "application/vnd.pypi.simple.v1+json"


def _store(hub: Hub, data: bytes) -> str:
    key = blob_key(hashlib.sha256(data).hexdigest())
    source = hub.storage.staging_dir() / f"test-{hashlib.sha256(data).hexdigest()[:8]}"
    source.write_bytes(data)
    hub.storage.put(key, source)
    return key


@pytest.fixture
def published(hub: Hub, make_user: Callable[[str], str], upload: Callable[..., httpx.Response],
              client: TestClient, tmp_path: Path) -> list[str]:
    """One uploaded wheel; returns the keys its upload stored (the wheel's blob and its METADATA's)."""
    token = make_user("alice")
    assert upload(token, make_wheel(tmp_path, "demo-env", "0.1.0"), "demo-env", "0.1.0").status_code == 200
    info = client.get("/simple/demo-env/", headers={"Accept": JSON}).json()["files"][0]
    return [blob_key(info["hashes"]["sha256"]), blob_key(info["core-metadata"]["sha256"])]


def _publisher_token(hub: Hub, name: str) -> str:
    """Another publish token for an existing user."""
    with hub.db.write() as session:
        return accounts.issue_token(session, accounts.get_owner(session, name), accounts.PUBLISH, expires_in=HOUR)


def _keys(hub: Hub) -> set[str]:
    return {blob.key for blob in hub.storage.blobs()}


def test_only_old_unreferenced_blobs_are_deleted(hub: Hub, client: TestClient, published: list[str]) -> None:
    data = b"left by an upload that failed after storing its blob"
    orphan = _store(hub, data)
    assert _keys(hub) == {*published, orphan}
    assert collect_garbage(hub.db, hub.storage, HOUR).deleted == []  # everything is younger than an hour
    later = time.time() + 2 * 3600
    dry = collect_garbage(hub.db, hub.storage, HOUR, dry_run=True, now=later)
    assert [b.key for b in dry.deleted] == [orphan] and hub.storage.exists(orphan)
    report = collect_garbage(hub.db, hub.storage, HOUR, now=later)
    assert [b.key for b in report.deleted] == [orphan] and report.freed_bytes == len(data)
    assert (report.examined, report.referenced, report.too_young) == (3, 2, 0)
    assert _keys(hub) == set(published) and not hub.storage.exists(orphan)
    for url in (f["url"] for f in client.get("/simple/demo-env/", headers={"Accept": JSON}).json()["files"]):
        assert client.get(url).status_code == 200 and client.get(url + ".metadata").status_code == 200


def test_a_blob_re_stored_after_the_listing_is_kept(hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    orphan = _store(hub, b"an orphan an upload is about to reuse")
    stale = [dataclasses.replace(b, stored_at=0.0) for b in hub.storage.blobs()]

    def listing() -> Iterator[StoredBlob]:  # what a listing taken before the upload's put would say
        return iter(stale)

    monkeypatch.setattr(hub.storage, "blobs", listing)
    report = collect_garbage(hub.db, hub.storage, HOUR)  # the blob's real age is checked again: young
    assert report.deleted == [] and report.too_young == 1 and hub.storage.exists(orphan)


def test_putting_a_stored_blob_renews_its_age(hub: Hub) -> None:
    key = _store(hub, b"stored twice")
    if isinstance(hub.storage, LocalStorage):
        path = hub.storage.locate(key)
        old = time.time() - 10 * 3600
        os.utime(path, (old, old))
    else:
        time.sleep(1.1)  # S3's LastModified has one-second resolution
    before = hub.storage.stored_at(key)
    assert before is not None
    _store(hub, b"stored twice")
    after = hub.storage.stored_at(key)
    assert after is not None and after > before
    assert collect_garbage(hub.db, hub.storage, dt.timedelta(minutes=1)).deleted == []


def test_keys_that_are_not_content_addresses_are_left_alone(hub: Hub, tmp_path: Path) -> None:
    data = b"not where its sha256 says"
    key = f"sha256/00/00/{hashlib.sha256(data).hexdigest()}"  # a well-formed key in the wrong folder
    source = hub.storage.staging_dir() / "misplaced"
    source.write_bytes(data)
    hub.storage.put(key, source)
    report = collect_garbage(hub.db, hub.storage, HOUR, now=time.time() + 2 * 3600)
    assert report.deleted == [] and report.ignored == 1 and hub.storage.exists(key)


def test_a_deleted_files_blobs_go_once_it_has_been_deleted_longer_than_the_grace(
        hub: Hub, client: TestClient, published: list[str], upload: Callable[..., httpx.Response],
        tmp_path: Path) -> None:
    wheel = client.get("/simple/demo-env/", headers={"Accept": JSON}).json()["files"][0]
    token = _publisher_token(hub, "alice")
    gone = client.delete(f"/api/v1/projects/alice/demo-env/files/{wheel['filename']}", headers=bearer(token))
    assert gone.status_code == 200, gone.text
    later = time.time() + 2 * 3600
    assert collect_garbage(hub.db, hub.storage, HOUR, now=time.time()).deleted == []  # deleted just now
    kept = collect_garbage(hub.db, hub.storage, HOUR, now=later, keep_deleted=True)
    assert kept.deleted == [] and kept.referenced == 2
    report = collect_garbage(hub.db, hub.storage, HOUR, now=later)
    assert sorted(b.key for b in report.deleted) == sorted(published) and _keys(hub) == set()
    # the tombstone still keeps the filename: the same name cannot come back with other bytes
    again = upload(token, make_wheel(tmp_path / "again", "demo-env", "0.1.0", body="VALUE = 2\n"), "demo-env", "0.1.0")
    assert again.status_code == 400 and "previously used and deleted" in again.text


def test_bytes_a_live_file_shares_with_a_deleted_one_stay(hub: Hub, client: TestClient,
                                                          published: list[str]) -> None:
    wheel = client.get("/simple/demo-env/", headers={"Accept": JSON}).json()["files"][0]
    with hub.db.write() as session:  # another file with the same bytes (content addressing shares the blob)
        original = session.scalar(select(File).where(File.filename == wheel["filename"]))
        assert original is not None
        twin = File(**{c: getattr(original, c) for c in ("release_id", "packagetype", "size", "sha256",
                                                         "blake2_256", "metadata_sha256", "uploaded_by_id")},
                    filename="twin-" + original.filename)
        session.add(twin)
    gone = client.delete(f"/api/v1/projects/alice/demo-env/files/{wheel['filename']}",
                         headers=bearer(_publisher_token(hub, "alice")))
    assert gone.status_code == 200, gone.text
    report = collect_garbage(hub.db, hub.storage, HOUR, now=time.time() + 2 * 3600)
    assert report.deleted == [] and report.referenced == 2 and _keys(hub) == set(published)
