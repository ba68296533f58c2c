"""A worker's short-lived cache of anonymous reads: simple pages, "not found" answers, file lookups.

Anonymous reads are nearly all of an index's traffic (pip and uv look every requirement up on
every index they are given, and most answers are 404s), and each would otherwise be a database
round trip. An entry is reused while both hold:

* this process has committed no write since it was made (``Database.generation``): a worker
  sees its own uploads, yanks and deletions at once;
* it is younger than ``ttl`` seconds: the bound on how long a change made by *another* worker
  (or by ``vf-hub admin``) takes to show here. Public simple pages already tell clients and
  proxies they may be reused for ``simple_cache_seconds``, which is longer.

Only what any anonymous caller may see is cached, so nothing private can leak through it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from hub_server.db.database import Database

T = TypeVar("T")


@dataclass(frozen=True)
class Hit:
    """A fresh cached answer (which may itself be None: "not found")."""

    value: Any


class ReadCache:
    """Answers keyed by any hashable key, dropped on this process's writes and after ``ttl`` seconds."""

    def __init__(self, db: Database, ttl: float, max_entries: int = 4096) -> None:
        self.db = db
        self.ttl = ttl
        self.max_entries = max_entries
        self._entries: dict[Hashable, tuple[float, int, object]] = {}
        self._computing: dict[Hashable, threading.Lock] = {}
        self._lock = threading.Lock()

    def peek(self, key: Hashable) -> Hit | None:
        """The fresh answer for ``key``, if there is one (no I/O: safe on the event loop)."""
        entry = self._entries.get(key)
        if entry is None or entry[0] <= time.monotonic() or entry[1] != self.db.generation:
            return None
        return Hit(entry[2])

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The fresh answer for ``key``, else ``compute()``'s (then kept). ``compute`` may return None.

        Threads missing the same key at once wait for one computation instead of all querying.
        """
        if self.ttl <= 0:
            return compute()
        hit = self.peek(key)
        if hit is not None:
            return cast(T, hit.value)  # stored below, from this key's compute
        with self._computing.setdefault(key, threading.Lock()):
            hit = self.peek(key)
            if hit is not None:
                return cast(T, hit.value)
            generation = self.db.generation  # read first: a write during compute makes the entry stale
            value = compute()
            with self._lock:
                if len(self._entries) >= self.max_entries:
                    self._entries.clear()  # a cheap bound; hot keys come back within a request each
                    self._computing.clear()
                self._entries[key] = (time.monotonic() + self.ttl, generation, value)
        return value
