"""The fast lane for the Hub's most frequent request: a plain anonymous download of a small blob in memory.

``HubApp`` asks :meth:`BlobLane.answer` first, before FastAPI's own stack (telemetry, middleware,
routing, request parsing), which costs several times what serving a cached blob does. The lane
answers ``GET``/``HEAD /files/<sha256>/<filename>`` when all of these hold, and declines otherwise:

* no ``Authorization``, ``Range`` or conditional header came (those go to the ``files`` route,
  which implements them);
* the file's lookup is a fresh anonymous read (``hub.reads``: the same freshness rules as every
  other cached read, so a deleted file or a project made private stops being served here at once
  on this worker, and within ``read_cache_seconds`` on the others);
* the blob is a local file already held by ``hub.blobs`` and still has the size and modification
  time it had when read (one ``stat``; a blob changed behind the Hub's back is read again).

Its answer is the route's answer: same status, headers (``ETag`` is the sha256) and body, sent as
one prepared header list; complete downloads are counted like the route's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from starlette.types import Scope, Send

from hub_server.api.download_tracking import count_download
from hub_server.api.files import METADATA_SUFFIX, Blob, blob_to_serve
from hub_server.api.lookups import FileAccess
from hub_server.context import Hub
from hub_server.errors import BlobUnavailable, NotFound
from hub_server.services.downloads import DownloadCounter
from hub_server.storage import blob_key

_PREFIX = "/files/"
LANE_ROUTE = "/files/{sha256}/{filename}"
"""The template of the route the lane stands in front of (the requests it answers are counted under it)."""
_DECLINE = frozenset({b"authorization", b"range", b"if-none-match", b"if-range", b"if-match",
                      b"if-modified-since", b"if-unmodified-since"})
_MAX_ENTRIES = 4096


@dataclass(frozen=True)
class _Ready:
    """A prepared answer: valid while the lookup is ``access`` and the blob file has ``signature``."""

    access: FileAccess
    path: Path
    signature: tuple[int, int]
    body: bytes
    headers: list[tuple[bytes, bytes]]
    counted: str | None  # the filename to count on a complete GET; None for ``.metadata`` files


def blob_headers(blob: Blob, size: int) -> list[tuple[bytes, bytes]]:
    """The headers of a whole-blob answer (the ``files`` route sends the same ones)."""
    return [(b"content-length", str(size).encode()), (b"content-type", blob.media_type.encode()),
            (b"etag", blob.etag.encode()), (b"cache-control", blob.cache_control.encode()),
            (b"accept-ranges", b"bytes")]


class BlobLane:
    """Answers the plain cached downloads described in the module docstring."""

    def __init__(self, hub: Hub, counter: DownloadCounter) -> None:
        self.hub = hub
        self.counter = counter
        self._ready: dict[tuple[str, str], _Ready] = {}

    async def answer(self, scope: Scope, send: Send) -> bool:
        """Send the answer and return True, or return False (having sent nothing) to let the app answer."""
        method = scope["method"]
        path: str = scope["path"]
        root = scope.get("root_path", "")
        if root:
            path = path.removeprefix(root)
        if not path.startswith(_PREFIX) or method not in ("GET", "HEAD"):
            return False
        sha256, slash, filename = path[len(_PREFIX):].partition("/")
        if not slash or "/" in filename or len(sha256) != 64:
            return False
        for name, _value in scope["headers"]:
            if name in _DECLINE:
                return False
        ready = self._prepared(sha256.lower(), filename)
        if ready is None:
            return False
        await send({"type": "http.response.start", "status": 200, "headers": ready.headers})
        await send({"type": "http.response.body", "body": ready.body if method == "GET" else b""})
        if method == "GET" and ready.counted is not None:
            await count_download(self.counter, ready.counted, self.hub.metrics)
        return True

    def _prepared(self, sha256: str, filename: str) -> _Ready | None:
        hit = self.hub.reads.peek(("file", sha256, filename.removesuffix(METADATA_SUFFIX)))
        if hit is None or hit.value is None:
            return None  # not looked up lately, or not found: the route answers (and renders the error)
        key = (sha256, filename)
        ready = self._ready.get(key)
        if ready is None or ready.access is not hit.value:
            ready = self._prepare(hit.value, filename)
            if ready is None:
                return None
            if len(self._ready) >= _MAX_ENTRIES:
                self._ready.clear()  # a cheap bound; hot files are prepared again on their next request
            self._ready[key] = ready
        try:
            stat = os.stat(ready.path)
        except FileNotFoundError:
            return None  # the route reports it
        if (stat.st_size, stat.st_mtime_ns) != ready.signature:
            del self._ready[key]
            return None
        return ready

    def _prepare(self, access: FileAccess, filename: str) -> _Ready | None:
        try:
            blob = blob_to_serve(access, filename)
        except (NotFound, BlobUnavailable):
            return None  # the route answers (and logs a quarantined blob)
        location = self.hub.storage.locate(blob_key(blob.sha256))
        if not isinstance(location, Path):
            return None
        held = self.hub.blobs.entry(location)
        if held is None:
            return None
        signature, body = held
        counted = None if filename.endswith(METADATA_SUFFIX) else filename
        return _Ready(access, location, signature, body, blob_headers(blob, len(body)), counted)
