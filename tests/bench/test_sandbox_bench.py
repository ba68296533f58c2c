"""The sandbox benchmark: its arguments, its cgroup placement, and a smoke run of the exec comparison."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "sandbox.py"


def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)


@pytest.mark.parametrize("args", [["--repeats", "0"], ["--only", "everything"], ["--cpu-weight", "heavy"]])
def test_bad_arguments_are_refused(args: list[str]) -> None:
    result = _run(*args)
    assert result.returncode == 2 and "error" in result.stderr


def _bench_groups() -> list[Path]:
    cpu = Path("/sys/fs/cgroup/cpu")
    return sorted(cpu.glob("**/vf-sandbox-bench-*")) if cpu.is_dir() else []


@pytest.mark.slow
def test_quick_exec_comparison_reports_medians_and_leaves_nothing(tmp_path: Path) -> None:
    if shutil.which("bwrap") is None:
        pytest.fail("bubblewrap is not installed: run `bash scripts/setup_sandbox.sh` first")
    before = _bench_groups()
    out = tmp_path / "sandbox.json"
    root = Path("/var/tmp") / f"vf-sbx-bench-test-{os.getpid()}"  # sandbox uids must be able to reach it
    try:
        result = _run("--quick", "--only", "exec", "--repeats", "1", "--root", str(root), "--json", str(out),
                      timeout=600)
    finally:
        leftover = root.exists()
        shutil.rmtree(root, ignore_errors=True)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    rows = {(row["command"], row["in_flight"]) for row in report["exec"]}
    assert rows == {("echo 1", 1), ("echo 1", 32), ("python3 -c pass", 1), ("python3 -c pass", 32)}
    assert all(row["p50_ratio"] > 0 and row["rounds"] == 1 for row in report["exec"])
    assert "p50 x" in result.stdout and report["cpu_weight"] == "per_sandbox"
    assert _bench_groups() == before and not leftover
