"""The S3 backend against a real S3-compatible server on 127.0.0.1 (moto's server, or the scale path's).

Covers the storage contract (atomic put that never replaces, seekable reads, exists, delete), the
URL grammar, and serving files through the app both ways: streamed with Range, and redirected to a
presigned URL.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hub_server import Settings, create_app
from hub_server.errors import StorageError
from hub_server.services import accounts
from hub_server.storage import blob_key, open_storage
from hub_server.storage.s3 import S3Storage
from hub_server.testing.dists import make_wheel, upload_form
from tests.hub_server.clients import installed, new_venv, pip_install
from tests.hub_server.conftest import LiveServer, basic


@pytest.fixture
def storage(s3_url: str, tmp_path: Path) -> S3Storage:
    built = open_storage(s3_url, staging=tmp_path / "staging")
    assert isinstance(built, S3Storage)
    return built


def _staged(storage: S3Storage, data: bytes, name: str = "upload-test") -> Path:
    path = storage.staging_dir() / name
    path.write_bytes(data)
    return path


def test_put_open_exists_delete(storage: S3Storage) -> None:
    data = bytes(range(256)) * 1000
    key = blob_key(hashlib.sha256(data).hexdigest())
    assert not storage.exists(key)
    source = _staged(storage, data)
    storage.put(key, source)
    assert not source.exists()  # consumed
    assert storage.exists(key)
    listed = storage.client.list_objects_v2(Bucket=storage.bucket, Prefix=storage.prefix)["Contents"]
    assert [o["Key"] for o in listed] == [storage.prefix + key]  # under the URL's prefix, no temporary keys
    with storage.open(key) as handle:
        assert handle.read() == data
    storage.delete(key)
    assert not storage.exists(key)
    with pytest.raises(StorageError, match="missing"):
        storage.open(key)


def test_a_stored_blob_is_never_replaced(storage: S3Storage) -> None:
    storage.put("sha256/aa/bb/x", _staged(storage, b"first"))
    second = _staged(storage, b"other bytes")
    storage.put("sha256/aa/bb/x", second)  # a no-op (If-None-Match), that still consumes the source
    assert not second.exists() and list(storage.staging_dir().iterdir()) == []
    assert storage.open("sha256/aa/bb/x").read() == b"first"


def test_reads_seek_with_ranged_gets(storage: S3Storage) -> None:
    data = hashlib.sha256(b"seed").digest() * 40_000  # 1.28 MB: more than one buffer
    storage.put("sha256/cc/dd/big", _staged(storage, data))
    with storage.open("sha256/cc/dd/big") as handle:
        assert handle.seek(0, io.SEEK_END) == len(data)
        handle.seek(1_000_000)
        assert handle.read(10) == data[1_000_000:1_000_010]
        handle.seek(5)
        assert handle.read(3) == data[5:8]
        assert handle.read() == data[8:]


def test_storing_into_a_missing_bucket_fails_cleanly(s3_base_url: str, tmp_path: Path) -> None:
    endpoint = s3_base_url.split("?", 1)[1]
    storage = open_storage(f"s3://no-such-bucket-here?{endpoint}", staging=tmp_path)
    source = tmp_path / "upload-x"
    source.write_bytes(b"data")
    with pytest.raises(StorageError, match="could not store"):
        storage.put("sha256/aa/bb/x", source)
    assert not source.exists()


@pytest.mark.parametrize(("url", "message"), [
    ("s3:///prefix", "expected s3://BUCKET"),
    ("s3://bucket?colour=blue", "unknown S3 storage option"),
    ("s3://bucket?presign=0", "positive number of seconds"),
    ("s3://bucket?presign=soon", "positive number of seconds"),
    ("s3://bucket/../etc", "invalid storage key"),
])
def test_bad_urls_are_refused(url: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(StorageError, match=message):
        open_storage(url, staging=tmp_path)


def test_url_options_are_read(tmp_path: Path) -> None:
    storage = open_storage("s3://bucket/a/b?endpoint_url=http://127.0.0.1:9&region=eu-west-1&presign=60",
                           staging=tmp_path / "s")
    assert isinstance(storage, S3Storage)
    assert (storage.bucket, storage.prefix, storage.presign_seconds) == ("bucket", "a/b/", 60)
    assert storage.client.meta.endpoint_url == "http://127.0.0.1:9"
    assert storage.client.meta.region_name == "eu-west-1"
    assert storage.staging_dir().parent == tmp_path / "s" and storage.staging_dir().is_dir()


# -- serving through the app -------------------------------------------------------------------
@pytest.fixture
def published(s3_url: str, tmp_path: Path) -> Iterator[tuple[FastAPI, str, bytes]]:
    """An app on S3 (streaming mode) with one wheel published; yields (app, the file's URL path, its bytes)."""
    app = create_app(Settings(data_dir=tmp_path / "hub", storage_url=s3_url))
    with app.state.hub.db.write() as session:
        _, token = accounts.create_user(session, "alice", dt.timedelta(days=1))
    wheel = make_wheel(tmp_path / "d", "s3-env", "0.1.0")
    with TestClient(app) as client, open(wheel, "rb") as handle:
        response = client.post("/legacy/", data=upload_form(wheel, "s3-env", "0.1.0"), headers=basic(token),
                               files={"content": (wheel.name, handle)})
        assert response.status_code == 200, response.text
    yield app, f"/files/{hashlib.sha256(wheel.read_bytes()).hexdigest()}/{wheel.name}", wheel.read_bytes()
    app.state.hub.db.dispose()


def test_files_are_streamed_with_range_support(published: tuple[FastAPI, str, bytes]) -> None:
    app, path, data = published
    with TestClient(app) as client:
        whole = client.get(path)
        assert whole.status_code == 200 and whole.content == data
        assert whole.headers["accept-ranges"] == "bytes" and "immutable" in whole.headers["cache-control"]
        head = client.head(path)
        assert head.status_code == 200 and int(head.headers["content-length"]) == len(data) and not head.content
        part = client.get(path, headers={"Range": "bytes=10-109"})
        assert part.status_code == 206 and part.content == data[10:110]
        assert part.headers["content-range"] == f"bytes 10-109/{len(data)}"
        assert client.get(path, headers={"Range": "bytes=-7"}).content == data[-7:]
        past = client.get(path, headers={"Range": f"bytes={len(data)}-"})
        assert past.status_code == 416 and past.headers["content-range"] == f"bytes */{len(data)}"
        assert client.get(path + ".metadata").text.startswith("Metadata-Version")


def _presigned_app(published: tuple[FastAPI, str, bytes]) -> FastAPI:
    """A second app on the same database and bucket, handing out presigned URLs."""
    settings: Settings = published[0].state.hub.settings
    url = settings.resolved_storage_url()
    return create_app(settings.model_copy(update={"storage_url": f"{url}{'&' if '?' in url else '?'}presign=60"}))


def test_presigned_mode_redirects_gets_and_answers_heads(published: tuple[FastAPI, str, bytes]) -> None:
    _, path, data = published
    app = _presigned_app(published)
    with TestClient(app, follow_redirects=False) as client:
        redirect = client.get(path)
        assert redirect.status_code == 307 and redirect.headers["cache-control"] == "private, no-store"
        head = client.head(path)  # a presigned URL is signed for GET only, so HEAD is answered here
        assert head.status_code == 200 and int(head.headers["content-length"]) == len(data)
    target = redirect.headers["location"]
    assert httpx.get(target).content == data
    ranged = httpx.get(target, headers={"Range": "bytes=0-99"})
    assert ranged.status_code == 206 and ranged.content == data[:100]
    app.state.hub.db.dispose()


@pytest.mark.slow
def test_pip_installs_through_a_presigned_redirect(published: tuple[FastAPI, str, bytes], tmp_path: Path) -> None:
    app = _presigned_app(published)
    with LiveServer(app) as url:
        python = new_venv(tmp_path / "v")
        pip_install(python, "--index-url", f"{url}/simple/", "s3-env==0.1.0")  # pip checks the sha256
    assert installed(python, "s3-env") == "0.1.0"
    app.state.hub.db.dispose()
