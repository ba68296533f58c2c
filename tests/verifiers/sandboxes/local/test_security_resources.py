"""Spec §4 items 8-13: fork, memory, CPU, disk, output and thread exhaustion stay inside the sandbox."""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import time
from pathlib import Path

from sandbox_fleets import BOTH_TIERS
from sandbox_hostcheck import processes_of_uid, run_python, sandbox_cgroups, slot_of

from verifiers.sandboxes import AsyncSandboxClient, SandboxOOMError, SandboxStatus

TIERS = BOTH_TIERS  # every test here runs on the bubblewrap and the gVisor tier

async def _host_latency_during(task: asyncio.Task, probes: int = 20) -> float:
    """The slowest host ``true`` while ``task`` runs."""
    worst = 0.0
    for _ in range(probes):
        if task.done():
            break
        started = time.perf_counter()
        await asyncio.to_thread(subprocess.run, ["true"])
        worst = max(worst, time.perf_counter() - started)
        await asyncio.sleep(0.1)
    return worst


async def test_fork_bombs_are_capped_and_leave_nothing(client: AsyncSandboxClient, make_sandbox, backend,
                                                       tier: str) -> None:
    box = await make_sandbox(max_processes=64)
    uid = (slot_of(backend.config.root_dir, box) / "files" / "workspace").stat().st_uid
    # the shell returns at once; the bomb goes on in the background
    await client.execute_command(box, ":(){ :|:& };:", timeout=4, raise_on_timeout=False)
    raging = asyncio.create_task(asyncio.sleep(2.5))
    worst = await _host_latency_during(raging)
    assert worst < 1.0, f"host `true` took {worst:.2f} s during the bomb"
    if uid != 0 and tier == "gvisor":  # the Sentry runs the bomb (RLIMIT_NPROC inside): no host process of its uid
        assert processes_of_uid(uid) == []
    elif uid != 0:
        assert 0 < len(processes_of_uid(uid)) <= 64 + 2  # pids.max (plus bwrap's two outer processes)
    await client.delete(box)
    if uid != 0:
        assert processes_of_uid(uid) == []
    # a bomb in the foreground is killed at its timeout, with everything it forked
    box = await make_sandbox(max_processes=64)
    py_bomb = await client.execute_command(
        box, "python3 -c 'import os\nwhile True:\n    try: os.fork()\n    except OSError: pass'",
        timeout=3, raise_on_timeout=False)
    assert py_bomb.timed_out
    # init (bubblewrap only), the agent and the shell that counts; the agent's sweep at the timeout kills the
    # rest, and under gVisor the Sentry takes a moment to finish the exits of a few hundred processes
    deadline = time.monotonic() + 5
    while (live := await _live_processes(client, box)) > 3 and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert live <= 3


async def _live_processes(client: AsyncSandboxClient, box: str) -> int:
    """Processes in the sandbox that are not zombies (bwrap's init reaps those a moment later)."""
    count = await client.execute_command(
        box, "n=0; for s in /proc/[0-9]*/stat; do read -r line < $s 2>/dev/null || continue; "
             "st=${line##*) }; [ \"${st%% *}\" = Z ] || n=$((n+1)); done; echo $n")
    return int(count.stdout)


async def test_memory_bombs_are_oom_killed_and_neighbours_unaffected(client: AsyncSandboxClient, make_sandbox,
                                                                     backend) -> None:
    box, neighbour = await make_sandbox(memory_gb=0.125), await make_sandbox(memory_gb=0.125)
    started = time.perf_counter()
    mmap_bomb = await run_python(client, box, (
        "import mmap\nm = mmap.mmap(-1, 1 << 30)\nfor i in range(0, 1 << 30, 4096):\n    m[i] = 1\n"
        "print('survived')\n"))
    assert "survived" not in mmap_bomb
    assert (await client.execute_command(box, "echo alive")).stdout == "alive\n"
    if backend.capabilities.disk:  # /tmp is on the sandbox's disk image: files past memory_gb are fine
        fill = await client.execute_command(box, "head -c 400000000 /dev/zero > /tmp/fill; echo rc=$?", timeout=20)
        assert "rc=0" in fill.stdout
        assert (await client.execute_command(box, "echo alive")).stdout == "alive\n"
    else:
        # Without one, files in /tmp live in memory and count against memory_gb. Filling them past it fails the
        # writer, and often costs the sandbox itself (reported as SandboxOOMError); the host and the neighbour
        # carry on.
        try:
            fill = await client.execute_command(box, "head -c 400000000 /dev/zero > /tmp/fill; echo rc=$?",
                                                timeout=20)
        except SandboxOOMError:
            assert (await client.get(box)).status is SandboxStatus.ERROR
        else:
            assert "rc=0" not in fill.stdout
    assert time.perf_counter() - started < 20
    assert (await client.execute_command(neighbour, "echo fine")).stdout == "fine\n"


async def test_cpu_share_is_enforced(client: AsyncSandboxClient, make_sandbox, backend, tier: str) -> None:
    box = await make_sandbox(cpu_cores=0.25)
    caps = backend.capabilities
    assert caps is not None
    throttled_before = _throttled(backend.config.root_dir)
    out = await run_python(client, box, (
        "import time\nend = time.monotonic() + 2\nwhile time.monotonic() < end:\n    pass\n"
        "print(time.process_time())\n"))
    cpu_seconds = float(out.strip())
    if caps.cgroups is None or "cpu" not in caps.cgroups.controllers:
        return
    if tier == "gvisor":  # the guest's clock is the Sentry's; the host throttles the Sentry itself
        assert _throttled(backend.config.root_dir) > throttled_before
    else:
        assert cpu_seconds < 1.0, f"{cpu_seconds:.2f} CPU s in 2 wall s at a quarter core"


def _throttled(root: Path) -> int:
    """Periods the host throttled this root's sandboxes for their CPU quota (cgroup v1 or v2 cpu.stat)."""
    total = 0
    for directory in sandbox_cgroups(root, "cpu"):
        if not (directory / "cpu.stat").exists():  # another controller's hierarchy
            continue
        for line in (directory / "cpu.stat").read_text().splitlines():
            if line.startswith("nr_throttled "):
                total += int(line.split()[1])
    return total


async def test_disk_is_capped_and_the_host_disk_untouched(client: AsyncSandboxClient, make_sandbox, backend) -> None:
    sandbox_root = backend.config.root_dir
    before = os.statvfs(sandbox_root)
    box = await make_sandbox(disk_size_gb=0.01)
    big = await client.execute_command(box, "head -c 200000000 /dev/zero > big; echo rc=$?", timeout=30)
    many = await client.execute_command(box, "mkdir m && cd m && for i in $(seq 5000); do echo x > f$i || break; done; "
                                             "ls | wc -l", timeout=60)
    after = os.statvfs(sandbox_root)
    assert "rc=0" not in big.stdout and ("No space" in big.stderr or "File size limit" in big.stderr)
    assert int(many.stdout.split()[-1]) < 5000 and "No space" in many.stderr
    lost = (before.f_bavail - after.f_bavail) * before.f_frsize
    assert lost < 100 * 1024 * 1024, f"the host disk lost {lost} bytes"


async def test_output_floods_are_cut_without_growing_the_host(client: AsyncSandboxClient, make_sandbox) -> None:
    box = await make_sandbox()
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    flood = await client.execute_command(box, "cat /dev/zero | tr '\\0' x & cat /dev/zero >&2", timeout=3,
                                         raise_on_timeout=False)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
    assert flood.timed_out and flood.truncated
    assert grown_kib < 100 * 1024, f"host peak memory grew by {grown_kib} KiB"


async def test_thread_and_descriptor_exhaustion_stay_inside(client: AsyncSandboxClient, make_sandbox,
                                                            tier: str) -> None:
    box = await make_sandbox(max_processes=64)
    out = await run_python(client, box, """
import threading, time, os
threads = 0
try:
    while True:
        threading.Thread(target=time.sleep, args=(5,), daemon=True).start(); threads += 1
except RuntimeError:
    print('threads', threads, flush=True)
files = []
try:
    while True:
        files.append(open('/dev/null'))
except OSError as e:
    print('files', len(files), type(e).__name__, flush=True)
os._exit(0)
""")
    threads = int(out.split("threads ")[1].split()[0])
    assert threads < 64
    # gVisor caps each process's address space at memory_gb (docs/sandboxes.md): the threads' stacks can use it
    # up first, and the descriptors' loop then ends in a MemoryError, which stays inside all the same
    assert "OSError" in out or "files" in out or (tier == "gvisor" and "MemoryError" in out), out
    assert (await client.execute_command(box, "echo alive")).stdout == "alive\n"
