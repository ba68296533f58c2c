"""A reader that refuses to deliver more than a set number of bytes: the cap on what inspecting an
upload may decompress.

A gzip stream can unpack a thousand times larger than it is (1 MB of zeros becomes 1 GB), and reading
a tar archive means decompressing all of it; wrapped in :class:`BoundedReader`, the reading stops with
:class:`~hub_server.errors.TooLarge` once ``limit`` bytes have come out, before the CPU is spent.
"""

from __future__ import annotations

import io
from typing import Any, Protocol

from hub_server.errors import TooLarge


class ByteSource(Protocol):
    """What a :class:`BoundedReader` reads from: a binary file, a ``GzipFile``, any ``read(size) -> bytes``."""

    def read(self, size: int, /) -> bytes: ...


class BoundedReader(io.RawIOBase):
    """Reads ``inner`` (forward only) and raises :class:`TooLarge` once more than ``limit`` bytes were read."""

    def __init__(self, inner: ByteSource, limit: int, what: str) -> None:
        super().__init__()
        self._inner = inner
        self.limit = limit
        self.what = what  # names the thing in the refusal, e.g. "demo-0.1.tar.gz unpacked"
        self.consumed = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        # Never ask for more than one byte past the limit: the refusal then costs at most `limit` bytes.
        want = min(len(buffer), self.limit - self.consumed + 1)
        data = self._inner.read(want)
        self.consumed += len(data)
        if self.consumed > self.limit:
            raise TooLarge(f"{self.what} is larger than this Hub's limit of {self.limit} bytes")
        buffer[: len(data)] = data
        return len(data)


__all__ = ["BoundedReader", "ByteSource"]
