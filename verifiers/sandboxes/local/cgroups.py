"""Per-sandbox cgroups for memory, processes and CPU: v1 or v2, whichever this machine has writable.

Each sandbox gets a cgroup below ``<own cgroup>/<parent name>`` (its parent is
the caller's own cgroup, so the caller's limits keep applying; :mod:`.cgroup_detect`
finds it). Its processes join before bwrap starts (the launcher writes its pid
into ``procs_files``), so nothing forks outside it. :meth:`SandboxCgroup.kill` freezes it, kills
every member and waits until it is empty, so a fork bomb cannot outrun it.
"""

from __future__ import annotations

import abc
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

_CPU_PERIOD_US = 100_000


@dataclass(frozen=True)
class Limits:
    memory_bytes: int
    max_processes: int
    cpu_cores: float


def _read_int_field(path: Path, key: str) -> int:
    """``key N`` from a flat-keyed cgroup file (memory.events, memory.oom_control); 0 if absent."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except OSError:
        pass
    return 0


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _members(procs: Path) -> list[int]:
    try:
        return [int(p) for p in procs.read_text().split()]
    except (OSError, ValueError):
        return []


def _kill_members(procs: Path, freeze: Path | None, frozen: str, thawed: str, wait_s: float) -> bool:
    """SIGKILL everyone in the cgroup until it is empty; True when it emptied within ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while True:
        if freeze is not None:
            _write(freeze, frozen)
        for pid in _members(procs):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if freeze is not None:
            _write(freeze, thawed)  # killed tasks only die once thawed
        if not _members(procs):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)


def _rmdir(path: Path, wait_s: float = 2.0) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # EBUSY while dying members are still being reaped
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _rmdir_if_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:  # gone already, or still holding sandboxes
        pass


class SandboxCgroup(abc.ABC):
    """The cgroup(s) of one sandbox."""

    @property
    @abc.abstractmethod
    def procs_files(self) -> list[Path]:
        """Files the launcher writes its own pid into, before it execs bwrap."""

    @abc.abstractmethod
    def oom_kills(self) -> int:
        """How many processes the kernel has killed in this sandbox for memory."""

    @abc.abstractmethod
    def pids_limit_hits(self) -> int:
        """How many forks or clones ``pids.max`` has refused here (0 without a pids controller)."""

    @abc.abstractmethod
    def kill(self, wait_s: float = 2.0) -> bool:
        """Kill every process; True when none is left."""

    @abc.abstractmethod
    def remove(self) -> None:
        """Kill what is left and remove the cgroup (a missing one is fine)."""


class CgroupDriver(abc.ABC):
    """Makes :class:`SandboxCgroup` objects under one parent."""

    version: str
    controllers: tuple[str, ...]
    weight_per_sandbox = True  # see balance(); the probe sets it from LocalBackendConfig.cpu_weight

    @abc.abstractmethod
    def _weight(self) -> tuple[Path, int, int]:
        """The parent's CPU weight file, the weight of one plain process, and the largest weight allowed."""

    def balance(self) -> None:
        """Give the parent the CPU weight of one host process per sandbox in it.

        All sandboxes share one parent, and under contention the kernel divides CPU
        between siblings by weight: left at its default, the parent weighs as one
        process, so 32 busy sandboxes together got what one plain subprocess gets.
        Each sandbox stays capped at its own ``cpu_cores`` either way.
        """
        if not self.weight_per_sandbox or "cpu" not in self.controllers:
            return
        path, one, most = self._weight()
        try:
            count = sum(1 for entry in os.scandir(path.parent) if entry.is_dir())
            _write(path, str(min(most, one * max(1, count))))
        except OSError:  # the parent went away (another backend on this root); the next create balances
            pass

    @abc.abstractmethod
    def create(self, name: str, limits: Limits) -> SandboxCgroup: ...

    @abc.abstractmethod
    def open(self, name: str) -> SandboxCgroup:
        """The existing cgroup ``name`` (for reaping a crashed process's leftovers)."""

    @abc.abstractmethod
    def names(self) -> list[str]:
        """Names of the sandbox cgroups under the parent."""

    @abc.abstractmethod
    def remove_parent(self) -> None:
        """Remove the parent once no sandbox cgroup is left in it (a busy one stays)."""


# -- cgroup v1 -----------------------------------------------------------------------------------

class _V1Cgroup(SandboxCgroup):
    def __init__(self, dirs: dict[str, Path]) -> None:
        self.dirs = dirs

    @property
    def procs_files(self) -> list[Path]:
        return [d / "cgroup.procs" for d in self.dirs.values()]

    def oom_kills(self) -> int:
        memory = self.dirs.get("memory")
        return _read_int_field(memory / "memory.oom_control", "oom_kill") if memory else 0

    def pids_limit_hits(self) -> int:
        pids = self.dirs.get("pids")
        return _read_int_field(pids / "pids.events", "max") if pids else 0

    def kill(self, wait_s: float = 2.0) -> bool:
        anchor = self.dirs.get("pids") or self.dirs.get("memory") or next(iter(self.dirs.values()))
        freezer = self.dirs.get("freezer")
        if not anchor.exists():
            return True
        freeze = freezer / "freezer.state" if freezer and freezer.exists() else None
        return _kill_members(anchor / "cgroup.procs", freeze, "FROZEN", "THAWED", wait_s)

    def remove(self) -> None:
        self.kill()
        for path in self.dirs.values():
            _rmdir(path)


class V1Driver(CgroupDriver):
    version = "v1"

    def __init__(self, parents: dict[str, Path]) -> None:
        self.parents = parents
        self.controllers = tuple(sorted(parents))

    def _dirs(self, name: str) -> dict[str, Path]:
        return {c: parent / name for c, parent in self.parents.items()}

    def create(self, name: str, limits: Limits) -> SandboxCgroup:
        dirs = self._dirs(name)
        for path in dirs.values():
            path.parent.mkdir(exist_ok=True)  # another backend on this root may have removed it
            path.mkdir(exist_ok=True)
        if "memory" in dirs:
            _write(dirs["memory"] / "memory.limit_in_bytes", str(limits.memory_bytes))
            memsw = dirs["memory"] / "memory.memsw.limit_in_bytes"
            if memsw.exists():  # swap counts too, or a bomb pages out instead of dying
                _write(memsw, str(limits.memory_bytes))
        if "pids" in dirs:
            _write(dirs["pids"] / "pids.max", str(limits.max_processes))
        if "cpu" in dirs:
            _write(dirs["cpu"] / "cpu.cfs_period_us", str(_CPU_PERIOD_US))
            _write(dirs["cpu"] / "cpu.cfs_quota_us", str(max(1000, int(limits.cpu_cores * _CPU_PERIOD_US))))
        self.balance()
        return _V1Cgroup(dirs)

    def _weight(self) -> tuple[Path, int, int]:
        return self.parents.get("cpu", Path("/nonexistent")) / "cpu.shares", 1024, 262_144

    def open(self, name: str) -> SandboxCgroup:
        return _V1Cgroup({c: p for c, p in self._dirs(name).items() if p.exists()})

    def names(self) -> list[str]:
        found: set[str] = set()
        for parent in self.parents.values():
            if parent.exists():
                found.update(p.name for p in parent.iterdir() if p.is_dir())
        return sorted(found)

    def remove_parent(self) -> None:
        for parent in self.parents.values():
            _rmdir_if_empty(parent)


# -- cgroup v2 -----------------------------------------------------------------------------------

class _V2Cgroup(SandboxCgroup):
    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def procs_files(self) -> list[Path]:
        return [self.path / "cgroup.procs"]

    def oom_kills(self) -> int:
        return _read_int_field(self.path / "memory.events", "oom_kill")

    def pids_limit_hits(self) -> int:
        return _read_int_field(self.path / "pids.events", "max")

    def kill(self, wait_s: float = 2.0) -> bool:
        if not self.path.exists():
            return True
        kill_file = self.path / "cgroup.kill"
        if kill_file.exists():
            _write(kill_file, "1")
        return _kill_members(self.path / "cgroup.procs", self.path / "cgroup.freeze", "1", "0", wait_s)

    def remove(self) -> None:
        self.kill()
        _rmdir(self.path)


class V2Driver(CgroupDriver):
    version = "v2"

    def __init__(self, parent: Path, controllers: tuple[str, ...]) -> None:
        self.parent = parent
        self.controllers = controllers

    def create(self, name: str, limits: Limits) -> SandboxCgroup:
        path = self.parent / name
        if not self.parent.exists():  # another backend on this root removed it
            self.parent.mkdir()
            _write(self.parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in self.controllers))
        path.mkdir(exist_ok=True)
        if "memory" in self.controllers:
            _write(path / "memory.max", str(limits.memory_bytes))
            if (path / "memory.swap.max").exists():
                _write(path / "memory.swap.max", "0")
        if "pids" in self.controllers:
            _write(path / "pids.max", str(limits.max_processes))
        if "cpu" in self.controllers:
            _write(path / "cpu.max", f"{max(1000, int(limits.cpu_cores * _CPU_PERIOD_US))} {_CPU_PERIOD_US}")
        self.balance()
        return _V2Cgroup(path)

    def _weight(self) -> tuple[Path, int, int]:
        return self.parent / "cpu.weight", 100, 10_000

    def open(self, name: str) -> SandboxCgroup:
        return _V2Cgroup(self.parent / name)

    def names(self) -> list[str]:
        return sorted(p.name for p in self.parent.iterdir() if p.is_dir()) if self.parent.exists() else []

    def remove_parent(self) -> None:
        _rmdir_if_empty(self.parent)


__all__ = ["Limits", "SandboxCgroup", "CgroupDriver", "V1Driver", "V2Driver"]
