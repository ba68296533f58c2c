"""What only the gVisor tier has: runsc's own records (the crash reaper's `runsc delete`) and the Sentry's
host task limit (verifiers/sandboxes/local/gvisor_limits.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_hostcheck import mounts_under, sandbox_cgroups, slot_of

from verifiers.sandboxes import (
    AsyncSandboxClient,
    LocalBackend,
    LocalBackendConfig,
    SandboxNotRunningError,
    SandboxStatus,
)
from verifiers.sandboxes.local import gvisor, gvisor_limits

TIERS = ("gvisor",)  # the backend fixture's tier for every test here
_PY_BOMB = "python3 -c 'import os\nwhile True:\n    try: os.fork()\n    except OSError: pass'"

_OWNER = """
import asyncio, json, sys
from pathlib import Path
from verifiers.sandboxes import AsyncSandboxClient, CreateSandboxRequest, LocalBackend, LocalBackendConfig
async def main():
    client = AsyncSandboxClient(LocalBackend(LocalBackendConfig(root_dir=Path(sys.argv[1]), tier="gvisor")))
    ids = []
    for _ in range(2):
        box = await client.create(CreateSandboxRequest(start_command="sleep 600"))
        await client.wait_for_creation(box.id, timeout=60)
        ids.append(box.id)
    print(json.dumps(ids), flush=True)
    await asyncio.sleep(600)
asyncio.run(main())
"""


def _runsc_containers(root: Path) -> list[str]:
    """The containers runsc itself still lists under ``root``'s state directory."""
    state = root / gvisor.STATE_DIR
    listed = subprocess.run(["runsc", "--root", str(state), "list", "-format", "json"], capture_output=True,
                            text=True, timeout=30, check=True)
    return [c["id"] for c in json.loads(listed.stdout or "[]") or []]


def _runsc_runs(containers: list[str]) -> list[int]:
    """Pids of the `runsc ... run` processes of ``containers`` (not their Sentry or gofer)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"run" in argv and any(name.encode() in argv for name in containers):
            found.append(int(cmdline.parent.name))
    return found


def _pids_in(cgroups: list[Path]) -> list[int]:
    return [int(p) for c in cgroups if (c / "cgroup.procs").exists() for p in (c / "cgroup.procs").read_text().split()]


async def test_a_dead_owners_gvisor_sandboxes_are_reaped_by_the_next_backend(sandbox_root: Path,
                                                                            backend: LocalBackend) -> None:
    # ``backend`` (never started) only skips this where the tier cannot run; the owner has a root of its own
    root = sandbox_root.parent / f"{sandbox_root.name}-gvisor-crash"
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, str(root)], stdout=subprocess.PIPE,
                             start_new_session=True)
    assert owner.stdout is not None
    try:
        ids = json.loads(owner.stdout.readline())
        slots = [slot_of(root, i) for i in ids]
        names = [gvisor.container_id(root, int(s.name), i) for s, i in zip(slots, ids)]
        assert sorted(names) == sorted(_runsc_containers(root))
        # The owner and each `runsc run` die at once (as under a supervisor's SIGKILL of the whole tree).
        # Killed alone, the owner would close the agents' stdin and runsc would clean up by itself.
        for pid in [owner.pid, *_runsc_runs(names)]:
            os.kill(pid, signal.SIGKILL)
    finally:
        owner.kill()
        owner.wait()
    cgroups = sandbox_cgroups(root)
    assert all(s.exists() for s in slots) and cgroups  # left behind: slots, cgroups (the Sentries die with runsc)
    assert sorted(_runsc_containers(root)) == sorted(names)  # and runsc's records of the containers
    backend = LocalBackend(LocalBackendConfig(root_dir=root, tier="gvisor"))
    await backend.start()
    try:
        assert not any(s.exists() for s in slots) and mounts_under(root) == []
        assert sandbox_cgroups(root) == [] and _pids_in(cgroups) == []
        assert not set(names) & set(_runsc_containers(root))  # `runsc delete` dropped them
    finally:
        await backend.close()
        for leftover in root.glob("agent-*.py"):
            leftover.unlink()
        (root / gvisor.STATE_DIR).rmdir()  # runsc keeps nothing more there
        root.rmdir()


async def test_a_sentry_past_the_host_task_ceiling_is_reported_lost(client: AsyncSandboxClient, make_sandbox,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # a host whose share for one sandbox is 400 tasks: the bomb's Sentry needs more (gvisor_limits)
    monkeypatch.setattr(gvisor_limits, "host_task_ceiling", lambda: 400)
    box = await make_sandbox(max_processes=64)
    neighbour = await make_sandbox(max_processes=64)
    with pytest.raises(SandboxNotRunningError, match=r"reached the host's task limit \(pids.max\)"):
        await client.execute_command(box, _PY_BOMB, timeout=30, raise_on_timeout=False)
    record = await client.get(box)
    assert record.status is SandboxStatus.ERROR
    assert record.error_message is not None and "task limit" in record.error_message
    with pytest.raises(SandboxNotRunningError):
        await client.execute_command(box, "true")
    assert (await client.execute_command(neighbour, "echo fine")).stdout == "fine\n"


def test_the_host_task_limit_covers_the_measured_sentry_and_keeps_to_the_hosts_share() -> None:
    # measured at P = 64: 155 Sentry threads, 67 stubs, 3,251 host tasks after 25 s and still climbing
    assert gvisor_limits.sentry_threads(64) >= 155
    assert gvisor_limits.tasks_needed(64) >= 67 * (1 + 155) + 155
    ceiling = gvisor_limits.host_task_ceiling()
    assert ceiling == int(Path("/proc/sys/kernel/pid_max").read_text()) // 2
    assert gvisor_limits.pids_limit(100_000 // 2) == ceiling  # never more than the host's share
