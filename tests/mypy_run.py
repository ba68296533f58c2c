"""The type checker's run over the source packages, started when the session's tests are known.

A cold run (a clean clone has no ``.mypy_cache``) reads every package the code imports (torch, transformers,
openai, ...): about 50 s of one core on the 2-core development machine, the whole of which the suite used to wait
for. When ``tests/test_typecheck.py::test_mypy_finds_nothing`` is among the session's tests, ``tests/conftest.py``
starts that same command at collection's end at the lowest CPU priority (nice 19): it runs on the cycles the
tests before it leave idle and yields the cores to any of them that wants them, and the test only collects what
it printed (if it is still running then, it gets the usual priority back for the rest). Run alone, the test runs
it itself; either way the command, its working folder and its cache are the same.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]
MYPY = Path(sys.executable).parent / "mypy"  # installed with the test extra
CONFIG = ROOT / "pyproject.toml"
TEST_ID = "tests/test_typecheck.py::test_mypy_finds_nothing"
TIMEOUT_S = 600


def command(*args: str) -> list[str]:
    assert MYPY.is_file(), f"no mypy at {MYPY}: install the test extra (bash scripts/bootstrap.sh test)"
    return [str(MYPY), "--config-file", str(CONFIG), *args]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(*args), cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S)


class _Early:
    def __init__(self) -> None:
        self.out: IO[bytes] = tempfile.TemporaryFile()
        self.err: IO[bytes] = tempfile.TemporaryFile()
        self.process = subprocess.Popen(command(), cwd=ROOT, stdout=self.out, stderr=self.err,
                                        stdin=subprocess.DEVNULL, preexec_fn=lambda: os.nice(19))  # fmt: skip

    def result(self) -> subprocess.CompletedProcess[str]:
        if self.process.poll() is None:  # not done: the test waits for it, so it runs at the usual priority now
            try:
                os.setpriority(os.PRIO_PROCESS, self.process.pid, 0)
            except PermissionError:  # raising a priority takes root: run it anew (its cache keeps what it did)
                self.stop()
                return run(cwd=ROOT)
        try:
            code = self.process.wait(timeout=TIMEOUT_S)
        finally:
            self.stop()
        streams = []
        for stream in (self.out, self.err):
            stream.seek(0)
            streams.append(stream.read().decode(errors="replace"))
            stream.close()
        return subprocess.CompletedProcess(self.process.args, code, *streams)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


_early: _Early | None = None


def start_early(node_ids: list[str]) -> None:
    """Start the whole-tree run now when the session will ask for it (``node_ids``: the session's tests)."""
    global _early
    if _early is None and TEST_ID in node_ids and MYPY.is_file():
        _early = _Early()


def result() -> subprocess.CompletedProcess[str]:
    """The whole-tree run's outcome: the one started early (waited for), else a run made now."""
    global _early
    early, _early = _early, None
    return early.result() if early is not None else run(cwd=ROOT)


def stop_early() -> None:
    """The session ends: a run nobody collected (the test was not reached) is killed."""
    global _early
    if _early is not None:
        _early.stop()
        _early = None
