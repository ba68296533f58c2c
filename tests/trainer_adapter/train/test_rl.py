"""The RL trainer process in-process (one rank): batches in, one optimizer step each, weights out."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from trainer_adapter.loss.config import LossConfig
from trainer_adapter.model.config import ModelConfig
from trainer_adapter.model.tiny import load_model
from trainer_adapter.orchestrator.packing import Sample, distribute, pack
from trainer_adapter.train.config import CheckpointConfig
from trainer_adapter.train.export import WEIGHTS_FILE
from trainer_adapter.train.forward import MicroBatchTensors, token_logprobs
from trainer_adapter.train.rl import RLTrainerConfig, run_rl_trainer
from trainer_adapter.transport import write_step

PROMPT = [257, 117, 115, 101, 114, 10, 49, 43, 50, 258, 10, 257, 97, 10]


def _batch(version: int):
    """On-policy micro-batches for the initial weights (what a server holding them would have sampled)."""
    model, _ = load_model(ModelConfig(seed=21))
    completions, advantages = [[51, 258], [52, 53, 258], [51, 51, 258]], [0.5, -0.25, -0.25]
    samples = [Sample(PROMPT + c, [False] * len(PROMPT) + [True] * len(c), [0.0] * (len(PROMPT) + len(c)), a,
                      policy_version=version) for c, a in zip(completions, advantages)]
    micro_batches = pack(samples, seq_len=40)
    for mb in micro_batches:
        with torch.no_grad():
            logprobs, _ = token_logprobs(model.eval(), MicroBatchTensors.from_micro_batch(mb, torch.device("cpu")))
        mb.inference_logprobs = [lp if m else 0.0 for lp, m in zip(logprobs.tolist(), mb.loss_mask)]
    return distribute(micro_batches, 1)


def _config(tmp_path: Path, **kwargs) -> RLTrainerConfig:
    return RLTrainerConfig(**{"model": ModelConfig(seed=21), "output_dir": tmp_path, "max_steps": 3, **kwargs})


def test_three_steps_publish_three_weight_versions(tmp_path: Path) -> None:
    write_step(tmp_path, 0, _batch(version=0))
    write_step(tmp_path, 1, _batch(version=0))
    late = _batch(version=1)

    def write_late() -> None:  # step 2's batch arrives 0.3 s after the trainer finished step 1
        while not (tmp_path / "weights" / "step_2").exists():
            time.sleep(0.01)
        time.sleep(0.3)
        write_step(tmp_path, 2, late)

    threading.Thread(target=write_late, daemon=True).start()
    last = run_rl_trainer(_config(tmp_path, keep_weights=2))
    assert last == tmp_path / "weights" / "step_3"
    assert sorted(p.name for p in (tmp_path / "weights").iterdir()) == ["step_2", "step_3"]
    assert not list((tmp_path / "rollouts").iterdir())  # consumed batches are removed
    lines = [json.loads(line) for line in (tmp_path / "trainer_metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [1, 2, 3]
    assert lines[0]["mismatch_kl"] == pytest.approx(0.0, abs=1e-6)  # step 0 trains the weights that sampled
    assert lines[1]["mismatch_kl"] > 0  # step 1's data came from version 0, trained at version 1
    assert [line["off_policy_max"] for line in lines] == [0, 1, 1]
    assert lines[2]["time/wait_for_batch"] > 0.2
    initial, _ = load_model(ModelConfig(seed=21))
    trained = load_file(last / WEIGHTS_FILE)
    assert not torch.equal(trained["model.embed_tokens.weight"], initial.model.embed_tokens.weight)


def test_a_batch_that_never_comes_times_out(tmp_path: Path) -> None:
    with pytest.raises(TimeoutError, match="no batch for step 0"):
        run_rl_trainer(_config(tmp_path, batch_timeout_s=0.2))


@pytest.mark.parametrize(
    ("kind", "normalization", "kl_coef"),
    [("icepop", "sequence", 0.1), ("ppo", "token", 0.0), ("gspo", "sequence", 0.0), ("cispo", "token", 0.1)],
)
def test_one_step_with_each_loss_type(tmp_path: Path, kind: str, normalization: str, kl_coef: float) -> None:
    write_step(tmp_path, 0, _batch(version=0))
    loss = LossConfig(type=kind, normalization=normalization, kl_coef=kl_coef)
    last = run_rl_trainer(RLTrainerConfig(model=ModelConfig(seed=21), output_dir=tmp_path, max_steps=1, loss=loss))
    (line,) = [json.loads(x) for x in (tmp_path / "trainer_metrics.jsonl").read_text().splitlines()]
    assert line["mismatch_kl"] == pytest.approx(0.0, abs=1e-6) and line["grad_norm"] > 0
    assert ("clipped" in line) == (kind != "icepop")
    if kl_coef:  # the reference is the initial model, which step 0 trains
        assert line["ref_kl"] == pytest.approx(0.0, abs=1e-6)
    else:
        assert "ref_kl" not in line
    initial, _ = load_model(ModelConfig(seed=21))
    trained = load_file(last / WEIGHTS_FILE)
    assert not torch.equal(trained["model.embed_tokens.weight"], initial.model.embed_tokens.weight)


def test_checkpointed_weights_are_kept_and_resume_step_picks_the_checkpoint(tmp_path: Path) -> None:
    """vf-train rl --resume names the step: the trainer loads that checkpoint, not the newest one."""
    for step in range(4):
        write_step(tmp_path, step, _batch(version=step))
    run_rl_trainer(_config(tmp_path, max_steps=4, keep_weights=1, checkpoint=CheckpointConfig(every=2, keep=2)))
    # keep_weights = 1 keeps the newest; step 2's stays beside its checkpoint (the servers resume on it).
    assert sorted(p.name for p in (tmp_path / "weights").iterdir()) == ["step_2", "step_4"]
    straight = load_file(tmp_path / "weights" / "step_4" / WEIGHTS_FILE)

    shutil.rmtree(tmp_path / "weights" / "step_4")  # only a run that trains steps 2 and 3 again writes it
    for step in (2, 3):
        write_step(tmp_path, step, _batch(version=step))
    run_rl_trainer(_config(tmp_path, max_steps=4, resume_step=2, checkpoint=CheckpointConfig(every=2, resume=False)))
    resumed = load_file(tmp_path / "weights" / "step_4" / WEIGHTS_FILE)
    for name, tensor in straight.items():
        torch.testing.assert_close(resumed[name], tensor, rtol=0, atol=1e-6, msg=name)
