"""scripts/gpu_smoke.sh's config step: the GPU config plus KEY=VALUE options, checked before any GPU time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.gpu_smoke_config import main, resolve
from trainer_adapter.main_job_config import MainJobConfig

ROOT = Path(__file__).resolve().parents[2]
GPU_TOML = ROOT / "configs" / "main_job" / "gpu.toml"


def test_the_script_settings_come_first_and_options_win(tmp_path: Path) -> None:
    config = resolve(GPU_TOML, ["rl.steps=7", "--eval.num_examples=50"], tmp_path / "job", Path("/venv/bin/python"))
    assert (config.output_dir, config.vllm_python) == (tmp_path / "job", Path("/venv/bin/python"))
    assert (config.rl.steps, config.eval.num_examples) == (7, 50)
    assert resolve(GPU_TOML, [f"output_dir={tmp_path / 'x'}"], tmp_path / "job", Path("p")).output_dir == tmp_path / "x"


def test_main_writes_the_resolved_config_and_prints_the_job_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "smoke" / "main_job.json"
    assert main([str(GPU_TOML), str(out), str(tmp_path / "job"), "/venv/bin/python", "sft.steps=9"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "job")
    written = MainJobConfig.model_validate(json.loads(out.read_text()))
    assert written.sft.steps == 9 and written.server.gpu_memory_utilization == 0.3


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["rl.stepz=3"], "unknown config key 'rl.stepz'"),
        (["rl.steps=0"], "rl.steps"),
        (["sft.num_heads=5"], "hidden_size must divide"),
        (["no-equals-sign"], "not KEY=VALUE"),
    ],
)
def test_bad_options_exit_2_with_the_reason(
    options: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "main_job.json"
    assert main([str(GPU_TOML), str(out), str(tmp_path / "job"), "python", *options]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_a_config_that_would_leave_the_trainer_no_gpu_memory_is_refused(tmp_path: Path) -> None:
    cpu_like = tmp_path / "cpu.toml"
    cpu_like.write_text("[rl]\nsteps = 2\n")
    with pytest.raises(TrainerConfigError, match="gpu_memory_utilization is unset"):
        resolve(cpu_like, [], tmp_path / "job", Path("python"))


def test_missing_arguments_or_config_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(GPU_TOML)]) == 2
    assert "usage:" in capsys.readouterr().err
    assert main([str(tmp_path / "nope.toml"), str(tmp_path / "o.json"), str(tmp_path), "python"]) == 2
    assert "does not exist" in capsys.readouterr().err
