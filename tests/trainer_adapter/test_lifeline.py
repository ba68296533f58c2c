"""Processes started by ``vf-train rl`` do not outlive it, however it dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainer_adapter.lifeline import LAUNCHER_PID_ENV, launcher_alive, stop_process

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


# -- stop_process: the one terminate -> wait -> kill of every launcher ------------------------------------------

IGNORES_TERM = ("import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "print('ready', flush=True)\ntime.sleep(60)")


def test_a_child_that_exits_on_sigterm_is_reaped_within_its_grace() -> None:
    child = _python("import time\ntime.sleep(60)")
    started = time.monotonic()
    stop_process(child, grace=30)
    assert child.returncode == -signal.SIGTERM and time.monotonic() - started < 10


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    child = _python(IGNORES_TERM, stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    started = time.monotonic()
    stop_process(child, grace=1)
    assert child.returncode == -signal.SIGKILL and 1 <= time.monotonic() - started < 10


def test_sigint_first_lets_a_command_clean_up_as_on_ctrl_c() -> None:
    # the handler set explicitly: a child of a background job (test.sh's lanes) inherits SIGINT ignored
    child = _python("import signal, time\nsignal.signal(signal.SIGINT, signal.default_int_handler)\ntry:\n"
                    "    print('ready', flush=True)\n    time.sleep(60)\n"
                    "except KeyboardInterrupt:\n    print('cleaned up', flush=True)", stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    stop_process(child, grace=30, first=signal.SIGINT)
    assert child.returncode == 0 and child.stdout.read() == "cleaned up\n"


def test_a_group_member_that_outlives_its_leader_is_killed_too() -> None:
    # the leader exits on SIGTERM at once; its child ignores SIGTERM (vLLM's engine after its API server died)
    leader = _python("import subprocess, sys, time\n"
                     f"child = subprocess.Popen([sys.executable, '-c', {IGNORES_TERM!r}], stdout=subprocess.PIPE)\n"
                     "child.stdout.readline()\nprint(child.pid, flush=True)\ntime.sleep(60)",
                     stdout=subprocess.PIPE, start_new_session=True)
    assert leader.stdout is not None
    member = int(leader.stdout.readline())
    stop_process(leader, grace=30, group=True)
    assert leader.returncode == -signal.SIGTERM and _gone_within(member, 10)


def test_a_child_already_gone_is_only_reaped() -> None:
    child = _python("pass")
    child.wait()
    stop_process(child, grace=1)
    stop_process(child, grace=1, group=True)
    assert child.returncode == 0
