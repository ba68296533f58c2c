"""Processes started by ``vf-train rl`` do not outlive it, however it dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainer_adapter.lifeline import LAUNCHER_PID_ENV, launcher_alive

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="n/a off Linux: PR_SET_PDEATHSIG, /proc")


def _python(code: str, **kwargs) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, text=True, **kwargs)


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not launcher_alive(pid, None):
            return True
        time.sleep(0.05)
    return False


def test_a_child_started_with_parent_death_signal_dies_with_its_parent() -> None:
    parent = _python(
        "import subprocess, sys, time\n"
        "from trainer_adapter.lifeline import parent_death_signal\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],\n"
        "                         preexec_fn=parent_death_signal(), start_new_session=True)\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n",
        stdout=subprocess.PIPE,
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert launcher_alive(child, None)
        parent.kill()  # kill -9: no cleanup runs in the parent
        parent.communicate()
        assert _gone_within(child, 10)
    finally:
        if launcher_alive(child, None):
            os.kill(child, signal.SIGKILL)


def test_a_watched_process_exits_when_the_launcher_is_gone() -> None:
    launcher = _python("import time; time.sleep(60)")
    watched = _python("import time\nfrom trainer_adapter.lifeline import watch_launcher\n"
                      "assert watch_launcher(poll_s=0.05) is not None\ntime.sleep(60)\n",
                      env={**os.environ, LAUNCHER_PID_ENV: str(launcher.pid)}, stderr=subprocess.PIPE)
    try:
        time.sleep(1.0)
        assert watched.poll() is None  # the launcher lives: so does the watched process
        launcher.kill()
        launcher.wait()
        _, err = watched.communicate(timeout=10)
        assert watched.returncode == 1 and "is gone: exiting" in err
    finally:
        for process in (launcher, watched):
            if process.poll() is None:
                process.kill()
                process.communicate()


def test_a_reused_pid_is_not_the_launcher() -> None:
    assert launcher_alive(os.getpid(), None)
    assert not launcher_alive(os.getpid(), "0")  # same pid, another start time
