#!/usr/bin/env bash
# Multi-turn, tool-using RL with the tiny model on multiply-tool: SFT warm start on gold transcripts, then
# vf-train rl, whose online evaluation gives the held-out reward before (step 0) and after RL.
#   bash examples/tool_env/run.sh            (from the repository root; outputs in outputs/tool_env/)
# Needs .venv (scripts/bootstrap.sh train), .venv-vllm (scripts/setup_vllm_cpu.sh) and the environment:
#   .venv/bin/pip install -e environments/multiply_tool
set -euo pipefail
cd "$(dirname "$0")/../.."
out=outputs/tool_env
rm -rf "$out/sft" "$out/rl"
.venv/bin/python examples/tool_env/write_sft_data.py "$out/sft_data.jsonl" --rows 7800 --env-args '{"min_value": 10, "max_value": 99}'
.venv/bin/vf-train sft configs/tool_env/sft.toml
weights="$(ls -d "$out"/sft/weights/step_* | sort -V | tail -1)"   # where SFT stopped (its loss target)
.venv/bin/vf-train rl configs/tool_env/rl.toml --model.path "$weights"
.venv/bin/python - "$out/rl" <<'PY'
import json, sys
from pathlib import Path
run = Path(sys.argv[1])
rewards = [json.loads(l)["reward"] for l in (run / "orchestrator_metrics.jsonl").read_text().splitlines()]
evals = sorted((e["step"], e["reward"], e.get("temperature", 0.0))
               for e in map(json.loads, (run / "eval_metrics.jsonl").read_text().splitlines()))
k = min(5, len(rewards))
print(f"training reward, first {k} steps: {sum(rewards[:k]) / k:.3f}; last {k}: {sum(rewards[-k:]) / k:.3f}")
how = f"sampled at T={evals[-1][2]:g}" if evals[-1][2] else "greedy"
print(f"held-out reward ({how}): {evals[0][1]:.3f} -> {evals[-1][1]:.3f}")
PY
