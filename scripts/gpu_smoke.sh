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
#   - for the RL steps: the trainer's `vf-train` with a GPU config in GPU_SMOKE_RL_CONFIG.
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

echo "== RL steps"
if [[ -n "${GPU_SMOKE_RL_CONFIG:-}" ]] && command -v vf-train >/dev/null 2>&1; then
    vf-train rl "$GPU_SMOKE_RL_CONFIG"
else
    echo "skipped: set GPU_SMOKE_RL_CONFIG to a vf-train RL config (and put vf-train on PATH) to run them"
fi
