"""Slots: the on-disk record of each live sandbox, and the reaping of those whose owner died.

A sandbox claims slot ``n`` by creating ``<root>/<n>`` (``mkdir`` is atomic, so
two processes sharing the root never share a slot); ``n`` also picks its host
uid and names its cgroup. ``owner.json`` in the slot names the owning process
(pid and start time, so a recycled pid is not mistaken for it). When a process
is killed with SIGKILL its sandboxes' processes die with it (bwrap's
die-with-parent), but mounts, cgroups and directories stay: the next backend
to start on the same root reaps them.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from verifiers.sandboxes.errors import SandboxError
from verifiers.sandboxes.local import disk
from verifiers.sandboxes.local.cgroups import CgroupDriver
from verifiers.sandboxes.local.mounts import is_mounted, unmount

logger = logging.getLogger("verifiers.sandboxes")

OWNER_FILE = "owner.json"
_CLAIM_GRACE_S = 60.0  # a slot without owner.json this young is being set up, not abandoned


def process_start_time(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot, or None if it does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _owner_alive(owner: dict[str, int]) -> bool:
    return process_start_time(owner["pid"]) == owner["start"]


@dataclass
class Slot:
    number: int
    path: Path

    @property
    def cgroup_name(self) -> str:
        return f"s{self.number}"

    def write_owner(self, sandbox_id: str) -> None:
        pid = os.getpid()
        record = {"pid": pid, "start": process_start_time(pid), "sandbox_id": sandbox_id, "created": time.time()}
        tmp = self.path / f".{OWNER_FILE}.tmp"
        tmp.write_text(json.dumps(record))
        tmp.replace(self.path / OWNER_FILE)


def claim(root: Path, limit: int, hint: int = 0) -> Slot:
    """The first free slot from ``hint`` on (wrapping), or SandboxError when all ``limit`` are taken."""
    for offset in range(limit):
        number = (hint + offset) % limit
        path = root / str(number)
        try:
            path.mkdir(mode=0o711)
        except FileExistsError:
            continue
        path.chmod(0o711)  # mkdir's mode is masked by the umask
        return Slot(number, path)
    raise SandboxError(f"all {limit} sandbox slots under {root} are in use (LocalBackendConfig.max_sandboxes)")


def release(slot: Slot, files_dir: Path, cgroups: CgroupDriver | None) -> None:
    """Kill the slot's processes, unmount and delete its files, remove its cgroup and the slot."""
    if cgroups is not None:
        cgroups.open(slot.cgroup_name).remove()
        cgroups.balance()
    if files_dir.exists() and is_mounted(files_dir):
        unmount(files_dir)
    image = slot.path / disk.IMAGE_NAME
    if image.exists() and not disk.wait_released(image):
        logger.warning("the loop device of %s is still attached; it is freed when its last user exits", image)
    shutil.rmtree(slot.path, ignore_errors=True)
    if slot.path.exists():
        raise SandboxError(f"could not remove sandbox directory {slot.path}")


def _is_stale(path: Path) -> bool:
    owner_file = path / OWNER_FILE
    try:
        owner = json.loads(owner_file.read_text())
    except FileNotFoundError:
        return time.time() - path.stat().st_mtime > _CLAIM_GRACE_S
    except (OSError, ValueError):
        return True
    return not _owner_alive(owner)


def reap(root: Path, files_name: str, cgroups: CgroupDriver | None,
         before_release: Callable[[Slot], None] | None = None) -> int:
    """Remove every slot (and cgroup) under ``root`` whose owner is dead; returns how many slots.
    ``before_release`` ends what a slot runs outside its cgroup's reach (the gVisor tier's runsc records)."""
    reaped = 0
    live: set[str] = set()
    for path in sorted(root.iterdir()) if root.exists() else []:
        if not path.name.isdigit():
            continue
        if not _is_stale(path):
            live.add(f"s{path.name}")
            continue
        slot = Slot(int(path.name), path)
        if before_release is not None:
            before_release(slot)
        release(slot, path / files_name, cgroups)
        reaped += 1
    if cgroups is not None:
        for name in cgroups.names():
            if name not in live and not (root / name[1:]).exists():
                cgroups.open(name).remove()
        cgroups.balance()
    if reaped:
        logger.warning("reaped %d sandbox(es) left behind by a crashed process under %s", reaped, root)
    return reaped


__all__ = ["Slot", "claim", "release", "reap", "process_start_time", "OWNER_FILE"]
