"""Sliding-window rate limits counted in the database, so every app worker shares one budget.

Each counted event is a row of ``rate_events`` (scope, key, Unix time). A hit inserts its row and
then counts the key's rows in the window, inside one write transaction: over the limit, the
transaction rolls back (the refused attempt is not counted) and the caller gets 429. On SQLite
writers are serialised, so the limit is exact; on PostgreSQL two workers' simultaneous hits may
each see only the other's committed rows, so a burst can pass the limit by at most the number of
hits in flight at once. Expired rows of the scope are deleted by the hits that follow.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.orm import Session

from hub_server.db import Database, RateEvent
from hub_server.errors import RateLimited

_KEY_CHARS = 200  # the column's width; keys are "user:<id>", "address:<ip>", "token:<id>"
# Built once: every authenticated request runs it, and building the statement cost more than running it.
_WINDOW = select(func.count(), func.min(RateEvent.at)).where(
    RateEvent.scope == bindparam("scope"), RateEvent.key == bindparam("key"), RateEvent.at > bindparam("since"))


class RateLimiter:
    """At most ``limit`` events per key within any ``window_s`` seconds, across all workers on ``db``."""

    def __init__(self, db: Database, scope: str, limit: int, window_s: float = 60.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.scope = scope
        self.limit = limit
        self.window_s = window_s
        self._clock = clock  # wall time: the workers are separate processes

    def _window(self, session: Session, key: str, now: float) -> tuple[int, float | None]:
        """How many events ``key`` has in the window ending ``now``, and when the oldest was."""
        params = {"scope": self.scope, "key": key, "since": now - self.window_s}
        count, oldest = session.execute(_WINDOW, params).one()
        return int(count), oldest

    def _refuse(self, what: str, oldest: float | None, now: float) -> RateLimited:
        retry = max(1, math.ceil((oldest if oldest is not None else now) + self.window_s - now))
        return RateLimited(f"too many {what}; retry in {retry} s", retry_after=retry)

    def check(self, key: str, what: str, session: Session | None = None) -> None:
        """Raise :class:`RateLimited` if ``key`` has used up its budget (without counting an event).

        Pass the caller's open ``session`` to read in its transaction instead of starting one.
        """
        now = self._clock()
        if session is None:
            with self.db.read() as own:
                count, oldest = self._window(own, key[:_KEY_CHARS], now)
        else:
            count, oldest = self._window(session, key[:_KEY_CHARS], now)
        if count >= self.limit:
            raise self._refuse(what, oldest, now)

    def hit(self, key: str, what: str) -> None:
        """Count one event for ``key``, raising :class:`RateLimited` (and counting nothing) when over budget."""
        self.hit_all([key], what)

    def hit_all(self, keys: list[str], what: str) -> None:
        """Count one event for each of ``keys`` (each its own budget) in one transaction.

        If any key is over its budget, :class:`RateLimited` is raised and none of them is counted.
        """
        now = self._clock()
        with self.db.write(changes_reads=False) as session:
            session.execute(delete(RateEvent).where(RateEvent.scope == self.scope,
                                                    RateEvent.at <= now - self.window_s))
            cut = list(dict.fromkeys(key[:_KEY_CHARS] for key in keys))
            session.add_all([RateEvent(scope=self.scope, key=key, at=now) for key in cut])
            session.flush()
            for key in cut:
                count, oldest = self._window(session, key, now)
                if count > self.limit:
                    raise self._refuse(what, oldest, now)  # rolls the transaction back: nothing is counted


__all__ = ["RateLimiter"]
