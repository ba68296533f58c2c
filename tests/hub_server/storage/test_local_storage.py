"""The local folder backend: atomic content-addressed puts, safe keys, staging left by dead processes swept."""

from __future__ import annotations

import fcntl
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hub_server.errors import StorageError
from hub_server.storage import LocalStorage, blob_key, check_key, open_storage, staging
from hub_server.storage.staging import StagingArea


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


@pytest.mark.parametrize("key", ["../x", "a/../../x", "/etc/passwd", "A/b", "a//b", "", "a/.hidden", "a/b\n"])
def test_unsafe_keys_are_refused(key: str) -> None:
    with pytest.raises(StorageError):
        check_key(key)


def test_blob_keys_need_a_sha256() -> None:
    with pytest.raises(StorageError):
        blob_key("../../etc")


def _killed_mid_upload(blobs: Path) -> Path:
    """Open the storage in a child process, stage a partial upload there, kill -9 it; the file it left."""
    script = (f"import os, sys, signal\nfrom pathlib import Path\nfrom hub_server.storage import LocalStorage\n"
              f"s = LocalStorage(Path({str(blobs)!r}))\n(s.staging_dir() / 'upload-partial').write_bytes(b'x' * 1000)\n"
              f"print(s.staging_dir(), flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n")
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                           check=False)
    assert child.returncode == -signal.SIGKILL, child.stderr
    return Path(child.stdout.strip()) / "upload-partial"


def test_staging_left_by_a_killed_process_is_swept_at_the_next_start_live_ones_kept(tmp_path: Path) -> None:
    live = LocalStorage(tmp_path / "blobs")  # another worker, receiving an upload right now
    in_flight = live.staging_dir() / "upload-in-flight"
    in_flight.write_bytes(b"y")
    leftover = _killed_mid_upload(tmp_path / "blobs")
    assert leftover.exists()  # minutes old, not a day: the old 24-hour sweep kept it
    restarted = LocalStorage(tmp_path / "blobs")
    assert not leftover.exists() and not leftover.parent.exists()
    assert in_flight.exists() and restarted.staging_dir() != live.staging_dir()


def test_loose_staging_files_of_older_versions_go_once_a_day_old(tmp_path: Path) -> None:
    root = tmp_path / "blobs" / ".staging"
    root.mkdir(parents=True)
    old, young = root / "upload-old", root / "upload-young"
    old.write_bytes(b"x")
    young.write_bytes(b"y")
    past = time.time() - 3 * 24 * 3600
    os.utime(old, (past, past))
    LocalStorage(tmp_path / "blobs")
    assert not old.exists() and young.exists()


def test_a_closed_staging_area_leaves_nothing(tmp_path: Path) -> None:
    area = StagingArea(tmp_path / "staging")
    (area.path / "upload-x").write_bytes(b"x")
    area.close()
    assert list((tmp_path / "staging").iterdir()) == []


def test_a_sweeper_taking_a_new_lock_before_its_owner_does_not_orphan_the_owners_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second worker's start-up sweep lands between the owner's create and its flock, and unlinks the file."""
    real_flock = staging.fcntl.flock
    raced: list[str] = []

    def flock_after_a_sweeper(fd: int, operation: int) -> None:
        if not operation & fcntl.LOCK_NB and not raced:  # the owner's blocking lock: a sweeper gets there first
            path = Path(os.readlink(f"/proc/self/fd/{fd}"))
            raced.append(path.name)
            assert staging._remove_dead(path) == 0 and not path.exists()
        real_flock(fd, operation)

    monkeypatch.setattr(staging.fcntl, "flock", flock_after_a_sweeper)
    root = tmp_path / "staging"
    area = StagingArea(root)
    monkeypatch.setattr(staging.fcntl, "flock", real_flock)
    lock = root / f"{area.path.name}{staging.LOCK_SUFFIX}"
    assert raced and raced[0] != lock.name  # the first name was lost to the sweeper; the area took another
    assert lock.exists() and area.path.is_dir()
    (area.path / "upload-in-flight").write_bytes(b"x")
    assert staging.sweep(root) == 0  # the next worker's sweep sees a live owner and keeps its upload
    assert (area.path / "upload-in-flight").exists()
    area.close()


def test_open_storage_picks_the_backend_from_the_url(tmp_path: Path) -> None:
    assert isinstance(open_storage(str(tmp_path / "a")), LocalStorage)
    assert isinstance(open_storage(f"file://{tmp_path / 'b'}"), LocalStorage)
    with pytest.raises(StorageError, match="not supported"):
        open_storage("ftp://host/blobs")
