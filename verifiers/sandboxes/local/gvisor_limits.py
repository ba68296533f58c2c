"""The host cgroup limits of a gVisor sandbox: what its Sentry needs on top of what the guest may use.

Under gVisor the sandbox's cgroup holds runsc's Sentry, gofer and the ptrace platform's stub processes,
never a guest process, so ``max_processes`` is held inside (the guest's ``RLIMIT_NPROC``, which the
Sentry enforces) and the host's ``pids.max`` must be a limit the Sentry never reaches: when a clone of
its own fails, runsc 0.0~20221219 panics (``newSubprocess``: "error initializing first thread: resource
temporarily unavailable", in its ``--panic-log``) and the sandbox is lost.

How many host tasks the Sentry takes grows with the square of the guest's processes, measured with a
Python fork bomb held at ``max_processes`` = P for 15-25 s (P = 16, 64, 128):

- the Sentry has about 2P + 27 threads (59, 155, 283): a guest task in user code holds one;
- the ptrace platform keeps P + 3 stub processes (19, 67, 131): one per guest address space, reused;
- each stub gains a thread for every Sentry thread that ever ran a guest task in it, and keeps it:
  the count climbed for as long as the bomb ran (3,251 host tasks after 25 s at P = 64) and stayed after.

So the bound is (P + 4) stubs x (1 + the Sentry's threads), plus the Sentry and gofer themselves. It
passes the host's whole pid space (``kernel.pid_max``, 32,768 here) near P = 120, so it is capped at a
share of it: with a larger ``max_processes`` a fork bomb can still cost the sandbox, and the sandbox then
says so (``pids.events``' ``max`` counter; see ``LocalSandbox.lost_error``).
"""

from __future__ import annotations

from pathlib import Path

IDLE_TASKS = 96  # runsc (6), the gofer (~48) and the idle Sentry (~28), measured, with some room
SENTRY_MEMORY_BYTES = 96 << 20  # the Sentry and gofer themselves (18-24 MB measured), with room for page tables
TASK_MEMORY_BYTES = 20 << 10  # a host task's kernel stack (16 KiB) and bookkeeping, charged to the memory cgroup
HOST_SHARE = 2  # one sandbox may take at most 1/HOST_SHARE of the host's pids
_PID_MAX = Path("/proc/sys/kernel/pid_max")


def sentry_threads(max_processes: int) -> int:
    """The Sentry's own threads with ``max_processes`` busy guest processes (measured 2P + 27)."""
    return 2 * max_processes + 32


def tasks_needed(max_processes: int) -> int:
    """Host tasks one sandbox's runsc may reach when its guest runs ``max_processes`` processes."""
    threads = sentry_threads(max_processes)
    stubs = max_processes + 4
    return IDLE_TASKS + threads + stubs * (1 + threads)


def host_task_ceiling() -> int:
    """The most host tasks one sandbox may hold: a share of the host's pid space."""
    try:
        pid_max = int(_PID_MAX.read_text())
    except (OSError, ValueError):
        pid_max = 32768  # the kernel's default
    return pid_max // HOST_SHARE


def pids_limit(max_processes: int) -> int:
    """The sandbox cgroup's ``pids.max``: what the Sentry needs, capped by the host's share."""
    return min(tasks_needed(max_processes), host_task_ceiling())


def memory_limit(memory_bytes: int, max_processes: int) -> int:
    """The sandbox cgroup's memory limit: the guest's ``memory_gb`` plus the Sentry and its tasks' stacks."""
    return memory_bytes + SENTRY_MEMORY_BYTES + TASK_MEMORY_BYTES * pids_limit(max_processes)


__all__ = ["pids_limit", "memory_limit", "tasks_needed", "host_task_ceiling", "sentry_threads"]
