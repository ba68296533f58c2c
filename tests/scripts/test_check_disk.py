"""scripts/check_disk.sh: test.sh's first step refuses a disk too small for the set-up, with figures."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, free_mb: int, venvs: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    tmp_path.mkdir(exist_ok=True)
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "check_disk.sh", root / "scripts")
    for venv in venvs:
        (root / venv / "bin").mkdir(parents=True)
        (root / venv / "bin" / "python").write_text("")
        (root / venv / "bin" / "python").chmod(0o755)
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    # A df that reports FREE MB on whatever it is asked about, in POSIX (-P) form.
    (fake_bin / "df").write_text(
        "#!/bin/sh\necho 'Filesystem 1048576-blocks Used Available Capacity Mounted on'\n"
        f"echo '/dev/x 100000 1 {free_mb} 1% /'\n"
    )
    (fake_bin / "df").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake_bin}:{os.environ['PATH']}", "TMPDIR": str(tmp_path)}
    return subprocess.run(
        ["bash", str(root / "scripts" / "check_disk.sh")], env=env, capture_output=True, text=True, check=False
    )


def test_fresh_clone_on_a_small_disk_is_refused_with_figures(tmp_path: Path) -> None:
    result = _run(tmp_path, free_mb=5000)
    assert result.returncode == 1
    assert "5000 MB free" in result.stderr
    assert "need about 10648 MB" in result.stderr
    assert "nothing was installed" in result.stderr


def test_installed_venvs_cost_nothing(tmp_path: Path) -> None:
    venvs = (".venv", ".venv-vllm", ".venv-vf030", ".venv-vf015", ".venv-pypiserver")
    assert _run(tmp_path / "all", free_mb=5000, venvs=venvs).returncode == 0
    partly = _run(tmp_path / "one", free_mb=5000, venvs=(".venv",))
    assert partly.returncode == 1 and "need about 8048 MB" in partly.stderr


@pytest.mark.parametrize("free_mb", [10648, 60000])
def test_enough_room_passes(tmp_path: Path, free_mb: int) -> None:
    result = _run(tmp_path, free_mb=free_mb)
    assert result.returncode == 0, result.stderr
