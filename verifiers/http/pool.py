"""The connections to one origin: idle ones ready for reuse, a cap on how many are open, a queue of waiters.

Every operation is O(1) in the number of connections (httpcore's pool scans all
of them on every request event, which is what made it the bottleneck at 1,000+
connections). Idle connections are reused last-in first-out, so a burst's extra
connections sink to the cold end and expire there; each release retires at most
one expired connection from that end.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable

from verifiers.http.connection import Connection, within


class PoolClosed(RuntimeError):
    """The pool was closed while a request waited for a connection."""


class OriginPool:
    """Hands out connections to one origin; see the module docstring.

    Args:
        connect: opens a new connection within the given timeout.
        max_connections: open connections at most (idle and in use); ``None``: no cap.
        keepalive_expiry: seconds an idle connection is kept; ``None``: until the server closes it.
    """

    def __init__(self, connect: Callable[[float | None], Awaitable[Connection]], max_connections: int | None,
                 keepalive_expiry: float | None) -> None:
        self._connect = connect
        self._max = max_connections
        self._expiry = keepalive_expiry
        self._idle: dict[Connection, None] = {}  # insertion-ordered: oldest first, so popitem() is LIFO
        self._open = 0
        self._waiters: deque[asyncio.Future[Connection | None]] = deque()
        self._closed = False

    @property
    def open_connections(self) -> int:
        return self._open

    @property
    def idle_connections(self) -> int:
        return len(self._idle)

    async def acquire(self, pool_timeout: float | None, connect_timeout: float | None) -> Connection:
        """A connection ready to send on: an idle one, a new one, or one handed over by a finished request.

        Raises:
            TimeoutError: no connection became free within ``pool_timeout`` (connecting is not counted).
            OSError, TimeoutError: from connecting (a connect timeout is ``TimeoutError`` too: the caller
                tells them apart by which step raised).
        """
        while self._idle:
            conn, _ = self._idle.popitem()
            if conn.unpark() and not self._expired(conn, time.monotonic()):
                return conn
            self._drop(conn)
        if self._closed:
            raise PoolClosed("the HTTP transport is closed")
        if self._max is None or self._open < self._max:
            self._open += 1
        else:
            handed = await self._wait(pool_timeout)
            if handed is not None:
                return handed
            # None: a slot was freed and counted for us; open a connection in it.
        try:
            return await self._connect(connect_timeout)
        except BaseException:
            self._open -= 1
            self._pass_slot()
            raise

    async def _wait(self, timeout: float | None) -> Connection | None:
        waiter: asyncio.Future[Connection | None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await within(timeout, waiter)
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                # Handed a connection (or a slot) just as we gave up: pass it on, never leak it.
                handed = waiter.result()
                if handed is None:
                    self._open -= 1
                    self._pass_slot()
                else:
                    self.release(handed)
            else:
                waiter.cancel()
                self._waiters.remove(waiter)  # O(waiters), only on timeout or cancellation
            raise

    def release(self, conn: Connection) -> None:
        """Return a connection that can serve another request."""
        if self._closed:
            self.discard(conn)
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return
        conn.park()
        self._idle[conn] = None
        self._retire_oldest()

    def discard(self, conn: Connection) -> None:
        """Close a connection that cannot be reused; its slot goes to the next waiter."""
        conn.close()
        self._open -= 1
        self._pass_slot()

    def close(self) -> None:
        """Close idle connections now, in-use ones when released; waiters get :class:`PoolClosed`."""
        self._closed = True
        for conn in self._idle:
            conn.close()
        self._open -= len(self._idle)
        self._idle.clear()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(PoolClosed("the HTTP transport was closed while waiting for a connection"))

    def _pass_slot(self) -> None:
        if self._closed:
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._open += 1
                waiter.set_result(None)
                return

    def _drop(self, conn: Connection) -> None:
        conn.close()
        self._open -= 1

    def _expired(self, conn: Connection, now: float) -> bool:
        return self._expiry is not None and now - conn.idle_since >= self._expiry

    def _retire_oldest(self) -> None:
        oldest = next(iter(self._idle))
        if self._expired(oldest, time.monotonic()) or oldest.reader.stale:
            del self._idle[oldest]
            self._drop(oldest)


__all__ = ["OriginPool", "PoolClosed"]
