"""SFT end to end through ``vf-train sft``: two FSDP2 ranks on gloo learn arithmetic; a killed run resumes exactly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import verifiers as vf
from trainer_adapter.model.config import ModelConfig
from trainer_adapter.model.greedy import exact_match_rate
from trainer_adapter.model.tiny import load_model
from trainer_adapter.train.export import WEIGHTS_FILE, write_hf_folder

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]


def _config(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text.replace("OUT", str(tmp_path / name)))
    return path


def _vf_train(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "trainer_adapter.cli.vf_train", "sft", *args], cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True, **kwargs,
    )


def _finish(proc: subprocess.Popen, timeout: float = 600) -> str:
    output, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, output[-3000:]
    return output


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid``, deepest first (torchrun starts its ranks in their own sessions)."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:
            continue
    return [d for c in children for d in _descendants(c)] + children


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _held_out() -> tuple[list, list[str]]:
    env = vf.load_environment("arithmetic", num_train_examples=0, num_eval_examples=200)
    rows = env.get_eval_dataset()
    return [r["prompt"] for r in rows], list(rows["answer"])


SFT = """
max_steps = 300
output_dir = "OUT"
num_processes = 2
log_every = 50
[data]
env = "arithmetic"
batch_size = 32
[optimizer]
lr = 2e-3
"""


def test_sft_on_two_ranks_improves_held_out_exact_match(tmp_path: Path) -> None:
    # The run builds the same initial model from its seed; it is measured here while the ranks start up
    # (imports, one core each), not before the run.
    run = _vf_train(str(_config(tmp_path, "sft", SFT)))
    prompts, answers = _held_out()
    model, tokenizer = load_model(ModelConfig())
    write_hf_folder(model.state_dict(), model, tokenizer, tmp_path / "initial")
    before = exact_match_rate(tmp_path / "initial", prompts, answers)

    output = _finish(run)
    assert "step=300" in output
    after = exact_match_rate(tmp_path / "sft" / "weights" / "step_300", prompts, answers)
    assert before == 0.0
    assert after >= 0.25, f"held-out exact match {before:.2f} -> {after:.2f}"


RESUME = """
max_steps = 30
output_dir = "OUT"
num_processes = 2
log_every = 5
[data]
env = "arithmetic"
env_args = {num_train_examples = 500, num_eval_examples = 0}
batch_size = 16
[checkpoint]
every = 10
keep = 5
"""


def test_resume_after_kill_9_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    straight = _vf_train(str(_config(tmp_path, "straight", RESUME)))
    _finish(straight)

    killed = _vf_train(str(_config(tmp_path, "killed", RESUME)))
    checkpoints = tmp_path / "killed" / "checkpoints"
    deadline = time.monotonic() + 300
    while not (checkpoints / "step_10" / "progress.json").exists():
        assert killed.poll() is None, killed.communicate()[0][-3000:]
        assert time.monotonic() < deadline, "no checkpoint within 300 s"
        time.sleep(0.2)
    for pid in _descendants(killed.pid):  # the trainer ranks first, then torchrun and vf-train
        _kill(pid)
    _kill(killed.pid)
    killed.communicate()
    assert not (tmp_path / "killed" / "weights").exists()

    output = _finish(_vf_train(str(_config(tmp_path, "killed", RESUME))))
    assert "resumed from" in output
    resumed = load_file(tmp_path / "killed" / "weights" / "step_30" / WEIGHTS_FILE)
    expected = load_file(tmp_path / "straight" / "weights" / "step_30" / WEIGHTS_FILE)
    assert resumed.keys() == expected.keys()
    for name, tensor in expected.items():
        torch.testing.assert_close(resumed[name], tensor, rtol=0, atol=1e-6, msg=name)
