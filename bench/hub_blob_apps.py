"""The Hub's download route on Starlette's ``FileResponse``: the maintained path ``bench/hub_blobs.py`` measures.

:func:`file_response_app` is the Hub's own app (``create_app``: same settings, database,
middleware, metrics and download counting) with the blob lane switched off and
``/files/<sha256>/<filename>`` answered by a route registered ahead of the Hub's own. It does what
the Hub's route does before it sends bytes (credentials, the cached lookup, private projects,
quarantined blobs, 304 on a matching ``If-None-Match``), then lets ``FileResponse`` send the local
file (it does ``Range`` and ``If-Range`` itself). A blob's bytes are hashed once per (size, mtime)
before it is first sent, so a blob corrupted on disk is a 503 as on the Hub's route.

Run with ``PYTHONPATH=<repo> uvicorn --factory --app-dir bench hub_blob_apps:file_response_app``;
the Hub's settings come from ``VF_HUB_*`` as for ``create_app``.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.responses import FileResponse
from starlette.types import Scope, Send

from hub_server.api.blob_response import etag_matches
from hub_server.api.files import METADATA_SUFFIX, Blob, blob_to_serve
from hub_server.api.lookups import file_access
from hub_server.app import HubApp, create_app
from hub_server.context import Hub, hub_of
from hub_server.errors import BlobUnavailable, NotFound
from hub_server.storage import blob_key


class _NoLane:
    """Declines every request, so each download goes through FastAPI's stack to the route."""

    async def answer(self, scope: Scope, send: Send) -> bool:
        return False


class _Verified:
    """Which local blobs hashed to their address, per (size, mtime): each version of a file is hashed once."""

    def __init__(self) -> None:
        self._seen: dict[Path, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def check(self, path: Path, sha256: str) -> os.stat_result:
        """The file's ``stat`` once its bytes are known to hash to ``sha256``; ``BlobUnavailable`` otherwise."""
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            raise BlobUnavailable("the file's stored copy is missing from storage") from None
        signature = (stat.st_size, stat.st_mtime_ns)
        if self._seen.get(path) == signature:
            return stat
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while chunk := handle.read(1024 * 1024):
                digest.update(chunk)
        if digest.hexdigest() != sha256:
            raise BlobUnavailable("the file's stored copy is corrupt")
        with self._lock:
            self._seen[path] = signature
        return stat


def _blob(request: Request, hub: Hub, sha256: str, filename: str) -> Blob:
    """The blob the URL serves, after the same access checks as the Hub's route (404 / 503 otherwise)."""
    principal = hub.optional_principal(request)
    dist_name = filename.removesuffix(METADATA_SUFFIX)

    def query():  # type: ignore[no-untyped-def]
        try:
            with hub.db.read() as session:
                return file_access(session, principal, sha256, dist_name)
        except NotFound:
            return None

    access = query() if principal is not None else hub.reads.get(("file", sha256, dist_name), query)
    return blob_to_serve(access, filename)


def _headers(blob: Blob) -> dict[str, str]:
    return {"Cache-Control": blob.cache_control, "ETag": blob.etag}


def _with_route(endpoint: object) -> HubApp:
    app = create_app()
    app.blob_lane = _NoLane()  # type: ignore[assignment]
    route = APIRoute("/files/{sha256}/{filename}", endpoint, methods=["GET", "HEAD"])  # type: ignore[arg-type]
    app.router.routes.insert(0, route)  # ahead of the Hub's own route for the same path
    return app


def file_response_app() -> HubApp:
    """The Hub with local blobs sent by Starlette's ``FileResponse`` and no lane."""
    verified = _Verified()

    def download(sha256: str, filename: str, request: Request) -> Response:
        hub = hub_of(request)
        blob = _blob(request, hub, sha256.lower(), filename)
        if etag_matches(request.headers.get("if-none-match"), blob.etag):
            return Response(status_code=304, headers=_headers(blob))
        location = hub.storage.locate(blob_key(blob.sha256))
        assert isinstance(location, Path), "this variant is for the local blob folder"
        stat = verified.check(location, blob.sha256)
        return FileResponse(location, headers=_headers(blob), media_type=blob.media_type, stat_result=stat)

    return _with_route(download)

