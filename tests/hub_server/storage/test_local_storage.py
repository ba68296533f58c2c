"""The local folder backend: atomic content-addressed puts, safe keys, stale staging files swept."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from hub_server.errors import StorageError
from hub_server.storage import LocalStorage, blob_key, check_key, open_storage


def _staged(storage: LocalStorage, data: bytes) -> Path:
    path = storage.staging_dir() / "upload-test"
    path.write_bytes(data)
    return path


def test_put_open_exists_delete(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "blobs")
    key = blob_key(hashlib.sha256(b"hello").hexdigest())
    assert not storage.exists(key)
    source = _staged(storage, b"hello")
    storage.put(key, source)
    assert not source.exists()  # consumed
    assert storage.exists(key)
    with storage.open(key) as handle:
        assert handle.read() == b"hello"
    assert storage.locate(key) == tmp_path.resolve() / "blobs" / key
    storage.put(key, _staged(storage, b"hello"))  # existing key: a no-op that still consumes the source
    assert list(storage.staging_dir().iterdir()) == []
    storage.delete(key)
    assert not storage.exists(key)
    with pytest.raises(StorageError, match="missing"):
        storage.open(key)


def test_put_from_another_folder_copies_then_renames(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "blobs")
    elsewhere = tmp_path / "elsewhere.bin"
    elsewhere.write_bytes(b"data")
    storage.put("sha256/aa/bb/x", elsewhere)
    assert storage.open("sha256/aa/bb/x").read() == b"data" and not elsewhere.exists()


@pytest.mark.parametrize("key", ["../x", "a/../../x", "/etc/passwd", "A/b", "a//b", "", "a/.hidden"])
def test_unsafe_keys_are_refused(key: str) -> None:
    with pytest.raises(StorageError):
        check_key(key)


def test_blob_keys_need_a_sha256() -> None:
    with pytest.raises(StorageError):
        blob_key("../../etc")


def test_stale_staging_files_are_swept_at_start_young_ones_kept(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "blobs")
    old, young = storage.staging_dir() / "upload-old", storage.staging_dir() / "upload-young"
    old.write_bytes(b"x")
    young.write_bytes(b"y")
    past = time.time() - 3 * 24 * 3600
    os.utime(old, (past, past))
    LocalStorage(tmp_path / "blobs")
    assert not old.exists() and young.exists()


def test_open_storage_picks_the_backend_from_the_url(tmp_path: Path) -> None:
    assert isinstance(open_storage(str(tmp_path / "a")), LocalStorage)
    assert isinstance(open_storage(f"file://{tmp_path / 'b'}"), LocalStorage)
    with pytest.raises(StorageError, match="not supported"):
        open_storage("ftp://host/blobs")
