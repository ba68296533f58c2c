"""File transfer through the host side of a sandbox's directories, refusing every way out.

The sandbox owns these directories and may plant symlinks, FIFOs or swap a
directory for a link at any moment, so a path is never resolved as a whole.
It is walked one component at a time, each opened relative to the previous
directory's descriptor with ``O_NOFOLLOW``: a symlink anywhere in the path
(even one pointing inside) is refused, and nothing swapped in between two
steps can redirect the walk. Only regular files are read or replaced.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import PurePosixPath

from verifiers.sandboxes.errors import SandboxFileNotFoundError, SandboxFileTooLargeError, SandboxPathError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20


def split_sandbox_path(path: str, areas: dict[str, str], default_area: str) -> tuple[str, list[str]]:
    """``/workspace/a/b`` → (host root of ``/workspace``, ``["a", "b"]``); relative paths are in ``default_area``.

    Raises SandboxPathError for ``..``, empty names, or a path outside the areas.
    """
    pure = PurePosixPath(path)
    if not pure.is_absolute():
        pure = PurePosixPath(default_area) / pure
    parts = pure.parts[1:]
    for area, host_root in areas.items():
        prefix = PurePosixPath(area).parts[1:]
        if tuple(parts[: len(prefix)]) == prefix:
            rest = list(parts[len(prefix):])
            if not rest or any(p in ("..", ".") for p in rest):
                raise SandboxPathError(f"{path!r} does not name a file below {area}")
            return host_root, rest
    raise SandboxPathError(f"{path!r} is outside the sandbox's files ({', '.join(areas)})")


def _open_dir(parent_fd: int, name: str, create: bool, owner: tuple[int, int] | None) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        if not create:
            raise
    try:
        os.mkdir(name, 0o755, dir_fd=parent_fd)
    except FileExistsError:
        pass  # made concurrently: open it (and refuse it if it is a link)
    fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    if owner is not None:
        os.fchown(fd, *owner)
    return fd


def _walk(root: str, dirs: list[str], display: str, create: bool, owner: tuple[int, int] | None) -> int:
    """A descriptor of the directory ``root/dirs...``, no symlink followed."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for name in dirs:
            next_fd = _open_dir(fd, name, create, owner)
            os.close(fd)
            fd = next_fd
        return fd
    except FileNotFoundError:
        os.close(fd)
        raise SandboxFileNotFoundError(f"no such file in the sandbox: {display}") from None
    except OSError as error:
        os.close(fd)
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            raise SandboxPathError(f"{display}: a path component is a symlink or not a directory") from None
        raise


def read_file(root: str, parts: list[str], display: str, max_bytes: int) -> bytes:
    """The bytes of regular file ``root/parts``, at most ``max_bytes``."""
    dir_fd = _walk(root, parts[:-1], display, create=False, owner=None)
    try:
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        raise SandboxFileNotFoundError(f"no such file in the sandbox: {display}") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise SandboxPathError(f"{display} is a symlink; refusing to follow it") from None
        raise
    finally:
        os.close(dir_fd)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise SandboxPathError(f"{display} is not a regular file")
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > max_bytes:
            raise SandboxFileTooLargeError(f"{display} has {info.st_size} bytes, over the limit of {max_bytes}")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:  # it grew while we read
        raise SandboxFileTooLargeError(f"{display} is over the limit of {max_bytes} bytes")
    return data


def write_file(root: str, parts: list[str], display: str, data: bytes, owner: tuple[int, int] | None) -> None:
    """Create or replace regular file ``root/parts`` with ``data``; new directories and the file get ``owner``."""
    dir_fd = _walk(root, parts[:-1], display, create=True, owner=owner)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(parts[-1], flags, 0o644, dir_fd=dir_fd)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise SandboxPathError(f"{display} is a symlink; refusing to write through it") from None
        if error.errno == errno.EISDIR:
            raise SandboxPathError(f"{display} is a directory") from None
        raise
    finally:
        os.close(dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SandboxPathError(f"{display} is not a regular file")
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view[:_CHUNK]):]
        if owner is not None:
            os.fchown(fd, *owner)
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
            raise SandboxFileTooLargeError(f"{display}: {len(data)} bytes do not fit the sandbox's disk") from None
        raise
    finally:
        os.close(fd)


__all__ = ["split_sandbox_path", "read_file", "write_file"]
