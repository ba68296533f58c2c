#!/usr/bin/env bash
# GPU smoke run: the inference side on one GPU, then (when the trainer provides it) a few RL steps.
# Prints what a reviewer needs: time to ready, generation tokens/s, weight-update latency idle and with
# requests in flight; then reward per step. Keep its last output in docs/gpu.md.
#
#   VLLM_PYTHON=/path/to/venv/bin/python bash scripts/gpu_smoke.sh [MODEL_DIR VARIANT_DIR]
#
# What it needs (none of it can be fetched on a machine without network, so bring it):
#   - an NVIDIA GPU (nvidia-smi on PATH);
#   - a Python 3.11 venv with the GPU build of vLLM (`pip install vllm==0.33.*`) and this repo
#     (`pip install -e .`), named by VLLM_PYTHON (default: .venv-gpu/bin/python);
#   - a model: MODEL_DIR and VARIANT_DIR (two Hugging Face folders of the same shapes); without them the
#     tiny model is built in code (needs torch + transformers, which vLLM brings);
#   - for the RL steps nothing more: a 5-step config for the tiny model on arithmetic is written unless
#     GPU_SMOKE_RL_CONFIG names another (vLLM takes 30% of the GPU, the trainer the rest).
# Exit codes: 0 done, 2 a requirement is missing (the message says which).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${VLLM_PYTHON:-$ROOT/.venv-gpu/bin/python}"
cd "$ROOT"

need() { echo "gpu_smoke: $*" >&2; exit 2; }
command -v nvidia-smi >/dev/null 2>&1 || need "no nvidia-smi: this script needs an NVIDIA GPU"
[[ -x "$PY" ]] || need "no Python at $PY: set VLLM_PYTHON to a venv with vllm==0.33 (GPU) and this repo"
"$PY" -c 'import vllm, trainer_adapter.inference' 2>/dev/null || need "$PY cannot import vllm and trainer_adapter"

echo "== machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
"$PY" -c 'import torch, vllm; print("torch", torch.__version__, "| vllm", vllm.__version__)'

echo "== inference: ready time, tokens/s, /update_weights latency (bfloat16)"
model_args=()
if [[ $# -ge 2 ]]; then model_args=(--model "$1" --variant "$2"); fi
"$PY" -m trainer_adapter.inference.measure "${model_args[@]}" --dtype bfloat16 --requests 64 --max-tokens 256 --rounds 10

echo "== RL steps: the tiny model on arithmetic, vLLM and the FSDP2 trainer (NCCL) sharing the GPU"
CONFIG="${GPU_SMOKE_RL_CONFIG:-}"
OUT="$ROOT/outputs/gpu_smoke/rl"
if [[ -z "$CONFIG" ]]; then
    CONFIG="$ROOT/outputs/gpu_smoke/rl.toml"
    mkdir -p "$(dirname "$CONFIG")"
    cat > "$CONFIG" <<EOF
max_steps = 5
output_dir = "$OUT"
[env]
id = "arithmetic"
[orchestrator]
batch_size = 64
rollouts_per_example = 8
max_async_level = 1
max_tokens = 8
[inference]
python = "$PY"
gpu_memory_utilization = 0.3
[trainer.optimizer]
lr = 3e-4
EOF
else
    OUT="$("$PY" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb")).get("output_dir", "outputs/rl"))' "$CONFIG")"
fi
rm -rf "$OUT"
started=$SECONDS
"$PY" -m cli.vf_train rl "$CONFIG"
echo "rl wall: $((SECONDS - started)) s"
"$PY" - "$OUT" <<'EOF'
import json, pathlib, sys
for line in (pathlib.Path(sys.argv[1]) / "orchestrator_metrics.jsonl").read_text().splitlines():
    m = json.loads(line)
    print(f"step {m['step']}: reward {m['reward']:.3f}  update_weights {m.get('time/update_weights', 0):.3f} s  "
          f"wait_for_weights {m.get('time/wait_for_weights', 0):.3f} s  step {m.get('time/step', 0):.2f} s")
EOF
