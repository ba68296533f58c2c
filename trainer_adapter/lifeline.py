"""Child processes of ``vf-train rl`` that go down with it, even when it is killed with ``kill -9``.

A killed launcher runs no cleanup, and neither the vLLM servers (their own session, so that
``InferenceServer.stop`` can signal the whole group) nor torchrun's ranks (torchrun starts each in a
session of its own) are in its process group, so ``kill -9 -PGID`` would leave them running: servers
holding memory, ranks that a resumed run's orchestrator would feed batches. Two mechanisms:

- :func:`parent_death_signal`, a ``preexec_fn`` for processes the launcher starts itself (vLLM,
  torchrun): Linux's ``PR_SET_PDEATHSIG`` sends them SIGTERM when it dies, and they shut down their
  own children (vLLM its engine core, torchrun its ranks) as on any SIGTERM;
- :func:`watch_launcher`, for the trainer ranks (whose parent, torchrun, is killed with the launcher
  by a group kill before it can stop them): a daemon thread that ends the rank once the launcher whose
  pid is in ``VF_TRAIN_LAUNCHER_PID`` is gone.

Elsewhere than Linux both do nothing.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

LAUNCHER_PID_ENV = "VF_TRAIN_LAUNCHER_PID"
"""The launcher's pid, set in the environment of the processes that should not outlive it."""

_PR_SET_PDEATHSIG = 1


def parent_death_signal(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the child receive ``sig`` when this process dies (None off Linux).

    The kernel ties the signal to the thread that forks, so start the child from a thread that
    lives as long as the process (the main thread).
    """
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child should only call it
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, int(sig))
        if os.getppid() != parent:  # the parent died before the signal was armed
            os.kill(os.getpid(), sig)

    return preexec


def stop_process(process: subprocess.Popen[Any], grace: float, *, first: int = signal.SIGTERM,
                 group: bool = False) -> None:  # fmt: skip
    """Stop a child the way every launcher here does: ``first`` (SIGTERM, or SIGINT for a command that cleans up
    on Ctrl-C), up to ``grace`` seconds to exit, then SIGKILL; returns once it is reaped.

    With ``group`` the signals go to the child's process group (a child started with ``start_new_session``:
    vLLM's engine and workers, nginx's workers), and the SIGKILL goes to the group even after the leader exited,
    since its members may outlive it. A child already gone is only reaped.

    >>> stop_process(subprocess.Popen(["sleep", "60"]), grace=5)
    """
    if process.poll() is None:
        _send(process, first, group)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            _send(process, signal.SIGKILL, group)
    if group:
        _send(process, signal.SIGKILL, group)  # what is left of the group: the leader's exit does not end it
    process.wait()


def _send(process: subprocess.Popen[Any], sig: int, group: bool) -> None:
    try:
        if group:
            os.killpg(process.pid, sig)  # the group id is the leader's pid, valid while any member lives
        else:
            process.send_signal(sig)
    except ProcessLookupError:
        pass  # gone already


def launcher_alive(pid: int, started: str | None) -> bool:
    """Whether process ``pid`` still runs and is the one that had start time ``started`` (zombies count as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's: not ours any more
        return False
    stat = _stat(pid)
    if stat is None:
        return True  # no /proc: the signal check is all there is
    state, start = stat
    return state != "Z" and (started is None or start == started)


def watch_launcher(poll_s: float = 1.0) -> threading.Thread | None:
    """End this process (exit status 1) soon after the launcher named by ``VF_TRAIN_LAUNCHER_PID`` is gone.

    Does nothing when the variable is unset (a trainer started by hand, or by torchrun directly).
    """
    raw = os.environ.get(LAUNCHER_PID_ENV, "")
    if not raw.isdigit():
        return None
    pid = int(raw)
    stat = _stat(pid)
    started = stat[1] if stat else None

    def watch() -> None:
        while launcher_alive(pid, started):
            time.sleep(poll_s)
        print(f"the launcher (pid {pid}) is gone: exiting", file=sys.stderr, flush=True)
        os._exit(1)  # no cleanup to wait for: a rank blocked in a collective would never reach it

    thread = threading.Thread(target=watch, name="watch-launcher", daemon=True)
    thread.start()
    return thread


def _stat(pid: int) -> tuple[str, str] | None:
    """(state, start time) of ``pid`` from ``/proc``, or None where there is no ``/proc``."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after the command name, which may hold spaces
    return fields[0], fields[19]


__all__ = ["LAUNCHER_PID_ENV", "launcher_alive", "parent_death_signal", "stop_process", "watch_launcher"]
