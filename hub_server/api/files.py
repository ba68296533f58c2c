"""Content-addressed file URLs: ``/files/<sha256>/<filename>`` and its PEP 658 ``.metadata`` sibling.

GET and HEAD both answer (a HEAD with a wrong Content-Length breaks uv), with Range support,
whether the blob is a local file or streamed from elsewhere (S3); a storage that hands out URLs
(S3 presigned) gets GETs redirected there. The content never changes under a URL, so public
files are cacheable forever.

Every answer carries ``ETag: "<sha256>"`` (a matching ``If-None-Match`` gets 304). Small local
blobs are answered from memory (hashed when read into it); larger ones are streamed from the file in
256 KiB reads, or, with ``accel_redirect`` set, handed to the nginx in front with ``X-Accel-Redirect``
after every check here (whole ``GET``/``HEAD`` only). A blob ``vf-hub admin verify`` quarantined, one
missing from storage, or a small one whose bytes do not hash to its address is never sent: 503, and
one error line in the log.

The hot case, a plain anonymous download whose lookup (``hub.reads``) and small local blob
(``hub.blobs``) are both in memory, is answered in front of the app (``blob_lane``); this
route checks credentials, queries the database and reads blobs, filling those caches.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from hub_server.api.blob_cache import BlobCorrupt
from hub_server.api.blob_response import blob_response, bytes_response, etag_matches
from hub_server.api.lookups import FileAccess, file_access
from hub_server.auth.principal import Principal
from hub_server.context import Hub, hub_of
from hub_server.errors import BlobMissing, BlobUnavailable, NotFound
from hub_server.storage import blob_key

router = APIRouter()
log = logging.getLogger(__name__)

METADATA_SUFFIX = ".metadata"
_FOREVER = "public, max-age=31536000, immutable"


@dataclass(frozen=True)
class Blob:
    """Which blob a file URL serves, and how."""

    sha256: str
    media_type: str
    private: bool

    @property
    def etag(self) -> str:
        """The blob's entity tag: its sha256 (content-addressed, so strong and never reused)."""
        return f'"{self.sha256}"'

    @property
    def cache_control(self) -> str:
        return "private, max-age=31536000, immutable" if self.private else _FOREVER


def blob_to_serve(access: FileAccess | None, filename: str) -> Blob:
    """The blob behind a file URL (its own, or its ``.metadata``), or NotFound.

    Raises:
        BlobUnavailable: ``vf-hub admin verify`` found that blob damaged or missing.
    """
    if access is None:
        raise NotFound("no such file")
    if filename.endswith(METADATA_SUFFIX):
        if access.metadata_sha256 is None:
            raise NotFound("this file has no separate core metadata")
        blob = Blob(access.metadata_sha256, "text/plain; charset=utf-8", access.private)
    else:
        blob = Blob(access.sha256, "application/zip" if filename.endswith(".whl") else "application/gzip",
                    access.private)
    if blob.sha256 in access.damaged:
        raise BlobUnavailable(f"{filename} is unavailable: its stored copy failed verification and is "
                              "quarantined until the Hub's operator repairs it (an identical re-upload does)")
    return blob


def _unavailable(filename: str, blob: Blob, why: str) -> BlobUnavailable:
    """The 503 for a blob that cannot be served, logged once here (the operator has to act)."""
    log.error("not serving %s (blob %s): %s", filename, blob.sha256, why)
    return BlobUnavailable(f"{filename} is unavailable: its stored copy is {why}; the Hub's operator has been told")


def _lookup(hub: Hub, principal: Principal | None, sha256: str, filename: str) -> FileAccess | None:
    dist_name = filename.removesuffix(METADATA_SUFFIX)

    def query() -> FileAccess | None:
        try:
            with hub.db.read() as session:
                return file_access(session, principal, sha256, dist_name)
        except NotFound:
            return None

    return query() if principal is not None else hub.reads.get(("file", sha256, dist_name), query)


def _whole(request: Request, blob: Blob) -> bool:
    """A request for the whole blob: no ``Range`` (a 206 is not a download), no ``If-None-Match`` naming it (304)."""
    return request.headers.get("range") is None and not etag_matches(request.headers.get("if-none-match"), blob.etag)


def _accel_response(target: str, media_type: str, headers: dict[str, str]) -> Response:
    """An empty 200 telling the nginx in front to send ``target``, an internal location onto the blob folder.

    nginx keeps ``Content-Type`` and ``Cache-Control`` from this answer and replaces the rest with the
    file's own (its ``Content-Length``, and its ``ETag`` unless its config passes this one on:
    docs/hub.md, Scale path).
    """
    return Response(headers={**headers, "X-Accel-Redirect": target}, media_type=media_type)


def _serve(request: Request, hub: Hub, blob: Blob, filename: str) -> Response:
    key = blob_key(blob.sha256)
    location = hub.storage.locate(key)
    headers = {"Cache-Control": blob.cache_control, "ETag": blob.etag}
    if isinstance(location, Path):
        try:
            data = hub.blobs.cached(location) or hub.blobs.load(location, blob.sha256)
            if data is None:  # too large to hold in memory: nginx in front sends it, or it is streamed from disk
                accel = hub.settings.accel_redirect
                if accel is not None and _whole(request, blob) and location.is_file():
                    return _accel_response(accel + key, blob.media_type, headers)
                return blob_response(open(location, "rb"), request, blob.media_type, headers)
        except FileNotFoundError:
            raise _unavailable(filename, blob, "missing from storage") from None
        except BlobCorrupt as error:
            raise _unavailable(filename, blob, f"corrupt (its bytes hash to {error.found}; run vf-hub admin "
                                               "verify to quarantine it)") from None
        return bytes_response(data, request, blob.media_type, headers)
    if isinstance(location, str) and request.method == "GET":
        # A presigned URL is signed for GET only: HEAD is answered here, from the blob's size.
        return RedirectResponse(location, status_code=307, headers={"Cache-Control": "private, no-store"})
    try:
        handle = hub.storage.open(key)
    except BlobMissing:
        raise _unavailable(filename, blob, "missing from storage") from None
    return blob_response(handle, request, blob.media_type, headers)


@router.api_route("/files/{sha256}/{filename}", methods=["GET", "HEAD"])
def download(sha256: str, filename: str, request: Request) -> Response:
    """A distribution file, or its core metadata when the name ends in ``.metadata``."""
    hub = hub_of(request)
    principal = hub.optional_principal(request)
    sha256 = sha256.lower()
    try:
        blob = blob_to_serve(_lookup(hub, principal, sha256, filename), filename)
    except BlobUnavailable as error:
        log.error("not serving %s (blob %s): quarantined by vf-hub admin verify", filename, sha256)
        raise error from None
    return _serve(request, hub, blob, filename)
