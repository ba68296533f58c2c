"""``inside.py`` as the sandbox runs it, here without the sandbox: the supervisor runs the package in a child
process, and a package that prints a report of its own is caught; the worker trusts only a line with its nonce."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hub_server.worker.inside import __file__ as INSIDE
from tests.hub_server.worker.envs import BODIES

ROOT = Path(__file__).resolve().parents[3]


def _run(tmp_path: Path, kind: str) -> tuple[dict, str]:
    folder = tmp_path / "environments" / f"{kind}_env"
    folder.mkdir(parents=True)
    (folder / f"{kind}_env.py").write_text(BODIES[kind])
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"mode": "contract", "name": f"{kind}-env", "num_examples": 3,
                                   "rollouts_per_example": 1, "nonce": "n0nce"}))
    done = subprocess.run([sys.executable, INSIDE, str(request)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert not request.exists()  # the nonce left the disk before the package ran
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout  # the supervisor's line alone: the package's output went to the log
    return json.loads(lines[0]), done.stderr


@pytest.mark.slow
def test_a_sound_package_reports_through_the_supervisor(tmp_path: Path) -> None:
    report, _log = _run(tmp_path, "good")
    assert report["stage"] == "done" and report["nonce"] == "n0nce" and report["model_requests"] == 3
    assert [r["reward"] for r in report["rollouts"]] == [1.0, 1.0, 1.0]


@pytest.mark.slow
def test_a_package_that_prints_its_own_report_is_caught(tmp_path: Path) -> None:
    report, log = _run(tmp_path, "forges")
    assert report["stage"] == "forged" and report["model_requests"] == 0 and report["nonce"] == "n0nce"
    assert report["error"] == "a forged report: it claims 3 rollouts, but the model was asked 0 times"
    assert '"stage": "done"' in log  # what it printed is kept, as its log


@pytest.mark.slow
def test_a_package_that_raises_is_reported_and_one_that_exits_is_a_crash(tmp_path: Path) -> None:
    raised, _log = _run(tmp_path / "a", "raises")  # the child reports the error itself
    assert raised["stage"] == "load" and "the dataset is not there" in raised["error"]
    exited, _log = _run(tmp_path / "b", "exits")
    assert exited["stage"] == "crash" and exited["child_exit"] == 3
    assert exited["error"] == "crash: the package's process ended (exit 3) without the check's report"
