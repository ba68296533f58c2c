"""The trainer's Prometheus metrics carry what its metrics JSONL says, step for step (RL and SFT, one rank)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from tests.trainer_adapter.train.test_rl import _batch, _config
from trainer_adapter.model.config import ModelConfig
from trainer_adapter.train.config import SFTConfig
from trainer_adapter.train.rl import run_rl_trainer
from trainer_adapter.train.sft import run_sft
from trainer_adapter.train.sft_data import SFTDataConfig
from trainer_adapter.transport import write_step


def _value(name: str) -> float:
    return REGISTRY.get_sample_value(name) or 0.0


def test_an_rl_step_sets_loss_kl_grad_norm_and_counts_its_tokens(tmp_path: Path) -> None:
    write_step(tmp_path, 0, _batch(version=0))
    write_step(tmp_path, 1, _batch(version=0))
    tokens_before, steps_before = _value("vf_trainer_tokens_total"), _value("vf_trainer_step_seconds_count")
    run_rl_trainer(_config(tmp_path, max_steps=2))
    lines = [json.loads(line) for line in (tmp_path / "trainer_metrics.jsonl").read_text().splitlines()]
    last = lines[-1]
    assert _value("vf_trainer_step") == 2
    assert _value("vf_trainer_loss") == pytest.approx(last["loss"])
    assert _value("vf_trainer_mismatch_kl") == pytest.approx(last["mismatch_kl"]) and last["mismatch_kl"] > 0
    assert _value("vf_trainer_grad_norm") == pytest.approx(last["grad_norm"]) and last["grad_norm"] > 0
    assert _value("vf_trainer_tokens_total") - tokens_before == sum(line["tokens"] for line in lines)
    busy = last["time/step"] - last["time/wait_for_batch"]
    assert _value("vf_trainer_tokens_per_second") == pytest.approx(last["tokens"] / busy, rel=1e-6)
    assert _value("vf_trainer_step_seconds_count") - steps_before == 2


def test_sft_records_every_step_not_only_the_logged_ones(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"{i}+1=", "completion": str(i + 1)}) + "\n" for i in range(8)))
    steps_before = _value("vf_trainer_step_seconds_count")
    config = SFTConfig(model=ModelConfig(seed=3), data=SFTDataConfig(path=data, batch_size=4, seq_len=64),
                       max_steps=3, log_every=2, output_dir=tmp_path / "out", threads_per_process=1)
    run_sft(config)
    lines = [json.loads(line) for line in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [2, 3]
    assert _value("vf_trainer_step") == 3 and _value("vf_trainer_step_seconds_count") - steps_before == 3
    assert _value("vf_trainer_loss") == pytest.approx(lines[-1]["loss"])
