"""Spec §4 items 14-19: timeouts kill everything, nothing outlives a sandbox or a crashed owner, load leaks nothing."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sandbox_hostcheck import loop_devices_under, mounts_under, processes_of_uid, sandbox_cgroups, slot_of

from verifiers.sandboxes import (
    AsyncSandboxClient,
    CreateSandboxRequest,
    LocalBackend,
    LocalBackendConfig,
    SandboxNotRunningError,
)

_BACKGROUND = (
    "nohup sh -c 'trap \"\" TERM HUP; sleep 600' >/dev/null 2>&1 & "
    "python3 -c 'import os, time\nif os.fork() == 0:\n    os.setsid()\n"
    "    if os.fork() == 0:\n        time.sleep(600)' "
    ">/dev/null 2>&1 & setsid sleep 600 >/dev/null 2>&1 &"
)
_DAEMONS = _BACKGROUND + " sleep 600"


async def test_a_timeout_fires_on_time_and_kills_daemons_too(client: AsyncSandboxClient, make_sandbox) -> None:
    box = await make_sandbox()
    started = time.perf_counter()
    result = await client.execute_command(box, _DAEMONS, timeout=2, raise_on_timeout=False)
    elapsed = time.perf_counter() - started
    assert result.timed_out and 1.9 < elapsed < 2.6
    survivors = await client.execute_command(box, "pgrep -c sleep; true")
    assert survivors.stdout.strip() == "0"


async def test_delete_leaves_no_process_cgroup_mount_or_directory(client: AsyncSandboxClient, make_sandbox,
                                                                  sandbox_root: Path) -> None:
    box = await make_sandbox()
    await client.execute_command(box, _BACKGROUND, timeout=10)  # daemons left running in the background
    for _ in range(100):  # the daemons take a moment to start on a busy machine
        running = await client.execute_command(box, "pgrep -c -x sleep; pgrep -c -x python3")
        if running.stdout.split() == ["2", "2"]:  # two sleeps; the agent and the python daemon
            break
        await asyncio.sleep(0.05)
    assert running.stdout.split() == ["2", "2"]
    slot = slot_of(sandbox_root, box)
    uid = (slot / "files" / "workspace").stat().st_uid
    assert sandbox_cgroups(sandbox_root) or os.geteuid() != 0
    await client.delete(box)
    assert not slot.exists() and mounts_under(slot) == [] and sandbox_cgroups(sandbox_root) == []
    assert loop_devices_under(slot) == []
    if uid != 0:
        assert processes_of_uid(uid) == []


_OWNER = """
import asyncio, json, sys
from pathlib import Path
from verifiers.sandboxes import (
    AsyncSandboxClient,
    CreateSandboxRequest,
    LocalBackend,
    LocalBackendConfig,
    SandboxNotRunningError,
)
async def main():
    client = AsyncSandboxClient(LocalBackend(LocalBackendConfig(root_dir=Path(sys.argv[1]))))
    ids = []
    for _ in range(2):
        box = await client.create(CreateSandboxRequest(start_command="sleep 600"))
        await client.wait_for_creation(box.id)
        await client.execute_command(box.id, "setsid sleep 600 >/dev/null 2>&1 &")
        ids.append(box.id)
    print(json.dumps(ids), flush=True)
    await asyncio.sleep(600)
asyncio.run(main())
"""


async def test_sandboxes_die_with_a_killed_owner_and_the_next_start_reaps_the_rest(sandbox_root: Path) -> None:
    root = sandbox_root.parent / f"{sandbox_root.name}-crash"
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, str(root)], stdout=subprocess.PIPE)
    assert owner.stdout is not None
    ids = json.loads(owner.stdout.readline())
    slots = [slot_of(root, i) for i in ids]
    uids = [(s / "files" / "workspace").stat().st_uid for s in slots]
    assert all(processes_of_uid(u) for u in uids if u != 0)
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    deadline = time.monotonic() + 5
    while any(processes_of_uid(u) for u in uids if u != 0) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not any(processes_of_uid(u) for u in uids if u != 0)  # died with their owner
    assert all(s.exists() for s in slots)  # but their directories, mounts and cgroups are left
    images = [s / "disk.img" for s in slots if (s / "disk.img").exists()]
    assert len(loop_devices_under(root)) == len(images)  # and their disk images, still attached
    backend = LocalBackend(LocalBackendConfig(root_dir=root))
    await backend.start()
    try:
        assert not any(s.exists() for s in slots) and mounts_under(root) == []
        assert sandbox_cgroups(root) == [] and loop_devices_under(root) == []
    finally:
        await backend.close()
        for leftover in root.glob("agent-*.py"):
            leftover.unlink()
        root.rmdir()


async def test_sigterm_removes_every_sandbox_before_the_process_dies(sandbox_root: Path) -> None:
    root = sandbox_root.parent / f"{sandbox_root.name}-term"
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, str(root)], stdout=subprocess.PIPE)
    assert owner.stdout is not None
    ids = json.loads(owner.stdout.readline())
    slots = [slot_of(root, i) for i in ids]
    owner.send_signal(signal.SIGTERM)
    assert owner.wait(timeout=20) == -signal.SIGTERM  # it still dies of the signal
    try:
        assert not any(s.exists() for s in slots) and mounts_under(root) == []  # no reaping needed
    finally:
        for leftover in root.glob("agent-*.py"):
            leftover.unlink()
        root.rmdir()


async def test_sandboxes_of_two_roots_never_share_a_host_uid(client: AsyncSandboxClient, make_sandbox,
                                                             sandbox_root: Path) -> None:
    # a root whose range differs from this one's (one pair of roots in 2,047 shares a range)
    mine = LocalBackendConfig(root_dir=sandbox_root).host_uid_base
    candidates = (sandbox_root.parent / f"{sandbox_root.name}-other{i}" for i in range(10))
    other_root = next(r for r in candidates if LocalBackendConfig(root_dir=r).host_uid_base != mine)
    other = AsyncSandboxClient(LocalBackend(LocalBackendConfig(root_dir=other_root)))
    try:
        mine = await make_sandbox()
        theirs = await other.create(CreateSandboxRequest())
        await other.wait_for_creation(theirs.id, timeout=30)
        uids = [(slot_of(root, box) / "files" / "workspace").stat().st_uid
                for root, box in ((sandbox_root, mine), (other_root, theirs.id))]
        if os.geteuid() == 0:  # without root every sandbox runs as the caller
            assert uids[0] != uids[1]  # both are slot 0 of their root
    finally:
        await other.backend.close()
        shutil.rmtree(other_root, ignore_errors=True)


async def _cycle(client: AsyncSandboxClient, i: int) -> float:
    started = time.perf_counter()
    box = await client.create(CreateSandboxRequest(labels=["load"]))
    result = await client.execute_command(box.id, f"echo {i}")
    assert result.stdout == f"{i}\n"
    await client.delete(box.id)
    return time.perf_counter() - started


async def _load(client: AsyncSandboxClient, sandbox_root: Path, count: int, in_flight: int) -> list[float]:
    gate = asyncio.Semaphore(in_flight)

    async def one(i: int) -> float:
        async with gate:
            return await _cycle(client, i)

    latencies = await asyncio.gather(*(one(i) for i in range(count)))
    assert await client.list() == [] and [p.name for p in sandbox_root.iterdir()  # no slot, no probe's image
                                          if p.name.isdigit() or p.name.startswith(".probe")] == []
    assert mounts_under(sandbox_root) == [] and sandbox_cgroups(sandbox_root) == []
    assert loop_devices_under(sandbox_root) == []
    assert isinstance(client.backend, LocalBackend)
    config = client.backend.config
    uids = range(config.host_uid_base, config.host_uid_base + config.max_sandboxes + 1)  # + the probe's
    assert [pid for uid in uids for pid in processes_of_uid(uid)] == []
    return sorted(latencies)


async def test_32_concurrent_cycles_leak_nothing(client: AsyncSandboxClient, sandbox_root: Path) -> None:
    latencies = await _load(client, sandbox_root, 32, 32)
    assert len(latencies) == 32


@pytest.mark.slow
async def test_1000_cycles_at_32_in_flight_leak_nothing(client: AsyncSandboxClient, sandbox_root: Path) -> None:
    started = time.perf_counter()
    latencies = await _load(client, sandbox_root, 1000, 32)
    assert latencies[len(latencies) // 2] < 5.0
    print(f"1000 cycles in {time.perf_counter() - started:.1f} s, p50 {latencies[500]:.2f} s")


async def test_ended_sandboxes_tell_why(client: AsyncSandboxClient, make_sandbox, backend: LocalBackend) -> None:
    box = await make_sandbox()
    await backend.delete(box)
    assert (await backend.get(box)).status.value == "TERMINATED"
    with pytest.raises(SandboxNotRunningError, match="was deleted"):
        await backend.wait_ready(box, 1)
