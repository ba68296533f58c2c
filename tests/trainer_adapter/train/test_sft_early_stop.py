"""SFT's early stop: a warm start of a given training loss rather than a given length."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import deque
from pathlib import Path

import pytest

from trainer_adapter.config import load_config
from trainer_adapter.errors import TrainerConfigError
from trainer_adapter.train.config import SFTConfig
from trainer_adapter.train.sft import _reached

ROOT = Path(__file__).resolve().parents[3]


def _config(**fields: object) -> SFTConfig:
    return SFTConfig.model_validate({"data": {"env": "arithmetic"}, **fields})


def test_the_stop_needs_a_full_window_at_or_below_the_target() -> None:
    config = _config(stop_at_loss=0.5, stop_window=3)
    assert not _reached(deque([0.1, 0.1], maxlen=3), config)  # too few steps yet
    assert _reached(deque([0.4, 0.6, 0.5], maxlen=3), config)  # mean exactly 0.5
    assert not _reached(deque([0.4, 0.7, 0.5], maxlen=3), config)
    assert not _reached(deque([0.0, 0.0, 0.0], maxlen=3), _config())  # unset: never


@pytest.mark.parametrize("override", ["stop_at_loss=0", "stop_at_loss=-1", "stop_window=0", "stop_at_loss=low"])
def test_bad_stop_settings_are_refused(override: str, tmp_path: Path) -> None:
    path = tmp_path / "sft.toml"
    path.write_text('[data]\nenv = "arithmetic"\n')
    key, value = override.split("=")
    with pytest.raises(TrainerConfigError, match=key):
        load_config(SFTConfig, path, {key: value if value == "low" else float(value)})


def test_a_run_stops_once_the_target_is_met_and_exports_that_step(tmp_path: Path) -> None:
    out = tmp_path / "sft"
    config = {"max_steps": 50, "output_dir": str(out), "log_every": 100, "stop_at_loss": 100.0, "stop_window": 4,
              "model": {"num_layers": 1, "hidden_size": 32, "num_heads": 2, "num_kv_heads": 1,
                        "intermediate_size": 64},
              "data": {"env": "arithmetic", "env_args": {"num_train_examples": 64}, "batch_size": 4},
              "checkpoint": {"resume": False}}
    path = tmp_path / "sft.json"
    path.write_text(json.dumps(config))
    done = subprocess.run([sys.executable, "-m", "trainer_adapter.train.sft", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert [p.name for p in (out / "weights").iterdir()] == ["step_4"]  # the first full window
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert lines[-1]["step"] == 4 and lines[-1]["stopped_at_loss"] <= 100.0
