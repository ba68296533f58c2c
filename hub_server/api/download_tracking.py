"""Counting downloads: an ASGI middleware around the file routes that tells the counter about each one.

Only complete downloads count: a ``GET`` of a distribution file answered 200 (or a redirect to
its blob elsewhere). ``HEAD``, ranged reads (206, uv's peek at a wheel's metadata) and the
PEP 658 ``.metadata`` files do not, so one install counts once. Downloads answered by the blob
lane, in front of the app, are counted there with :func:`count_download`.
"""

from __future__ import annotations

import logging
import re

from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hub_server.metrics import HubMetrics
from hub_server.services.downloads import DownloadCounter

_FILE = re.compile(r"/files/[0-9a-fA-F]{64}/([^/]+)$")
_COUNTED = (200, 307)
log = logging.getLogger(__name__)


async def count_download(counter: DownloadCounter, filename: str, metrics: HubMetrics) -> None:
    """Count one complete download of ``filename``; write the tally when it is due (off the event loop)."""
    counter.record(filename)
    metrics.downloads.inc()
    if counter.due():
        try:
            await run_in_threadpool(counter.flush)
        except SQLAlchemyError:
            # The response is already sent; the tally is kept and the next flush retries.
            log.exception("could not write download counts; will retry")


class CountDownloads:
    """Wraps an ASGI app; counts file downloads into ``counter`` (and ``metrics``) and flushes it when due."""

    def __init__(self, app: ASGIApp, counter: DownloadCounter, metrics: HubMetrics) -> None:
        self.app = app
        self.counter = counter
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = _FILE.search(scope["path"]) if scope["type"] == "http" and scope["method"] == "GET" else None
        if match is None or match[1].endswith(".metadata"):
            await self.app(scope, receive, send)
            return
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await self.app(scope, receive, watch)
        if status in _COUNTED:
            await count_download(self.counter, match[1], self.metrics)
