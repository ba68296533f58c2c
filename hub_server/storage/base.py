"""The blob storage seam: content-addressed blobs by key, written atomically and durably.

Keys are relative, slash-separated, made of ``[a-z0-9._-]`` segments (the Hub uses
``sha256/ab/cd/<hex>``). A backend must make ``put`` all-or-nothing: after it returns the blob
is durable and complete; before, no reader can see a partial blob under the key.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from hub_server.errors import StorageError

BLOB_PREFIX = "sha256/"
_KEY = re.compile(r"[a-z0-9][a-z0-9._-]*(?:/[a-z0-9][a-z0-9._-]*)*")


def check_key(key: str) -> str:
    """Return ``key`` if it is a safe relative key (no ``..``, no absolute paths); raise otherwise."""
    if not _KEY.fullmatch(key) or ".." in key.split("/"):
        raise StorageError(f"invalid storage key {key!r}")
    return key


def blob_key(sha256: str) -> str:
    """The content-addressed key of a blob with this SHA-256 hex digest."""
    if not re.fullmatch(r"[0-9a-f]{64}", sha256):
        raise StorageError(f"invalid sha256 {sha256!r}")
    return f"sha256/{sha256[:2]}/{sha256[2:4]}/{sha256}"


def key_digest(key: str) -> str | None:
    """The sha256 a well-formed blob key names (``sha256/ab/cd/<hex>``), else None (not a content address)."""
    parts = key.removeprefix(BLOB_PREFIX).split("/") if key.startswith(BLOB_PREFIX) else []
    if len(parts) != 3 or not re.fullmatch(r"[0-9a-f]{64}", parts[2]) or parts[0] != parts[2][:2] \
            or parts[1] != parts[2][2:4]:
        return None
    return parts[2]


@dataclass(frozen=True)
class StoredBlob:
    """One blob found by :meth:`Storage.blobs`: its key, size, and when it was last stored (epoch seconds)."""

    key: str
    size: int
    stored_at: float


class Storage(ABC):
    """Where the Hub's blobs live (backends: ``LocalStorage``, a folder; ``S3Storage``, a bucket)."""

    @abstractmethod
    def staging_dir(self) -> Path:
        """A local folder for files being received; ``put`` is cheapest for files staged here."""

    @abstractmethod
    def put(self, key: str, source: Path) -> None:
        """Store the file at ``source`` under ``key`` atomically and durably; ``source`` is consumed.

        Putting a key that exists keeps its bytes (keys are content addresses) but renews its
        ``stored_at``, so garbage collection's grace period counts from the latest put: an upload
        that re-stores an old unreferenced blob is not collected before its rows commit.
        """

    @abstractmethod
    def replace(self, key: str, source: Path) -> None:
        """Store ``source`` under ``key`` atomically and durably, replacing bytes already there; consumed.

        Only for repairs: the caller has checked that ``source`` hashes to the key's content address
        and that the stored bytes do not (or are missing).
        """

    @abstractmethod
    def open(self, key: str) -> BinaryIO:
        """Open the blob for reading (seekable); raise :class:`BlobMissing` if it is missing."""

    @abstractmethod
    def exists(self, key: str) -> bool:
        """Whether a complete blob is stored under ``key``."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove the blob if present."""

    @abstractmethod
    def locate(self, key: str) -> Path | str | None:
        """How to serve the blob: a local ``Path``, a URL to redirect GETs to, or None to stream :meth:`open`."""

    @abstractmethod
    def blobs(self) -> Iterator[StoredBlob]:
        """Every content-addressed blob (keys under ``sha256/``), in no particular order."""

    @abstractmethod
    def stored_at(self, key: str) -> float | None:
        """When the blob was last stored (epoch seconds), or None if it is missing."""
