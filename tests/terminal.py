"""A real terminal for tests of terminal programs: a tmux session on a private socket, keys in, screen out."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

COLUMNS, LINES = 160, 48


class Terminal:
    """A tmux session on a private socket with a fixed size: keys in, screen text out."""

    def __init__(self, tmux: str, socket: str) -> None:
        self.tmux = tmux
        self.socket = socket

    def _run(self, *args: str) -> str:
        return subprocess.run([self.tmux, "-L", self.socket, *args], check=True, capture_output=True, text=True,
                              timeout=30).stdout

    def keys(self, *keys: str) -> None:
        for key in keys:  # one at a time, as a user types: Textual reads a burst of bytes as one sequence
            self._run("send-keys", "-t", "tui", key)
            time.sleep(0.3)

    def screen(self) -> str:
        return self._run("capture-pane", "-p", "-t", "tui")

    def exited(self) -> bool:
        """Whether the program in the pane has ended (the pane stays, ``remain-on-exit``, to be read)."""
        return self._run("display-message", "-p", "-t", "tui", "#{pane_dead}").strip() == "1"

    def wait_exited(self, timeout: float = 120) -> None:
        """Until the program in the pane has ended; fails with the screen and the pane's process otherwise.

        Read from tmux's ``pane_dead`` flag, not from the "Pane is dead" line, which newer tmux draws over the pane
        (``remain-on-exit-format``) and an app leaving its alternate screen can leave unshown for a while."""
        deadline = time.monotonic() + timeout
        while not self.exited():
            if time.monotonic() > deadline:
                pid = self._run("display-message", "-p", "-t", "tui", "#{pane_pid}").strip()
                status = Path(f"/proc/{pid}/status").read_text() if Path(f"/proc/{pid}/status").exists() else ""
                state = next((line for line in status.splitlines() if line.startswith("State:")), "gone")
                pytest.fail(f"the program never exited ({state}); the screen shows:\n{self.screen()}")
            time.sleep(0.2)

    def wait_for(self, *texts: str, absent: str | None = None, timeout: float = 30) -> str:
        """The screen, once it shows every one of ``texts`` (and not ``absent``); fails with what it shows."""
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen()
            if all(text in shown for text in texts) and (absent is None or absent not in shown):
                return shown
            if time.monotonic() > deadline:
                pytest.fail(f"the screen never showed {texts} (without {absent!r}); it shows:\n{shown}")
            time.sleep(0.2)


@contextmanager
def tmux_terminal(cwd: Path, env: dict[str, str]) -> Iterator[Callable[..., Terminal]]:
    """``start(*command)`` runs ``command`` in a fresh tmux session (cwd ``cwd``, with ``env`` added) and
    returns its Terminal; every session is killed on exit."""
    tmux = shutil.which("tmux") or ("/usr/bin/tmux" if Path("/usr/bin/tmux").exists() else None)
    if tmux is None:
        pytest.skip("tmux is missing (apt-get install tmux)")
    socket = f"vf-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    config = cwd / "tmux.conf"
    # no status bar (the app gets every line), Esc passed at once, and the pane kept if the app dies (to read it)
    config.write_text("set -g status off\nset -sg escape-time 0\nset -g remain-on-exit on\n")
    # through env(1): tmux's own `-e` does not reach a command's PATH lookup (its server's PATH wins)
    assignments = [f"{name}={value}" for name, value in env.items()]

    def start(*command: str) -> Terminal:
        subprocess.run([tmux, "-L", socket, "-f", str(config), "new-session", "-d", "-s", "tui",
                        "-x", str(COLUMNS), "-y", str(LINES), "-e", "TERM=xterm-256color",
                        "env", *assignments, *command], check=True, timeout=30, cwd=cwd)
        return Terminal(tmux, socket)

    try:
        yield start
    finally:
        subprocess.run([tmux, "-L", socket, "kill-server"], capture_output=True, timeout=30)
