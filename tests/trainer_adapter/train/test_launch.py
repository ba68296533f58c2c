"""trainer_adapter.train.launch: the ranks' command line, environment and thread count."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from trainer_adapter.train.launch import RANK_ENV, default_threads, launch, rank_environment, torchrun_command


def test_ranks_wait_passively_unless_the_user_chose_otherwise() -> None:
    env = rank_environment({"PATH": "/bin"})
    assert env == {"PATH": "/bin", **RANK_ENV} and env["OMP_WAIT_POLICY"] == "PASSIVE"
    assert rank_environment({"OMP_WAIT_POLICY": "ACTIVE"})["OMP_WAIT_POLICY"] == "ACTIVE"


def test_the_default_environment_is_this_processs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VF_LAUNCH_TEST", "1")
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    env = rank_environment()
    assert env["VF_LAUNCH_TEST"] == "1" and env["OMP_WAIT_POLICY"] == "PASSIVE"
    assert "OMP_WAIT_POLICY" not in os.environ  # the launcher's own environment is left alone


def test_threads_share_the_cores_among_the_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert [default_threads(n) for n in (1, 2, 3, 16)] == [8, 4, 2, 1]
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # unknown: one thread
    assert default_threads(1) == 1


def test_torchrun_starts_the_module_on_loopback() -> None:
    command = torchrun_command("pkg.mod", ["cfg.toml", "a=1"], nproc=2, port=29999)
    assert command[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert "--nproc-per-node=2" in command and "--master-addr=127.0.0.1" in command
    assert "--master-port=29999" in command and command[-3:] == ["pkg.mod", "cfg.toml", "a=1"]


def test_launched_ranks_wait_passively(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through torchrun for real: each rank's environment has the policy (read at OpenMP's start-up)."""
    (tmp_path / "rank_probe.py").write_text(
        "import os, sys\n"
        "open(os.path.join(sys.argv[1], 'rank_' + os.environ['RANK']), 'w').write(os.environ['OMP_WAIT_POLICY'])\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert launch("rank_probe", [str(tmp_path)], nproc=2) == 0
    assert [(tmp_path / f"rank_{r}").read_text() for r in (0, 1)] == ["PASSIVE", "PASSIVE"]
