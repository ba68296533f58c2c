"""Sliding-window rate limits kept in memory, one set per app worker.

With several workers each keeps its own windows, so the effective limit is the per-worker limit
times the number of workers; that is enough to stop password guessing and runaway upload loops.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

from hub_server.errors import RateLimited

_MAX_KEYS = 100_000


class RateLimiter:
    """At most ``limit`` events per key within any ``window_s`` seconds."""

    def __init__(self, limit: int, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._events: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, key: str, now: float) -> deque[float]:
        events = self._events.setdefault(key, deque())
        while events and events[0] <= now - self.window_s:
            events.popleft()
        return events

    def _forget_idle(self, now: float) -> None:
        if len(self._events) > _MAX_KEYS:
            for key in [k for k, v in self._events.items() if not v or v[-1] <= now - self.window_s]:
                del self._events[key]

    def check(self, key: str, what: str) -> None:
        """Raise :class:`RateLimited` if ``key`` has used up its budget (without counting an event)."""
        now = self._clock()
        with self._lock:
            events = self._recent(key, now)
            if len(events) >= self.limit:
                retry = max(1, math.ceil(events[0] + self.window_s - now))
                raise RateLimited(f"too many {what}; retry in {retry} s", retry_after=retry)

    def hit(self, key: str, what: str) -> None:
        """Count one event for ``key``, raising :class:`RateLimited` when over budget."""
        self.check(key, what)
        with self._lock:
            self._recent(key, self._clock()).append(self._clock())
            self._forget_idle(self._clock())
