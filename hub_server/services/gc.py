"""Garbage collection of blobs: delete stored blobs that no file row references.

An upload makes its blobs durable *before* its rows commit (so a row never points at a missing
blob); a crash or a refused upload in between leaves a blob nothing references. Collecting them
must not race an upload that is between those two steps, so only blobs stored longer ago than a
grace period (default a day; an upload takes seconds) are candidates, and each candidate's age is
read again just before it is deleted. ``Storage.put`` renews the age of a blob it finds already
stored, so an upload re-using an old orphan's bytes protects it too.

A blob is referenced by a file's own ``sha256`` or its ``metadata_sha256`` (PEP 658). A deleted file's
row stays (its tombstone keeps the filename taken) but nothing serves its bytes, so it stops
protecting its blobs once it has been deleted for longer than the grace period (unless
``keep_deleted``); a live file, or a newer upload of the same bytes, keeps them.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from sqlalchemy import select, true, union
from sqlalchemy.orm import Session

from hub_server.db.database import Database
from hub_server.db.models import File
from hub_server.storage import Storage
from hub_server.storage.base import StoredBlob, key_digest

DEFAULT_GRACE = dt.timedelta(hours=24)
_BATCH = 500


@dataclass
class GcReport:
    """What a collection found and did."""

    examined: int = 0
    ignored: int = 0  # keys that are not content addresses (``sha256/ab/cd/<hex>``): never touched
    referenced: int = 0
    too_young: int = 0
    deleted: list[StoredBlob] = field(default_factory=list)

    @property
    def freed_bytes(self) -> int:
        return sum(blob.size for blob in self.deleted)


def _batches(blobs: Iterable[StoredBlob], size: int) -> Iterator[list[StoredBlob]]:
    batch: list[StoredBlob] = []
    for blob in blobs:
        batch.append(blob)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _referenced(session: Session, digests: list[str], deleted_before: dt.datetime | None) -> set[str]:
    """The digests some file references; files deleted before ``deleted_before`` do not count."""
    counts = (File.deleted_at.is_(None) | (File.deleted_at >= deleted_before)) if deleted_before else true()
    own = select(File.sha256.label("digest")).where(File.sha256.in_(digests), counts)
    metadata = select(File.metadata_sha256.label("digest")).where(File.metadata_sha256.in_(digests), counts)
    return set(session.scalars(union(own, metadata)))


def collect_garbage(db: Database, storage: Storage, grace: dt.timedelta = DEFAULT_GRACE,
                    dry_run: bool = False, now: float | None = None, keep_deleted: bool = False) -> GcReport:
    """Delete (or, with ``dry_run``, only list) unreferenced blobs stored longer ago than ``grace``.

    Files deleted longer ago than ``grace`` no longer reference their blobs, unless ``keep_deleted``.
    """
    cutoff = (now if now is not None else time.time()) - grace.total_seconds()
    deleted_before = None if keep_deleted else dt.datetime.fromtimestamp(cutoff, dt.timezone.utc)
    report = GcReport()
    for batch in _batches(storage.blobs(), _BATCH):
        report.examined += len(batch)
        named = [(blob, digest) for blob in batch if (digest := key_digest(blob.key)) is not None]
        report.ignored += len(batch) - len(named)
        old = [(blob, digest) for blob, digest in named if blob.stored_at < cutoff]
        report.too_young += len(named) - len(old)
        with db.read() as session:
            referenced = _referenced(session, [digest for _blob, digest in old], deleted_before) if old else set()
        report.referenced += sum(1 for _blob, digest in old if digest in referenced)
        for blob, digest in old:
            if digest in referenced:
                continue
            stored_at = storage.stored_at(blob.key)  # again: an upload may have re-stored it since the listing
            if stored_at is None:
                continue
            if stored_at >= cutoff:
                report.too_young += 1
                continue
            if not dry_run:
                storage.delete(blob.key)
            report.deleted.append(blob)
    return report
