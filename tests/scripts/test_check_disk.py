"""scripts/check_disk.sh: test.sh's first step refuses a disk too small for the set-up, with figures."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FRESH_MB = 2200 + 3800 + 750 + 650 + 40  # every venv, as check_disk.sh sizes them
SUITE_MB = 2048


def _run(tmp_path: Path, free_mb: int, venvs: dict[str, int] | None = None, tmpdir: Path | None = None,
         tmp_free_mb: int | None = None) -> subprocess.CompletedProcess[str]:
    """Run the check on a copy of the script with fake ``df``, ``du`` (VENVS' sizes) and ``stat``.

    ``df`` reports FREE_MB for the repo; with TMP_FREE_MB, TMPDIR is another disk with that much free.
    """
    tmp_path.mkdir(exist_ok=True)
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "check_disk.sh", root / "scripts")
    for venv, size_mb in (venvs or {}).items():
        (root / venv / "bin").mkdir(parents=True)
        (root / venv / ".fake_mb").write_text(str(size_mb))
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    split = tmp_free_mb is not None
    (fake_bin / "df").write_text(
        "#!/bin/sh\necho 'Filesystem 1048576-blocks Used Available Capacity Mounted on'\n"
        f'case "$2" in *repo*) free={free_mb};; *) free={tmp_free_mb if split else free_mb};; esac\n'
        "echo \"/dev/x 100000 1 $free 1% /\"\n")
    (fake_bin / "du").write_text('#!/bin/sh\nprintf "%s\\t%s\\n" "$(cat "$2/.fake_mb")" "$2"\n')
    (fake_bin / "stat").write_text(f'#!/bin/sh\ncase "$3" in *repo*) echo 1;; *) echo {2 if split else 1};; esac\n')
    for tool in ("df", "du", "stat"):
        (fake_bin / tool).chmod(0o755)
    env = {**os.environ, "PATH": f"{fake_bin}:{os.environ['PATH']}", "TMPDIR": str(tmpdir or tmp_path)}
    return subprocess.run(["bash", str(root / "scripts" / "check_disk.sh")], env=env, capture_output=True,
                          text=True, check=False)


def test_a_fresh_clone_on_a_small_disk_is_refused_with_figures(tmp_path: Path) -> None:
    result = _run(tmp_path, free_mb=5000)
    assert result.returncode == 1
    assert "5000 MB free" in result.stderr and f"need about {FRESH_MB + SUITE_MB} MB" in result.stderr
    assert "nothing was installed" in result.stderr


def test_installed_venvs_cost_nothing_and_half_built_ones_count(tmp_path: Path) -> None:
    full = {".venv": 2200, ".venv-vllm": 3800, ".venv-vf030": 750, ".venv-vf015": 650, ".venv-pypiserver": 40}
    assert _run(tmp_path / "all", free_mb=SUITE_MB, venvs=full).returncode == 0
    half = _run(tmp_path / "half", free_mb=SUITE_MB, venvs={**full, ".venv-vllm": 300})  # died of ENOSPC
    assert half.returncode == 1 and f"need about {SUITE_MB + 3500} MB" in half.stderr


@pytest.mark.parametrize("free_mb", [FRESH_MB + SUITE_MB, 60000])
def test_enough_room_passes(tmp_path: Path, free_mb: int) -> None:
    result = _run(tmp_path, free_mb=free_mb)
    assert result.returncode == 0, result.stderr


def test_a_missing_tmpdir_is_named(tmp_path: Path) -> None:
    result = _run(tmp_path, free_mb=60000, tmpdir=tmp_path / "nowhere")
    assert result.returncode == 1 and "nowhere is not a folder" in result.stderr


def test_a_separate_tmpdir_disk_is_checked_for_the_suite_alone(tmp_path: Path) -> None:
    assert _run(tmp_path / "ok", free_mb=FRESH_MB, tmp_free_mb=SUITE_MB).returncode == 0
    small_tmp = _run(tmp_path / "tmp", free_mb=60000, tmp_free_mb=500)
    assert small_tmp.returncode == 1 and "500 MB free; the suite's temporary files need about 2048 MB" \
        in small_tmp.stderr
    small_root = _run(tmp_path / "root", free_mb=FRESH_MB - 1, tmp_free_mb=60000)
    assert small_root.returncode == 1 and f"the venvs need about {FRESH_MB} MB" in small_root.stderr
