"""Staging folders for files being received, one per process, and the start-up sweep of dead ones.

An upload streams into a staging file before its blob is stored; a process killed mid-upload leaves
that file behind. Several app workers share one staging root, so a worker starting up cannot simply
empty it: another worker may be receiving an upload right now. Each process therefore stages in its
own folder ``<root>/<id>/`` and holds an exclusive ``flock`` on ``<root>/<id>.lock`` for as long as it
lives. The kernel drops the lock when the process dies (``kill -9`` included), so at start-up every
folder whose lock can be taken belonged to a dead process and is removed at once, whatever its age;
folders of live processes are left alone. Loose files directly under the root (staged by versions
before this layout) are removed once a day old, as before.

A lock file exists before its flock is taken, so a sweeper starting at that moment can take the lock
and unlink the file; the new owner would then hold a lock on a name nobody sees, and its folder would
look orphaned. The owner therefore checks, once locked, that the name still points at its file, and
starts over with a new name if not.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import time
import uuid
from pathlib import Path

from hub_server.errors import StorageError

log = logging.getLogger(__name__)

LOCK_SUFFIX = ".lock"
_STALE_LOOSE_S = 24 * 3600


def _lock(path: Path, blocking: bool) -> int | None:
    """An fd holding an exclusive flock on ``path`` (created if missing), or None if another holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    except OSError:
        os.close(fd)
        raise
    return fd


def _lock_own(root: Path, attempts: int = 8) -> tuple[str, int]:
    """A new name under ``root`` and an fd holding the flock of ``<root>/<name>.lock``, still linked there."""
    for _ in range(attempts):
        name = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        path = root / f"{name}{LOCK_SUFFIX}"
        fd = _lock(path, blocking=True)
        if fd is None:  # pragma: no cover - a blocking flock either succeeds or raises
            continue
        if _still_linked(fd, path):
            return name, fd
        os.close(fd)  # a sweeper took it between the create and the lock, and unlinked it
    raise StorageError(f"could not lock a staging folder in {root} in {attempts} attempts")


def _still_linked(fd: int, path: Path) -> bool:
    try:
        here = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)


def _remove_dead(lock_path: Path) -> int:
    """Remove the folder of ``lock_path`` if its process is gone; the number of files removed."""
    fd = _lock(lock_path, blocking=False)
    if fd is None:
        return 0  # a live process holds it
    try:
        folder = lock_path.with_suffix("")
        removed = sum(1 for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0
        shutil.rmtree(folder, ignore_errors=True)
        lock_path.unlink(missing_ok=True)  # folder first: a folder is never left without its lock
        return removed
    finally:
        os.close(fd)


def _remove_loose(entry: Path, cutoff: float) -> int:
    try:
        if entry.stat().st_mtime < cutoff:
            entry.unlink(missing_ok=True)
            return 1
    except FileNotFoundError:  # finished (or swept) meanwhile
        pass
    return 0


def sweep(root: Path, loose_max_age_s: float = _STALE_LOOSE_S) -> int:
    """Remove what dead processes left under ``root`` (see the module docstring); how many files went."""
    removed = 0
    cutoff = time.time() - loose_max_age_s
    for entry in root.iterdir():
        if entry.name.endswith(LOCK_SUFFIX):
            removed += _remove_dead(entry)
        elif entry.is_dir():
            if not entry.with_name(entry.name + LOCK_SUFFIX).exists():
                # a lock file is created before its folder and removed after it: this one's owner is gone
                removed += sum(1 for p in entry.rglob("*") if p.is_file())
                shutil.rmtree(entry, ignore_errors=True)
        else:
            removed += _remove_loose(entry, cutoff)
    return removed


class StagingArea:
    """This process's staging folder under ``root``, locked while the process lives; sweeps ``root`` first."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        removed = sweep(root)
        if removed:
            log.info("removed %d staging file(s) left by stopped processes in %s", removed, root)
        name, fd = _lock_own(root)
        self._fd: int | None = fd  # None once closed
        self.path = root / name
        self.path.mkdir()

    def close(self) -> None:
        """Remove this process's folder and release its lock (a dead process's is swept at the next start)."""
        if self._fd is None:
            return
        shutil.rmtree(self.path, ignore_errors=True)
        (self.path.parent / f"{self.path.name}{LOCK_SUFFIX}").unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = None

    def __del__(self) -> None:
        # Storages are made once per app; tests make many: give their descriptors back when they go.
        fd = getattr(self, "_fd", None)  # absent when __init__ failed before taking the lock
        if fd is not None:
            os.close(fd)


__all__ = ["StagingArea", "sweep"]
