"""Download counts: counted in memory per app worker, added to the database in batches.

A write transaction per download would put an fsync on the hottest path of an index (and
serialise SQLite writers), so each worker keeps a tally and adds it to ``download_counts``
with one transaction at most every ``flush_seconds`` (10) or ``flush_every`` (1000) downloads,
when a page that shows counts is rendered, and when the app stops. Rows are per file and UTC day; several
workers add to the same row. A worker killed with ``kill -9`` loses at most its last batch:
counts are a popularity signal, not an audit log.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import cast

from sqlalchemy import CursorResult, ScalarSelect, func, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from hub_server.db.database import Database
from hub_server.db.models import File, Project, Release
from hub_server.db.records import DownloadCount

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DownloadStats:
    """Downloads of one project: all time, the last 30 days, and per version (all time)."""

    total: int
    last_30_days: int
    by_version: dict[str, int]


class DownloadCounter:
    """One worker's tally of file downloads, keyed by filename (unique on the Hub) and day."""

    def __init__(self, db: Database, flush_every: int = 1000, flush_seconds: float = 10.0) -> None:
        self.db = db
        self.flush_every = flush_every
        self.flush_seconds = flush_seconds
        self._pending: Counter[tuple[str, dt.date]] = Counter()
        self._pending_total = 0  # sum of _pending's values, kept so due() is O(1) on the download path
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()  # one flush at a time; records go on meanwhile
        self._last_flush = time.monotonic()

    def record(self, filename: str, day: dt.date | None = None) -> None:
        """Count one download of ``filename`` (today, UTC, unless ``day`` is given)."""
        day = day or dt.datetime.now(dt.timezone.utc).date()
        with self._lock:
            self._pending[(filename, day)] += 1
            self._pending_total += 1

    def due(self) -> bool:
        """Whether enough has been counted, or enough time has passed, to write the tally."""
        with self._lock:
            if not self._pending_total:
                return False
            return (self._pending_total >= self.flush_every
                    or time.monotonic() - self._last_flush >= self.flush_seconds)

    def flush(self) -> None:
        """Add the tally to the database (one transaction); on failure the tally is kept for the next try."""
        with self._flush_lock:
            with self._lock:
                batch, self._pending = self._pending, Counter()
                self._pending_total = 0
                self._last_flush = time.monotonic()
            if not batch:
                return
            try:
                self._write(batch)
            except BaseException:
                with self._lock:
                    self._pending.update(batch)
                    self._pending_total += batch.total()
                raise

    async def flush_periodically(self) -> None:
        """Flush every ``flush_seconds`` while the app runs (a quiet worker's last downloads get written too)."""
        while True:
            await asyncio.sleep(self.flush_seconds)
            if self.due():
                try:
                    await asyncio.to_thread(self.flush)
                except SQLAlchemyError:
                    log.exception("could not write download counts; will retry")

    def _write(self, batch: Counter[tuple[str, dt.date]]) -> None:
        names = sorted({name for name, _day in batch})
        for attempt in range(3):
            try:
                with self.db.write(changes_reads=False) as session:  # tallies change no cached read
                    ids = dict(session.execute(select(File.filename, File.id).where(File.filename.in_(names))).all())
                    for (name, day), count in batch.items():
                        if name not in ids:
                            continue  # not a file of this Hub (the route answered 404 before counting)
                        # an UPDATE's result is a CursorResult, with rowcount; Session.execute is typed for SELECTs
                        changed = cast(CursorResult, session.execute(
                            update(DownloadCount)
                            .where(DownloadCount.file_id == ids[name], DownloadCount.day == day)
                            .values(count=DownloadCount.count + count)
                        )).rowcount
                        if not changed:
                            session.add(DownloadCount(file_id=ids[name], day=day, count=count))
                return
            except IntegrityError:
                # Another worker inserted the same (file, day) row first: the retry updates it.
                if attempt == 2:
                    raise


def project_downloads(session: Session, normalized: str, today: dt.date | None = None) -> DownloadStats:
    """Download totals of the project with this normalised name (only what has been flushed)."""
    today = today or dt.datetime.now(dt.timezone.utc).date()
    since = today - dt.timedelta(days=29)
    rows = session.execute(
        select(Release.version, DownloadCount.day, func.sum(DownloadCount.count))
        .join(File, File.release_id == Release.id)
        .join(DownloadCount, DownloadCount.file_id == File.id)
        .join(Project, Project.id == Release.project_id)
        .where(Project.normalized == normalized)
        .group_by(Release.version, DownloadCount.day)
    ).all()
    by_version: Counter[str] = Counter()
    recent = 0
    for version, day, count in rows:
        by_version[version] += int(count)
        if day >= since:
            recent += int(count)
    return DownloadStats(total=sum(by_version.values()), last_30_days=recent, by_version=dict(by_version))


def downloads_column() -> ScalarSelect[int]:
    """All-time downloads of the project in the enclosing query (a correlated subquery, for lists)."""
    return (select(func.coalesce(func.sum(DownloadCount.count), 0))
            .join(File, File.id == DownloadCount.file_id).join(Release, Release.id == File.release_id)
            .where(Release.project_id == Project.id).scalar_subquery())
