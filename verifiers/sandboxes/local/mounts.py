"""Size-limited tmpfs mounts for sandbox directories (root only), through libc."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

_MS_NOSUID, _MS_NODEV = 0x2, 0x4
_MNT_DETACH = 0x2
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def mount_tmpfs(target: Path, size_bytes: int, mode: int = 0o711) -> None:
    """Mount a tmpfs of ``size_bytes`` on ``target`` (nosuid, nodev); raises OSError."""
    options = f"size={size_bytes},mode={mode:o}".encode()
    if _libc.mount(b"tmpfs", os.fsencode(target), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount tmpfs on {target}: {os.strerror(err)}")


def unmount(target: Path) -> None:
    """Detach whatever is mounted on ``target``; nothing mounted is fine."""
    if _libc.umount2(os.fsencode(target), _MNT_DETACH) != 0:
        err = ctypes.get_errno()
        if err not in (22, 2):  # EINVAL: not a mount point; ENOENT: gone
            raise OSError(err, f"unmount {target}: {os.strerror(err)}")


def is_mounted(target: Path) -> bool:
    """Whether ``target`` is a mount point (read from /proc/self/mountinfo)."""
    wanted = os.fsencode(os.path.realpath(target))
    with open("/proc/self/mountinfo", "rb") as handle:
        return any(line.split(b" ")[4] == wanted for line in handle)


__all__ = ["mount_tmpfs", "unmount", "is_mounted"]
