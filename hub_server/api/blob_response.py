"""Serving a blob, streamed from a seekable file object or from memory, with HTTP Range support.

Streaming is for storages that are not a local folder (S3 without presigned redirects); memory is
for small local files; a large local file is served by Starlette's ``FileResponse`` instead. One
range per request: several ranges are answered with the whole blob (200), which RFC 9110 allows and
pip and uv never ask for; a malformed ``Range`` is ignored the same way; a range that starts past
the end answers 416.
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


def _plan(request: Request, size: int, headers: dict[str, str]) -> tuple[int, int, int, dict[str, str]]:
    """``(status, first byte, length, headers)`` of the answer; status 416 for an unsatisfiable range."""
    base = {**headers, "Accept-Ranges": "bytes"}
    try:
        wanted = parse_range(request.headers.get("range"), size)
    except ValueError:
        return 416, 0, 0, {**base, "Content-Range": f"bytes */{size}"}
    first, last = wanted if wanted is not None else (0, size - 1)
    length = last - first + 1 if size else 0
    out = {**base, "Content-Length": str(length)}
    if wanted is None:
        return 200, first, length, out
    return 206, first, length, {**out, "Content-Range": f"bytes {first}-{last}/{size}"}


def blob_response(handle: BinaryIO, request: Request, media_type: str, headers: dict[str, str]) -> Response:
    """A 200, 206 or 416 response streaming ``handle`` (which this takes ownership of and closes)."""
    status, first, length, out = _plan(request, handle.seek(0, io.SEEK_END), headers)
    if status == 416 or request.method == "HEAD":
        handle.close()
        return Response(status_code=status, headers=out, media_type=None if status == 416 else media_type)
    return StreamingResponse(_chunks(handle, first, length), status_code=status, headers=out, media_type=media_type)


def bytes_response(data: bytes, request: Request, media_type: str, headers: dict[str, str]) -> Response:
    """The same answers for a blob already in memory (small files: no streaming machinery needed)."""
    status, first, length, out = _plan(request, len(data), headers)
    if status == 416:
        return Response(status_code=416, headers=out)
    body = b"" if request.method == "HEAD" else data[first: first + length]
    return Response(body, status_code=status, headers=out, media_type=media_type)
