"""Small local blobs kept in memory, so the hottest downloads (wheels, PEP 658 metadata) skip the disk.

An entry is keyed by the blob's path and used only while the file still has the size and
modification time it had when read (one ``stat`` per use), so a blob replaced behind the Hub's
back (the corrupted-blob test does exactly that) is read again, never served from memory. Bytes are
hashed as they are read in (about 1 ms per MiB, once per load): bytes that do not match the blob's
sha256 are never held, and :class:`BlobCorrupt` says so.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

_Signature = tuple[int, int]  # (size, mtime in ns)


class BlobCorrupt(Exception):
    """A blob read into memory does not hash to its content address (``found`` is what it hashes to)."""

    def __init__(self, sha256: str, found: str) -> None:
        super().__init__(f"blob {sha256} hashes to {found}")
        self.sha256, self.found = sha256, found


class SmallBlobs:
    """Up to ``max_total`` bytes of blobs no larger than ``max_blob`` each."""

    def __init__(self, max_blob: int = 1024 * 1024, max_total: int = 64 * 1024 * 1024) -> None:
        self.max_blob = max_blob
        self.max_total = max_total
        self._entries: dict[Path, tuple[_Signature, bytes]] = {}
        self._total = 0
        self._lock = threading.Lock()

    @staticmethod
    def _signature(path: Path) -> _Signature:
        stat = path.stat()
        return stat.st_size, stat.st_mtime_ns

    def cached(self, path: Path) -> bytes | None:
        """The blob's bytes if held and the file is unchanged, else None (``FileNotFoundError`` if it is gone)."""
        entry = self._entries.get(path)
        if entry is None:
            return None
        return entry[1] if entry[0] == self._signature(path) else None

    def entry(self, path: Path) -> tuple[_Signature, bytes] | None:
        """What is held for ``path`` as ``((size, mtime_ns), bytes)``, unchecked (the caller compares), or None."""
        return self._entries.get(path)

    def load(self, path: Path, sha256: str) -> bytes | None:
        """Read the blob, check it hashes to ``sha256`` and keep it; None (nothing read) when over ``max_blob``.

        Raises:
            BlobCorrupt: the bytes hash to something else (nothing is kept).
        """
        signature = self._signature(path)
        if signature[0] > self.max_blob:
            return None
        data = path.read_bytes()
        found = hashlib.sha256(data).hexdigest()
        if found != sha256:
            raise BlobCorrupt(sha256, found)
        with self._lock:
            old = self._entries.pop(path, None)
            self._total -= len(old[1]) if old else 0
            if self._total + len(data) > self.max_total:
                self._entries.clear()  # a cheap bound: the hot blobs return on their next request
                self._total = 0
            self._entries[path] = (signature, data)
            self._total += len(data)
        return data
