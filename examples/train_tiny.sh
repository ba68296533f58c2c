#!/usr/bin/env bash
# A short training run of the tiny model, offline: an SFT warm start, then a few steps of RL on real vLLM.
#
# `vf-train sft` fine-tunes the tiny model (built in code, nothing downloaded) for a few dozen steps on the
# bundled arithmetic and reverse-text environments; `vf-train rl` then trains it with the policy gradient:
# a vLLM server on CPU generating the rollouts, the trainer stepping, and the new weights loaded into the
# server between steps. Both take the shipped configs (configs/mix/) and shrink them with options: every
# config key is also a flag. A few steps learn little; they show the pieces working together
# (the full recipe: `bash scripts/main.sh`, docs/trainer.md).
#
#   bash examples/train_tiny.sh [OUT]         (OUT: the run folder, default outputs/train_tiny; about 3 min)
#
# Needs .venv with the trainer (scripts/bootstrap.sh train) and .venv-vllm (bash scripts/setup_vllm_cpu.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-outputs/train_tiny}"
if [ ! -x .venv-vllm/bin/python ]; then
    echo "needs .venv-vllm with vLLM on CPU: bash scripts/setup_vllm_cpu.sh" >&2
    exit 2
fi
rm -rf "$out/sft" "$out/rl"   # a fresh run each time (vf-train would otherwise resume from what is there)

echo "== SFT warm start"
.venv/bin/vf-train sft configs/mix/sft.toml --output-dir "$out/sft" --max-steps 40 --log-every 10 \
    --model.num-layers 2 --checkpoint.every 0
weights="$(ls -d "$out"/sft/weights/step_* | sort -V | tail -n 1)"

echo "== RL from $weights"
# 8 problems x 4 rollouts a step; the held-out reward of both environments before and after (steps 0 and 2).
.venv/bin/vf-train rl configs/mix/rl.toml --model.path "$weights" --output-dir "$out/rl" --max-steps 2 \
    --orchestrator.batch-size 32 --orchestrator.rollouts-per-example 4 --orchestrator.max-inflight-groups 8 \
    --orchestrator.eval-every 2 --orchestrator.eval-examples 8 --orchestrator.eval-rollouts-per-example 1

.venv/bin/python - "$out" <<'PY'
import json
import sys
from pathlib import Path

out = Path(sys.argv[1])
def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]
sft = lines(out / "sft" / "metrics.jsonl")
print(f"sft: loss {sft[0]['loss']:.3f} at step {sft[0]['step']} -> {sft[-1]['loss']:.3f} at step {sft[-1]['step']}")
trainer = lines(out / "rl" / "trainer_metrics.jsonl")
print(f"rl: {len(trainer)} trainer steps, mismatch KL (trainer vs vLLM logprobs) "
      + ", ".join(f"{t['mismatch_kl']:.1e}" for t in trainer))
evals = sorted(lines(out / "rl" / "eval_metrics.jsonl"), key=lambda e: e["step"])
print(f"held-out reward: {evals[0]['reward']:.3f} -> {evals[-1]['reward']:.3f} (steps {evals[0]['step']} -> "
      f"{evals[-1]['step']})")
PY
