"""Blob storage: the :class:`Storage` seam and :func:`open_storage` to pick a backend from a URL."""

from __future__ import annotations

from pathlib import Path

from hub_server.errors import StorageError
from hub_server.storage.base import Storage, blob_key, check_key
from hub_server.storage.local import LocalStorage


def open_storage(url: str) -> Storage:
    """A backend for ``url``: a folder path or ``file://`` URL (``s3://`` is planned, not yet here)."""
    if url.startswith("file://"):
        return LocalStorage(Path(url.removeprefix("file://")))
    if "://" in url:
        scheme = url.split("://", 1)[0]
        raise StorageError(f"storage scheme {scheme!r} is not supported yet; use a folder path or file:// URL")
    return LocalStorage(Path(url))


__all__ = ["LocalStorage", "Storage", "blob_key", "check_key", "open_storage"]
