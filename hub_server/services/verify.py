"""Verifying stored blobs: re-hash every one, and quarantine those whose bytes are not what their key says.

Blobs are content-addressed (``sha256/ab/cd/<hex>``), so each one carries the hash its bytes must
have. Disks, buckets and people can still change bytes behind the Hub's back; nothing in serving
re-hashes a large file before sending it. :func:`verify_blobs` reads every stored blob through the
storage seam (the folder or S3 alike), and records in ``damaged_blobs``:

* **corrupt**: a blob whose bytes hash to something else (the hash found is kept);
* **missing**: a digest a live file (or its PEP 658 metadata) names, with no blob stored under it.

A recorded blob is served to nobody (``files`` answers 503 and logs it) until it is whole again: an
identical re-upload of the file replaces the bytes (``services/publish.py``), or a later verify finds
them restored (e.g. from a backup) and lifts the mark. Nothing here deletes or moves bytes: the
damaged copy stays where it is for whoever investigates.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field

from sqlalchemy import delete, select, union
from sqlalchemy.orm import Session

from hub_server.db.database import Database
from hub_server.db.models import File, utcnow
from hub_server.db.records import DamagedBlob
from hub_server.errors import BlobMissing
from hub_server.storage import Storage, blob_key
from hub_server.storage.base import key_digest

log = logging.getLogger(__name__)

CORRUPT = "corrupt"
MISSING = "missing"
_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class Damage:
    """One blob found damaged: its content address, what is wrong, and (corrupt) what its bytes hash to."""

    sha256: str
    problem: str
    found_sha256: str | None = None


@dataclass
class VerifyReport:
    """What a verification read and found."""

    examined: int = 0  # blobs re-hashed
    intact: int = 0
    ignored: int = 0  # keys that are not content addresses: not checked
    damaged: list[Damage] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)  # marked before, whole now: the mark was lifted

    @property
    def clean(self) -> bool:
        return not self.damaged


def _hash(storage: Storage, key: str) -> str | None:
    """The sha256 of the blob's bytes, or None if it vanished meanwhile (collected, say)."""
    digest = hashlib.sha256()
    try:
        with storage.open(key) as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    except BlobMissing:
        return None
    return digest.hexdigest()


def _referenced(session: Session) -> set[str]:
    """Every digest a live file serves: its own bytes and its PEP 658 metadata."""
    own = select(File.sha256.label("digest")).where(File.deleted_at.is_(None))
    metadata = select(File.metadata_sha256.label("digest")).where(
        File.deleted_at.is_(None), File.metadata_sha256.is_not(None))
    return set(session.scalars(union(own, metadata)))


def _rehash(storage: Storage, report: VerifyReport) -> Iterator[tuple[str, str | None]]:
    """``(digest, hash of its bytes)`` for every stored content-addressed blob (None: gone meanwhile)."""
    for blob in storage.blobs():
        digest = key_digest(blob.key)
        if digest is None:
            report.ignored += 1
            continue
        report.examined += 1
        yield digest, _hash(storage, blob.key)


def _record(db: Database, damage: Damage) -> None:
    with db.write() as session:
        row = session.get(DamagedBlob, damage.sha256)
        if row is None:
            session.add(DamagedBlob(sha256=damage.sha256, problem=damage.problem, found_sha256=damage.found_sha256,
                                    detected_at=utcnow()))
        else:
            row.problem, row.found_sha256 = damage.problem, damage.found_sha256


def _lift(db: Database, digests: list[str]) -> None:
    if digests:
        with db.write() as session:
            session.execute(delete(DamagedBlob).where(DamagedBlob.sha256.in_(digests)))


def verify_blobs(db: Database, storage: Storage, dry_run: bool = False) -> VerifyReport:
    """Re-hash every stored blob and check every live file has its blobs; record damage unless ``dry_run``."""
    report = VerifyReport()
    with db.read() as session:
        marked = set(session.scalars(select(DamagedBlob.sha256)))
    whole: set[str] = set()
    for digest, actual in _rehash(storage, report):
        if actual is None:
            continue  # deleted while we listed: judged with the missing ones below
        if actual == digest:
            report.intact += 1
            whole.add(digest)
            continue
        damage = Damage(digest, CORRUPT, actual)
        log.error("blob %s is corrupt: its bytes hash to %s; quarantined", digest, actual)
        report.damaged.append(damage)
        if not dry_run:
            _record(db, damage)
    with db.read() as session:
        referenced = _referenced(session)
    seen = whole | {d.sha256 for d in report.damaged}
    for digest in sorted(referenced - seen):
        if storage.exists(blob_key(digest)):
            continue  # stored after the listing (an upload or a repair in flight): the next run checks it
        damage = Damage(digest, MISSING)
        log.error("blob %s is missing from storage, but a live file serves it; quarantined", digest)
        report.damaged.append(damage)
        if not dry_run:
            _record(db, damage)
    report.restored = sorted(marked & whole)
    if not dry_run:
        # and marks of blobs that are neither stored nor served any more (collected, files deleted)
        _lift(db, report.restored + sorted(marked - seen - referenced))
    return report


__all__ = ["CORRUPT", "MISSING", "Damage", "VerifyReport", "verify_blobs"]
