"""Host-side observations for the security tests: what exists on the host, never what the sandbox says."""

from __future__ import annotations

import json
from pathlib import Path

from verifiers.sandboxes import AsyncSandboxClient
from verifiers.sandboxes.local.probe import cgroup_parent_name


def slot_of(root: Path, sandbox_id: str) -> Path:
    """The host directory of a live sandbox, found through its owner record."""
    for path in root.iterdir():
        owner = path / "owner.json"
        if path.name.isdigit() and owner.exists() and json.loads(owner.read_text())["sandbox_id"] == sandbox_id:
            return path
    raise LookupError(sandbox_id)


def processes_of_uid(uid: int) -> list[int]:
    """Pids on the host whose real uid is ``uid``."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            for line in status.read_text().splitlines():
                if line.startswith("Uid:") and int(line.split()[1]) == uid:
                    found.append(int(status.parent.name))
        except (OSError, ValueError):
            continue
    return found


def mounts_under(root: Path) -> list[str]:
    prefix = str(root)
    return [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
            if line.split()[4].startswith(prefix)]


def loop_devices_under(root: Path) -> list[str]:
    """Loop devices (from /sys/block) whose backing file lies under ``root``: sandbox disks not yet freed."""
    found = []
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        try:
            if backing.read_text().strip().startswith(str(root)):
                found.append(backing.parent.parent.name)
        except OSError:  # detached between the glob and the read
            continue
    return found


def sandbox_cgroups(root: Path, *v1_controllers: str) -> list[Path]:
    """Every per-sandbox cgroup of ``root``'s sandboxes (v1 pids and memory hierarchies, or the ones named, or v2).

    Only this root's: another test run on the machine has sandboxes of its own.
    """
    parent = cgroup_parent_name(root)
    found: list[Path] = []
    v1 = [Path("/sys/fs/cgroup") / name for name in v1_controllers or ("pids", "memory")]
    for base in (*v1, Path("/sys/fs/cgroup")):
        found += [p for p in base.rglob(f"{parent}/s*") if p.is_dir()] if base.exists() else []
    return found


async def run_python(client: AsyncSandboxClient, box: str, code: str, timeout: float = 30, **kwargs) -> str:
    """Run ``code`` with the sandbox's python3; its stdout and stderr together."""
    await client.upload_bytes(box, "/tmp/snippet.py", code.encode())
    result = await client.execute_command(box, "python3 /tmp/snippet.py", timeout=timeout, **kwargs)
    return result.stdout + result.stderr
