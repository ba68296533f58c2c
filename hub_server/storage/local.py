"""Blobs in a local folder: write to a staging file, fsync, rename into place, fsync the folder."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from hub_server.errors import BlobMissing, StorageError
from hub_server.storage.base import BLOB_PREFIX, Storage, StoredBlob, check_key
from hub_server.storage.staging import StagingArea

_STAGING = ".staging"


def fsync_dir(path: Path) -> None:
    """Make a rename or creation inside ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LocalStorage(Storage):
    """A folder of blobs; ``root/.staging`` holds files being received (same filesystem: renames are atomic).

    Each process stages in its own locked folder under it (``storage/staging.py``), and what dead
    processes left there is removed when a storage is opened.
    """

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._area = StagingArea(self.root / _STAGING)
        self._staging = self._area.path

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def staging_dir(self) -> Path:
        return self._staging

    def put(self, key: str, source: Path) -> None:
        dest = self._path(key)
        try:
            os.utime(dest)  # stored before: renew its age (see Storage.put) and keep its bytes
        except FileNotFoundError:
            pass  # new (or collected meanwhile): store it below
        else:
            source.unlink(missing_ok=True)
            return
        self._move_in(key, source, dest)

    def replace(self, key: str, source: Path) -> None:
        self._move_in(key, source, self._path(key))

    def _move_in(self, key: str, source: Path, dest: Path) -> None:
        """fsync ``source`` (copied into staging first if it is elsewhere), rename it onto ``dest``, fsync."""
        staged = source
        if source.parent.resolve() != self._staging:
            staged = self._staging / f"put-{uuid.uuid4().hex}"
            shutil.copyfile(source, staged)
            source.unlink(missing_ok=True)
        try:
            with open(staged, "rb+") as handle:
                os.fsync(handle.fileno())
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, dest)
            fsync_dir(dest.parent)
        except OSError as error:
            staged.unlink(missing_ok=True)
            raise StorageError(f"could not store blob {key}: {error}") from error

    def open(self, key: str) -> BinaryIO:
        try:
            return open(self._path(key), "rb")
        except FileNotFoundError:
            raise BlobMissing(f"blob {key} is missing") from None

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def locate(self, key: str) -> Path:
        return self._path(key)

    def blobs(self) -> Iterator[StoredBlob]:
        top = self.root / BLOB_PREFIX
        for folder, _dirs, names in os.walk(top):
            for name in names:
                path = Path(folder) / name
                try:
                    stat = path.stat()
                except FileNotFoundError:
                    continue  # deleted meanwhile
                yield StoredBlob(path.relative_to(self.root).as_posix(), stat.st_size, stat.st_mtime)

    def stored_at(self, key: str) -> float | None:
        try:
            return self._path(key).stat().st_mtime
        except FileNotFoundError:
            return None
