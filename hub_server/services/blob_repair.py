"""Repairing a damaged or missing blob from an upload of the very same bytes.

``vf-hub admin verify`` quarantines blobs whose stored bytes no longer hash to their content address
(``services/verify.py``). The upload path is where good bytes arrive: an upload whose file (or wheel
METADATA) has a digest that is quarantined, missing, or whose stored copy re-hashes wrong, replaces
the stored copy with the uploaded one (``Storage.replace``, atomic) and lifts the mark. The uploaded
bytes were hashed as they streamed in, so they are known to be right.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from sqlalchemy import delete, select

from hub_server.db.database import Database
from hub_server.db.records import DamagedBlob
from hub_server.errors import BlobMissing
from hub_server.storage import Storage, blob_key

log = logging.getLogger(__name__)
_CHUNK = 1024 * 1024


def stored_hash(storage: Storage, digest: str) -> str | None:
    """The sha256 of the bytes stored under ``digest``'s key; None when nothing is stored there."""
    hasher = hashlib.sha256()
    try:
        with storage.open(blob_key(digest)) as handle:
            while chunk := handle.read(_CHUNK):
                hasher.update(chunk)
    except BlobMissing:
        return None
    return hasher.hexdigest()


def quarantined(db: Database, digests: list[str]) -> set[str]:
    """Which of ``digests`` are marked damaged."""
    with db.read() as session:
        return set(session.scalars(select(DamagedBlob.sha256).where(DamagedBlob.sha256.in_(digests))))


def repair(db: Database, storage: Storage, digest: str, source: Path) -> bool:
    """Make the stored copy of ``digest`` whole from ``source`` (consumed), which hashes to ``digest``.

    The stored copy is re-hashed; only a missing or wrong one is replaced. Any quarantine mark is
    lifted either way. Returns whether bytes were replaced.
    """
    replaced = stored_hash(storage, digest) != digest
    if replaced:
        storage.replace(blob_key(digest), source)
        log.warning("blob %s was missing or corrupt; replaced by the bytes of an identical upload", digest)
    else:
        source.unlink(missing_ok=True)
    with db.write() as session:  # a write in any case: this worker's read cache drops the old lookup
        session.execute(delete(DamagedBlob).where(DamagedBlob.sha256 == digest))
    return replaced


__all__ = ["quarantined", "repair", "stored_hash"]
