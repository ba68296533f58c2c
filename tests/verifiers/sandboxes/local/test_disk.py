"""A sandbox's disk is its own ext4 image: filling it is ENOSPC for the writer, never an OOM kill."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sandbox_hostcheck import loop_devices_under, slot_of

from verifiers.sandboxes import AsyncSandboxClient, LocalBackend

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not Path("/dev/loop-control").exists(),
                                reason="disk images need root and loop devices")


async def test_a_full_disk_is_enospc_and_the_sandbox_lives(client: AsyncSandboxClient, make_sandbox,
                                                           backend: LocalBackend, sandbox_root: Path) -> None:
    box = await make_sandbox(memory_gb=1, disk_size_gb=1)
    assert backend.capabilities is not None and backend.capabilities.disk
    slot = slot_of(sandbox_root, box)
    assert len(loop_devices_under(slot)) == 1
    # 4 GiB through a 1 GiB memory limit: a tmpfs would have OOM-killed the sandbox long before
    fill = await client.execute_command(box, "dd if=/dev/zero of=big bs=1M count=4096; echo rc=$?", timeout=120)
    assert "No space left on device" in fill.stderr and "rc=1" in fill.stdout and not fill.oom_killed
    written = int(fill.stderr.split(" bytes")[0].split("\n")[-1])
    assert 0.9 * (1 << 30) < written < (1 << 30)  # the whole GiB, less ext4's own tables
    # /tmp is on the same disk (disk_size_gb covers both), so it is full too; the sandbox still runs commands
    tmp = await client.execute_command(box, "head -c 10000000 /dev/zero > /tmp/more; echo rc=$?")
    assert "No space left on device" in tmp.stderr and "rc=1" in tmp.stdout
    freed = await client.execute_command(box, "rm big && head -c 10000000 /dev/zero > /tmp/more && echo x")
    assert freed.stdout == "x\n"
    image = slot / "disk.img"
    assert image.stat().st_blocks * 512 < 2 * (1 << 30)  # sparse: it holds what was written, not more
    await client.delete(box)
    assert not image.exists() and loop_devices_under(slot) == []


async def test_disk_size_is_the_requested_one(client: AsyncSandboxClient, make_sandbox) -> None:
    box = await make_sandbox(disk_size_gb=0.25)
    df = await client.execute_command(box, "df -B1 --output=size /workspace /tmp | tail -n 2")
    sizes = [int(v) for v in df.stdout.split()]
    assert sizes[0] == sizes[1] and 0.2 * (1 << 30) < sizes[0] <= 0.25 * (1 << 30)
