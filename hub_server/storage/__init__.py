"""Blob storage: the :class:`Storage` seam and :func:`open_storage` to pick a backend from a URL."""

from __future__ import annotations

from pathlib import Path

from hub_server.errors import StorageError
from hub_server.storage.base import Storage, blob_key, check_key
from hub_server.storage.local import LocalStorage


def open_storage(url: str, staging: Path | None = None) -> Storage:
    """A backend for ``url``: a folder path, a ``file://`` URL, or ``s3://BUCKET[/PREFIX][?options]``.

    ``staging`` is the local folder where backends that are not a local folder receive uploads
    (default: ``vf-hub-staging`` in the system's temporary folder).
    """
    if url.startswith("s3://"):
        from hub_server.storage.s3 import S3Storage, default_staging  # imports boto3: only when used

        return S3Storage.from_url(url, staging or default_staging())
    if url.startswith("file://"):
        return LocalStorage(Path(url.removeprefix("file://")))
    if "://" in url:
        scheme = url.split("://", 1)[0]
        raise StorageError(f"storage scheme {scheme!r} is not supported; use a folder, file:// or s3:// URL")
    return LocalStorage(Path(url))


__all__ = ["LocalStorage", "Storage", "blob_key", "check_key", "open_storage"]
