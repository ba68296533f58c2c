"""Which cgroups this machine lets the local backend write: v2 first, then v1 (memory, pids, cpu, freezer)."""

from __future__ import annotations

import logging
from pathlib import Path

from verifiers.sandboxes.local.cgroups import CgroupDriver, V1Driver, V2Driver

logger = logging.getLogger("verifiers.sandboxes")

_MOUNTS = Path("/proc/self/mounts")
_OWN = Path("/proc/self/cgroup")

_WANTED = ("memory", "pids", "cpu")


def _own_paths() -> dict[str, str]:
    """Controller (or "" for the v2 hierarchy) → this process's cgroup path."""
    paths: dict[str, str] = {}
    for line in _OWN.read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def _mounts(fs_type: str) -> list[tuple[Path, set[str]]]:
    found = []
    for line in _MOUNTS.read_text().splitlines():
        _, mount_point, kind, options, *_ = line.split()
        if kind == fs_type:
            found.append((Path(mount_point), set(options.split(","))))
    return found


def _detect_v1(parent_name: str) -> V1Driver | None:
    own = _own_paths()
    parents: dict[str, Path] = {}
    for mount_point, options in _mounts("cgroup"):
        for controller in (*_WANTED, "freezer"):
            if controller in options and controller in own:
                parent = mount_point / own[controller].lstrip("/") / parent_name
                try:
                    parent.mkdir(exist_ok=True)  # proves it writable; made again by the first create
                except OSError:
                    continue
                try:
                    parent.rmdir()
                except OSError:  # it holds sandboxes of another backend on this root
                    pass
                parents[controller] = parent
    return V1Driver(parents) if any(c in parents for c in _WANTED) else None


def _detect_v2(parent_name: str) -> V2Driver | None:
    own = _own_paths().get("")
    if own is None:
        return None
    for mount_point, _ in _mounts("cgroup2"):
        base = mount_point / own.lstrip("/")
        controllers_file = base / "cgroup.controllers"
        available = set(controllers_file.read_text().split()) if controllers_file.exists() else set()
        wanted = [c for c in _WANTED if c in available]
        if not wanted:
            continue
        parent = base / parent_name
        try:
            parent.mkdir(exist_ok=True)
            enabled = set((base / "cgroup.subtree_control").read_text().split())
            missing = [c for c in wanted if c not in enabled]
            if missing:  # fails (EBUSY) when our own cgroup holds processes and is not the root
                (base / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in missing))
            (parent / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
        except OSError as error:
            logger.debug("cgroup v2 at %s not usable: %s", base, error)
            continue
        return V2Driver(parent, tuple(wanted))
    return None


def detect(parent_name: str) -> CgroupDriver | None:
    """A driver for whichever cgroup version gives writable memory/pids/cpu controllers, v2 first."""
    try:
        return _detect_v2(parent_name) or _detect_v1(parent_name)
    except OSError as error:
        logger.debug("no usable cgroups: %s", error)
        return None


__all__ = ["detect"]
