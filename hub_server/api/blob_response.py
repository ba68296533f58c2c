"""Serving a blob, streamed from a seekable file object or from memory, with Range and ETag support.

Streaming is for large local files and for storages that are not a local folder (S3 without
presigned redirects); memory is for small local files. One range per request: several ranges are
answered with the whole blob (200), which RFC 9110 allows and pip and uv never ask for; a malformed
``Range`` is ignored the same way; a range that starts past the end answers 416. When the caller's
``headers`` carry an ``ETag``, a matching ``If-None-Match`` answers 304 and an ``If-Range`` naming
another entity turns a ranged request into a whole one.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import BinaryIO

from fastapi import Request, Response
from fastapi.responses import StreamingResponse

_CHUNK = 256 * 1024
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The inclusive ``(first, last)`` byte range asked for, or None for the whole blob.

    Raises ``ValueError`` for a range that cannot be satisfied (it starts past the end).
    """
    if not header:
        return None
    match = _RANGE.match(header.strip().replace(" ", ""))
    if match is None or (not match.group(1) and not match.group(2)):
        return None  # several ranges or a malformed header: serve the whole blob
    first_text, last_text = match.groups()
    if not first_text:  # a suffix: the last N bytes
        length = int(last_text)
        if length == 0:
            raise ValueError("empty suffix range")
        return max(0, size - length), size - 1
    first = int(first_text)
    last = min(int(last_text), size - 1) if last_text else size - 1
    if first >= size or last < first:
        raise ValueError(f"range starts past the end of a {size}-byte blob")
    return first, last


def _chunks(handle: BinaryIO, first: int, length: int) -> Iterator[bytes]:
    try:
        handle.seek(first)
        left = length
        while left > 0:
            data = handle.read(min(_CHUNK, left))
            if not data:
                break
            left -= len(data)
            yield data
    finally:
        handle.close()


def etag_matches(header: str | None, etag: str) -> bool:
    """Whether an ``If-None-Match`` value names ``etag`` (or is ``*``); weak tags compare equal too."""
    if not header:
        return False
    tags = {tag.strip().removeprefix("W/") for tag in header.split(",")}
    return "*" in tags or etag in tags


def _plan(request: Request, size: int, headers: dict[str, str]) -> tuple[int, int, int, dict[str, str]]:
    """``(status, first byte, length, headers)`` of the answer: 200, 206, 304, or 416 for a bad range."""
    base = {**headers, "Accept-Ranges": "bytes"}
    etag = headers.get("ETag")
    if etag is not None and etag_matches(request.headers.get("if-none-match"), etag):
        return 304, 0, 0, base
    asked = request.headers.get("range")
    if_range = request.headers.get("if-range")
    if if_range is not None and if_range.strip() != etag:
        asked = None  # the caller's copy is another entity (or dated): send the whole blob
    try:
        wanted = parse_range(asked, size)
    except ValueError:
        return 416, 0, 0, {**base, "Content-Range": f"bytes */{size}"}
    first, last = wanted if wanted is not None else (0, size - 1)
    length = last - first + 1 if size else 0
    out = {**base, "Content-Length": str(length)}
    if wanted is None:
        return 200, first, length, out
    return 206, first, length, {**out, "Content-Range": f"bytes {first}-{last}/{size}"}


def blob_response(handle: BinaryIO, request: Request, media_type: str, headers: dict[str, str]) -> Response:
    """A 200, 206, 304 or 416 response streaming ``handle`` (which this takes ownership of and closes)."""
    status, first, length, out = _plan(request, handle.seek(0, io.SEEK_END), headers)
    if status in (304, 416) or request.method == "HEAD":
        handle.close()
        return Response(status_code=status, headers=out, media_type=None if status in (304, 416) else media_type)
    return StreamingResponse(_chunks(handle, first, length), status_code=status, headers=out, media_type=media_type)


def bytes_response(data: bytes, request: Request, media_type: str, headers: dict[str, str]) -> Response:
    """The same answers for a blob already in memory (small files: no streaming machinery needed)."""
    status, first, length, out = _plan(request, len(data), headers)
    if status in (304, 416):
        return Response(status_code=status, headers=out)
    body = b"" if request.method == "HEAD" else data[first: first + length]
    return Response(body, status_code=status, headers=out, media_type=media_type)
