"""A workload that runs out of memory is killed; the sandbox's agent and the sandbox live on.

The agent used to die when memory was held by no process: files in a tmpfs (``/tmp`` before disk images,
``/dev`` and ``/dev/shm`` until now) stay charged to the sandbox's memory cgroup after their writer is
killed, so the kernel's next choice was the agent, or every later command was killed at once.
"""

from __future__ import annotations

import os

import pytest

from verifiers.sandboxes import AsyncSandboxClient, LocalBackend

_ALLOCATE = "python3 -c 'b = bytearray(2 << 30); b[::4096] = b\"x\" * len(b[::4096]); print(\"survived\")'"


async def test_a_command_past_memory_gb_is_oom_killed_and_the_sandbox_lives(client: AsyncSandboxClient,
                                                                           make_sandbox,
                                                                           backend: LocalBackend) -> None:
    box = await make_sandbox(memory_gb=0.25)
    assert backend.capabilities is not None
    if backend.capabilities.cgroups is None or "memory" not in backend.capabilities.cgroups.controllers:
        pytest.skip("no memory cgroup: memory is capped by RLIMIT_AS, a MemoryError rather than a kill")
    for _ in range(3):  # again and again: each kill leaves the sandbox as it was
        killed = await client.execute_command(box, _ALLOCATE, timeout=60)
        assert killed.oom_killed and killed.exit_code == 137 and "survived" not in killed.stdout
        alive = await client.execute_command(box, "echo alive")
        assert alive.stdout == "alive\n" and not alive.oom_killed


@pytest.mark.skipif(os.geteuid() != 0, reason="/dev/shm on the disk image needs root's loop mounts")
async def test_no_tmpfs_in_the_sandbox_holds_memory_after_its_writer_dies(client: AsyncSandboxClient,
                                                                         make_sandbox) -> None:
    box = await make_sandbox(memory_gb=0.25, disk_size_gb=1)
    # /dev/shm (POSIX shared memory, multiprocessing's locks) is on the sandbox's disk: 400 MB fit in 256 MiB
    shm = await client.execute_command(box, "head -c 400000000 /dev/zero > /dev/shm/fill; echo rc=$?", timeout=60)
    assert shm.stdout == "rc=0\n" and not shm.oom_killed
    lock = await client.execute_command(box, "python3 -c 'import multiprocessing as m; print(m.Lock())'")
    assert "Lock" in lock.stdout
    # /dev itself is read-only: it is a tmpfs that would be charged to memory
    dev = await client.execute_command(box, "head -c 1000 /dev/zero > /dev/fill; echo rc=$?")
    assert "Read-only file system" in dev.stderr and "rc=1" in dev.stdout
    assert (await client.execute_command(box, "echo alive")).stdout == "alive\n"
