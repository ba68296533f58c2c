"""The fast lane for the Hub's most frequent request: an anonymous download that is already in memory.

An ASGI middleware answering ``GET``/``HEAD /files/<sha256>/<filename>`` sent without credentials
when both the file's lookup (``hub.reads``) and its small local blob (``hub.blobs``) are cached,
before routing and request parsing. Everything else goes on to the ``files`` route, which fills
those caches, checks credentials and reads what is not in memory. The app installs it inside the
download counter, so these downloads are counted like the others.
"""

from __future__ import annotations

import re
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from hub_server.api.blob_response import bytes_response
from hub_server.api.files import METADATA_SUFFIX, blob_to_serve
from hub_server.context import Hub
from hub_server.errors import NotFound
from hub_server.storage import blob_key

_PATH = re.compile(r"/files/([0-9a-fA-F]{64})/([^/]+)")


def answer_from_memory(hub: Hub, request: Request, sha256: str, filename: str) -> Response | None:
    """The answer if the lookup and the blob are both cached (and the blob unchanged on disk); else None."""
    hit = hub.reads.peek(("file", sha256, filename.removesuffix(METADATA_SUFFIX)))
    if hit is None or hit.value is None:
        return None  # not looked up yet, or not found: the route answers (and renders the error)
    try:
        blob = blob_to_serve(hit.value, filename)
    except NotFound:
        return None
    location = hub.storage.locate(blob_key(blob.sha256))
    if not isinstance(location, Path):
        return None
    try:
        data = hub.blobs.cached(location)  # one stat: the blob must still be the one read before
    except FileNotFoundError:
        return None  # the route reports it
    if data is None:
        return None
    return bytes_response(data, request, blob.media_type, {"Cache-Control": blob.cache_control})


class FilesFromMemory:
    """ASGI middleware: see the module docstring."""

    def __init__(self, app: ASGIApp, hub: Hub) -> None:
        self.app = app
        self.hub = hub

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD"):
            path: str = scope["path"].removeprefix(scope.get("root_path", ""))
            match = _PATH.fullmatch(path)
            if match is not None and not any(name == b"authorization" for name, _ in scope["headers"]):
                response = answer_from_memory(self.hub, Request(scope), match[1].lower(), match[2])
                if response is not None:
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)
