"""Receiving a twine-style ``multipart/form-data`` upload as it streams in.

The ``content`` part goes straight to a staging file while its SHA-256, BLAKE2b-256 and MD5 are
computed, and the size limit is enforced on the way (nothing is buffered whole in memory).
Text fields are kept in memory, each capped in size, their number capped too.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import IO

from python_multipart.multipart import MultipartParseError, MultipartParser, parse_options_header
from starlette.requests import ClientDisconnect, Request

from hub_server.errors import BadRequest, TooLarge
from hub_server.services.publish import StagedFile

_MAX_FIELDS = 500
_FIELDS_TOTAL_FACTOR = 4  # all text fields together may be this many times one field's limit
FILE_FIELD = "content"


class _Sink:
    """The staging file of the uploaded content, with running digests and a size cap."""

    def __init__(self, staging: Path, filename: str, limit: int) -> None:
        self.filename = filename
        self.limit = limit
        self.size = 0
        self.digests = (hashlib.sha256(), hashlib.blake2b(digest_size=32), hashlib.md5(usedforsecurity=False))
        handle, path = tempfile.mkstemp(dir=staging, prefix="upload-")
        self.path = Path(path)
        self.handle: IO[bytes] = os.fdopen(handle, "wb")

    def write(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > self.limit:
            raise TooLarge(f"the file is larger than this Hub's limit of {self.limit} bytes")
        for digest in self.digests:
            digest.update(data)
        self.handle.write(data)

    def finish(self) -> StagedFile:
        self.handle.close()
        sha256, blake2, md5 = (d.hexdigest() for d in self.digests)
        return StagedFile(self.path, self.filename, self.size, sha256, blake2, md5)

    def discard(self) -> None:
        self.handle.close()
        self.path.unlink(missing_ok=True)


class UploadReceiver:
    """Parses one upload body; use :meth:`receive` once per request."""

    def __init__(self, staging: Path, max_file_size: int, max_field_size: int) -> None:
        self.staging = staging
        self.max_file_size = max_file_size
        self.max_field_size = max_field_size
        self.fields: dict[str, str] = {}
        self._sink: _Sink | None = None
        self._done: StagedFile | None = None
        self._headers: dict[str, str] = {}
        self._header_name = b""
        self._header_value = b""
        self._part_name = ""
        self._part_is_file = False
        self._buffer = bytearray()
        self._field_bytes = 0

    # -- parser callbacks ------------------------------------------------------------------
    def _on_part_begin(self) -> None:
        self._headers, self._buffer = {}, bytearray()

    def _on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def _on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _on_header_end(self) -> None:
        self._headers[self._header_name.decode("latin-1").lower()] = self._header_value.decode("utf-8", "replace")
        self._header_name, self._header_value = b"", b""

    def _on_headers_finished(self) -> None:
        _kind, options = parse_options_header(self._headers.get("content-disposition", ""))
        self._part_name = options.get(b"name", b"").decode("utf-8", "replace")
        filename = options.get(b"filename")
        self._part_is_file = self._part_name == FILE_FIELD and filename is not None
        if self._part_is_file:
            if self._sink is not None or self._done is not None:
                raise BadRequest("the upload must contain exactly one 'content' file")
            assert filename is not None
            self._sink = _Sink(self.staging, filename.decode("utf-8", "replace"), self.max_file_size)
        elif len(self.fields) >= _MAX_FIELDS:
            raise BadRequest("too many form fields")

    def _on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self._part_is_file:
            assert self._sink is not None
            self._sink.write(data[start:end])
            return
        self._buffer += data[start:end]
        self._field_bytes += end - start
        if self._field_bytes > _FIELDS_TOTAL_FACTOR * self.max_field_size:
            raise BadRequest("the upload's form fields are too long in total")
        if len(self._buffer) > self.max_field_size:
            raise BadRequest(f"the form field {self._part_name!r} is longer than {self.max_field_size} bytes")

    def _on_part_end(self) -> None:
        if self._part_is_file:
            assert self._sink is not None
            self._done, self._sink = self._sink.finish(), None
        elif self._part_name:
            self.fields.setdefault(self._part_name, self._buffer.decode("utf-8", "replace"))

    # -- driving -----------------------------------------------------------------------------
    def _parser(self, content_type: str) -> MultipartParser:
        kind, options = parse_options_header(content_type)
        boundary = options.get(b"boundary")
        if kind != b"multipart/form-data" or not boundary:
            raise BadRequest("uploads must be multipart/form-data (as twine sends them)")
        return MultipartParser(boundary, {
            "on_part_begin": self._on_part_begin, "on_part_data": self._on_part_data,
            "on_part_end": self._on_part_end, "on_header_field": self._on_header_field,
            "on_header_value": self._on_header_value, "on_header_end": self._on_header_end,
            "on_headers_finished": self._on_headers_finished,
        })

    async def receive(self, request: Request) -> tuple[dict[str, str], StagedFile]:
        """Read the whole body; return the text fields and the staged file (the caller owns the file)."""
        declared = request.headers.get("content-length")
        most = self.max_file_size + _FIELDS_TOTAL_FACTOR * self.max_field_size
        if declared and declared.isdigit() and int(declared) > most:
            raise TooLarge(f"the upload is larger than this Hub's limit of {self.max_file_size} bytes")
        parser = self._parser(request.headers.get("content-type", ""))
        try:
            async for chunk in request.stream():
                parser.write(chunk)
            parser.finalize()
        except MultipartParseError as error:
            self._discard()
            raise BadRequest(f"malformed multipart body: {error}") from None
        except (BadRequest, ClientDisconnect, OSError):
            self._discard()
            raise
        if self._done is None or self._sink is not None:
            self._discard()
            raise BadRequest("the upload has no complete 'content' file part")
        return self.fields, self._done

    def _discard(self) -> None:
        if self._sink is not None:
            self._sink.discard()
        if self._done is not None:
            self._done.path.unlink(missing_ok=True)
