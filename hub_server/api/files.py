"""Content-addressed file URLs: ``/files/<sha256>/<filename>`` and its PEP 658 ``.metadata`` sibling.

GET and HEAD both answer (a HEAD with a wrong Content-Length breaks uv), with Range support for
local blobs; blobs elsewhere (S3) are served by a redirect to their own URL. The content never
changes under a URL, so public files are cacheable forever.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request, Response
from fastapi.responses import FileResponse, RedirectResponse

from hub_server.context import hub_of
from hub_server.errors import NotFound, StorageError
from hub_server.services.catalog import find_file
from hub_server.storage import blob_key

router = APIRouter()

_METADATA_SUFFIX = ".metadata"
_FOREVER = "public, max-age=31536000, immutable"


def _serve(request: Request, sha256: str, filename: str, media_type: str, private: bool) -> Response:
    hub = hub_of(request)
    location = hub.storage.locate(blob_key(sha256))
    cache = "private, max-age=31536000, immutable" if private else _FOREVER
    if isinstance(location, str):
        return RedirectResponse(location, status_code=307, headers={"Cache-Control": "private, no-store"})
    if not isinstance(location, Path) or not location.is_file():
        raise StorageError(f"the blob of {filename} is missing from storage")
    return FileResponse(location, media_type=media_type, filename=None, headers={"Cache-Control": cache})


@router.api_route("/files/{sha256}/{filename}", methods=["GET", "HEAD"])
def download(sha256: str, filename: str, request: Request) -> Response:
    """A distribution file, or its core metadata when the name ends in ``.metadata``."""
    hub = hub_of(request)
    principal = hub.optional_principal(request)
    wants_metadata = filename.endswith(_METADATA_SUFFIX)
    dist_name = filename.removesuffix(_METADATA_SUFFIX)
    with hub.db.read() as session:
        file = find_file(session, principal, sha256.lower(), dist_name)
        private = file.release.project.private
        metadata_sha256 = file.metadata_sha256
    if wants_metadata:
        if metadata_sha256 is None:
            raise NotFound("this file has no separate core metadata")
        return _serve(request, metadata_sha256, filename, "text/plain; charset=utf-8", private)
    media_type = "application/zip" if dist_name.endswith(".whl") else "application/gzip"
    return _serve(request, sha256.lower(), dist_name, media_type, private)
