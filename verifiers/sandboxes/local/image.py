"""A per-task file system image: a host directory or tar archive, visible read-only at ``/image``.

An environment whose tasks each need a repository and its dependencies names them in
``CreateSandboxRequest.image_dir``. A directory is bind-mounted read-only as it is (nothing is copied, so
one checkout serves every sandbox at once); an archive is unpacked onto the sandbox's own disk first, with
tarfile's ``data`` filter (no absolute paths, ``..``, device files or links out of the tree), and then
mounted read-only the same way. The sandbox reads and runs what is there and copies what it must change.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

from verifiers.sandboxes.errors import SandboxFileTooLargeError, SandboxPathError

IMAGE_PATH = "/image"
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")


def is_archive(path: str) -> bool:
    """Whether ``path`` names a tar archive (by its suffix; :func:`check` opened it)."""
    return path.endswith(ARCHIVE_SUFFIXES)


def check(path: str) -> None:
    """Refuse, at create, an ``image_dir`` that is not a readable directory or tar archive on this host."""
    target = Path(path)
    if target.is_dir():
        closed = [p for p in (target.resolve(), *target.resolve().parents) if p.stat().st_mode & 0o001 == 0]
        if closed or target.stat().st_mode & 0o004 == 0:
            raise SandboxPathError(f"image_dir {path} must be readable, and it and its parents searchable, by "
                                   f"everyone (sandboxes run as uids of their own): {closed[0] if closed else path}")
        return
    if not target.exists():
        raise SandboxPathError(f"image_dir {path} does not exist")
    if not is_archive(path):
        raise SandboxPathError(f"image_dir {path} is neither a directory nor a tar archive "
                               f"({', '.join(ARCHIVE_SUFFIXES)})")
    try:
        with tarfile.open(target) as archive:
            archive.next()
    except (OSError, tarfile.TarError) as error:
        raise SandboxPathError(f"image_dir {path} is not a readable tar archive: {error}") from None


def unpack(archive_path: str, target: Path) -> None:
    """Unpack ``archive_path`` into the new directory ``target`` (on the sandbox's disk), readable by all."""
    target.mkdir(mode=0o755)
    try:
        with tarfile.open(archive_path) as archive:
            archive.extractall(target, filter="data")
    except OSError as error:
        if error.errno == 28:  # ENOSPC: the sandbox's own disk is full
            raise SandboxFileTooLargeError(f"image_dir {archive_path} does not fit the sandbox's disk "
                                           "(raise disk_size_gb)") from None
        raise SandboxPathError(f"image_dir {archive_path} could not be unpacked: {error}") from None
    except tarfile.TarError as error:
        raise SandboxPathError(f"image_dir {archive_path} could not be unpacked: {error}") from None
    for root, dirs, _ in os.walk(target):  # the data filter keeps modes; the sandbox's uid must get in
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755, follow_symlinks=False)


__all__ = ["IMAGE_PATH", "ARCHIVE_SUFFIXES", "is_archive", "check", "unpack"]
