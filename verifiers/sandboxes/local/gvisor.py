"""The gVisor tier: each sandbox's agent runs as the container process of ``runsc run`` (Debian's ``runsc``).

The layout mirrors the bubblewrap tier's: an empty read-only root (with the host's ``/bin``, ``/lib``
links recreated in it), ``/usr`` and a few ``/etc`` files bound read-only, and ``/workspace``, ``/tmp``,
``/dev/shm`` and ``/image`` from the slot. What differs is the boundary: the sandbox's system calls are
served by gVisor's user-space kernel (the Sentry, on its ptrace platform here), not by the host's.

Facts of runsc 0.0~20221219 on this host that shape the tier (measured; see docs/sandboxes.md):

- runsc must run as root, and moves its Sentry and gofer into the cgroups the spec's ``cgroupsPath``
  names: ``"."`` keeps them in the ones the launcher joined, so the sandbox's cgroup still holds it all.
- The agent is pid 1 of the guest (there is no init above it): it reaps orphans itself.
- Guest uid mappings fail (``gofer: fork/exec /proc/self/exe: invalid argument``), so the guest runs as
  the slot's host uid itself: files it writes belong to that uid on the host, as in the bubblewrap tier.
- The host's pids cgroup counts the Sentry's threads and ptrace stubs, not guest processes:
  ``max_processes`` is the guest's ``RLIMIT_NPROC``, which the Sentry enforces, and the host's limits
  are sized for the Sentry in :mod:`.gvisor_limits`.
- The host's memory cgroup charges the Sentry, guest memory included; past it the host kernel kills the
  Sentry and the sandbox is lost, so each process is also held to ``memory_gb`` of address space.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from verifiers.sandboxes.local.image import IMAGE_PATH
from verifiers.sandboxes.local.launcher import AGENT_PATH, SANDBOX_PATH, LaunchPlan

BUNDLE_DIR = "bundle"  # in the slot: config.json and the empty root
STATE_DIR = "runsc"  # under root_dir: runsc's own records of its containers (its --root)
_TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_ETC_SHARED = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "nsswitch.conf")
_ETC_NETWORK = ("resolv.conf", "ssl", "ca-certificates", "gai.conf")
_TIMEOUT_S = 30


def slot_prefix(root_dir: Path, slot_number: int) -> str:
    """The start of the names of a slot's containers: a reaper that knows only the slot finds them by it."""
    return f"vf-{hashlib.sha256(str(root_dir).encode()).hexdigest()[:10]}-s{slot_number}-"


def container_id(root_dir: Path, slot_number: int, sandbox_id: str) -> str:
    """runsc's name for one sandbox's container. Unique per sandbox, not per slot: runsc drops its record of
    an ended container a moment after ``runsc run`` returns, and a slot's next sandbox, named alike, could
    then meet it ("container already exists")."""
    return slot_prefix(root_dir, slot_number) + "".join(c for c in sandbox_id if c.isalnum())[:16]


def _bind(source: Path | str, target: str, writable: bool = False) -> dict[str, Any]:
    return {"destination": target, "type": "bind", "source": str(source),
            "options": ["rbind", "rw" if writable else "ro", "nosuid", "nodev"]}


def _mounts(plan: LaunchPlan) -> list[dict[str, Any]]:
    mounts: list[dict[str, Any]] = [{"destination": "/proc", "type": "proc", "source": "proc"},
                                    _bind("/usr", "/usr")]
    mounts += [_bind(f"/{name}", f"/{name}") for name in _TOP_LEVEL
               if Path(f"/{name}").is_dir() and not Path(f"/{name}").is_symlink()]
    for name in _ETC_SHARED + (_ETC_NETWORK if plan.network else ()):
        if Path(f"/etc/{name}").exists():
            mounts.append(_bind(f"/etc/{name}", f"/etc/{name}"))
    mounts += [_bind(plan.etc_dir / name, f"/etc/{name}") for name in ("passwd", "group", "hosts")]
    mounts += [_bind(plan.files_dir / "workspace", "/workspace", writable=True),
               _bind(plan.files_dir / "tmp", "/tmp", writable=True),
               _bind(plan.files_dir / "shm", "/dev/shm", writable=True),
               _bind(plan.agent_file, AGENT_PATH)]
    if plan.image is not None:
        mounts.append(_bind(plan.image, IMAGE_PATH))
    return mounts


def oci_spec(plan: LaunchPlan, command: list[str], uid: int) -> dict[str, Any]:
    """The OCI runtime spec of one sandbox: ``command`` as ``uid`` in a read-only root, no capabilities."""
    return {
        "ociVersion": "1.0.2",
        "process": {"terminal": False, "user": {"uid": uid, "gid": uid}, "args": command,
                    "env": [f"PATH={SANDBOX_PATH}"], "cwd": "/workspace", "noNewPrivileges": True,
                    "capabilities": {"bounding": [], "effective": [], "inheritable": [], "permitted": [],
                                     "ambient": []}},
        "root": {"path": "rootfs", "readonly": True},
        "hostname": "sandbox",
        "mounts": _mounts(plan),
        # "." is the cgroup runsc already runs in (the launcher put it there): it joins, never creates
        "linux": {"cgroupsPath": ".",
                  "namespaces": [{"type": kind} for kind in ("pid", "ipc", "uts", "mount", "network")
                                 if kind != "network" or not plan.network]},
    }


def write_bundle(bundle: Path, spec: dict[str, Any]) -> None:
    """The bundle directory: ``config.json`` and a root holding only the host's top-level links."""
    root = bundle / "rootfs"
    root.mkdir(parents=True)
    for name in _TOP_LEVEL:
        link = Path(f"/{name}")
        if link.is_symlink():
            (root / name).symlink_to(link.readlink())
    (bundle / "config.json").write_text(json.dumps(spec))


def runsc_args(runsc: str, state: Path, bundle: Path, container: str, network: bool) -> list[str]:
    """``runsc run`` in the foreground: the container process's stdio is runsc's own."""
    return [runsc, "--root", str(state), f"--network={'host' if network else 'none'}",
            "run", "--bundle", str(bundle), container]


def remove_container(runsc: str, state: Path, container: str) -> None:
    """Kill the container and drop runsc's record of it; a container runsc no longer knows is fine."""
    if not _known(state, container):  # the common case: it ended with its agent
        return
    for argv in (["kill", container, "KILL"], ["delete", "--force", container]):
        try:
            subprocess.run([runsc, "--root", str(state), *argv], capture_output=True, timeout=_TIMEOUT_S,
                           env={"PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.TimeoutExpired):
            pass


def remove_slot_containers(runsc: str, state: Path, prefix: str) -> None:
    """Remove every container runsc still knows whose name starts with ``prefix`` (a dead owner's, by slot)."""
    for container in sorted(name for name in _containers(state) if name.startswith(prefix)):
        remove_container(runsc, state, container)


def _containers(state: Path) -> set[str]:
    """The containers runsc keeps records of under ``state`` (files ``<id>_sandbox:<id>.state`` and ``.lock``)."""
    if not state.exists():
        return set()
    return {entry.name.split("_sandbox:", 1)[0] for entry in os.scandir(state) if "_sandbox:" in entry.name}


def _known(state: Path, container: str) -> bool:
    """Whether runsc keeps any record (state file, lock) of ``container`` under ``state``."""
    return container in _containers(state)


__all__ = ["BUNDLE_DIR", "STATE_DIR", "container_id", "oci_spec", "remove_container", "remove_slot_containers",
           "runsc_args", "slot_prefix", "write_bundle"]
