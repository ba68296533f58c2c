"""A sandbox's own disk: an ext4 image file on the host's disk, loop-mounted on its files directory (root only).

Why not a tmpfs: tmpfs pages are charged to the writer's memory cgroup, so a sandbox that fills its disk
runs out of *memory* instead, and the kernel may kill its agent and lose the sandbox. An ext4 image gives
the writer ``ENOSPC`` at ``disk_size_gb``, and its page cache is written back and reclaimed rather than
pinned. The image is sparse (it takes host disk only for what is written) and is deleted with the slot.

e2fsprogs' ``mke2fs`` formats the image and util-linux's ``mount -o loop`` attaches it; that loop device is
auto-cleared, so unmounting the files directory (``mounts.unmount``) frees it too, even after a crash.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

IMAGE_NAME = "disk.img"  # in the slot, beside files/, so the slot's removal deletes it
_MIN_BYTES = 4 << 20  # ext4 needs a few MiB for its own tables


class DiskUnavailableError(OSError):
    """The image could not be made or mounted (no loop devices, no mke2fs, not root)."""


def tools_present() -> bool:
    """Whether the programs this module runs are installed."""
    return all(shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin") for name in ("mke2fs", "mount"))


def mount_disk(image: Path, target: Path, size_bytes: int, mode: int = 0o711) -> None:
    """Create a sparse ext4 image of ``size_bytes`` at ``image`` and mount it on ``target`` (nosuid, nodev,
    noatime), its root directory owned by root with ``mode``. Raises DiskUnavailableError."""
    size_bytes = max(size_bytes, _MIN_BYTES)
    with open(image, "xb") as handle:
        handle.truncate(size_bytes)
    # No journal and no reserved blocks: a sandbox disk lives minutes and has one user. Lazy table setup
    # keeps formatting at milliseconds; noinit_itable stops the kernel zeroing the tables later.
    _run(["mke2fs", "-q", "-F", "-t", "ext4", "-O", "^has_journal", "-m", "0",
          "-E", "lazy_itable_init=1,nodiscard,root_owner=0:0", str(image)])
    _run(["mount", "-o", "loop,nosuid,nodev,noatime,noinit_itable", str(image), str(target)])
    target.chmod(mode)


def _run(argv: list[str]) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30,
                              env={"PATH": "/usr/sbin:/sbin:/usr/bin:/bin", "LC_ALL": "C"})
    except (OSError, subprocess.TimeoutExpired) as error:
        raise DiskUnavailableError(f"{argv[0]}: {error}") from None
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip() or f"exit code {done.returncode}"
        raise DiskUnavailableError(f"{' '.join(argv[:1])} failed: {message}")


def loop_devices_of(image: Path) -> list[str]:
    """The loop devices (``loopN``) still backed by ``image``."""
    wanted, found = os.path.realpath(image), []
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        try:
            if backing.read_text().strip() == wanted:
                found.append(backing.parent.parent.name)
        except OSError:  # detached between the glob and the read
            continue
    return found


def wait_released(image: Path, wait_s: float = 5.0) -> bool:
    """Wait until no loop device is backed by ``image``; True when none is.

    After the lazy unmount the kernel frees the file system, and with it the auto-cleared loop device,
    only once the last mount namespace holding it is gone: a moment after the sandbox's processes die.
    """
    deadline = time.monotonic() + wait_s
    while loop_devices_of(image):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def on_tmpfs(path: Path) -> bool:
    """Whether ``path`` lives in memory (an image there would be charged to memory again)."""
    wanted = os.path.realpath(path)
    best, kind = "", ""
    with open("/proc/self/mounts") as handle:
        for line in handle:
            fields = line.split()
            point = fields[1].replace("\\040", " ")
            if (wanted == point or wanted.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
                best, kind = point, fields[2]
    return kind in ("tmpfs", "ramfs")


__all__ = ["IMAGE_NAME", "mount_disk", "tools_present", "on_tmpfs", "loop_devices_of", "wait_released",
           "DiskUnavailableError"]
