#!/usr/bin/env bash
# GPU smoke run: the main job's recipe at GPU scale on one NVIDIA GPU, then one summary block.
#
#   VLLM_PYTHON=/path/to/venv/bin/python bash scripts/gpu_smoke.sh [KEY=VALUE ...]
#
# 1. checks what it needs (below) and the main job config (configs/main_job/gpu.toml, or GPU_SMOKE_CONFIG,
#    plus the KEY=VALUE options, e.g. rl.steps=10), before any GPU time is spent;
# 2. builds the config's model in code (~104M parameters, no download) and a perturbed copy, and measures
#    vLLM on it in bfloat16: time to ready, generation tokens/s, /update_weights latency idle and with
#    requests in flight (trainer_adapter.inference.measure);
# 3. runs the main job on it (vf-train main): SFT warm start on arithmetic, vf-eval, RL (the FSDP2 trainer
#    on NCCL in bfloat16 and vLLM sharing the GPU), vf-eval; progress is printed as it goes;
# 4. prints one block: reward per RL step, held-out reward before -> after, mismatch KL, /update_weights
#    latency, generation and trainer tokens/s, wall times (trainer_adapter.gpu_smoke_report).
# Everything lands in outputs/gpu_smoke/ (GPU_SMOKE_OUT), replaced on every run.
#
# What it needs (none of it can be fetched on a machine without network, so bring it):
#   - an NVIDIA GPU (nvidia-smi on PATH, and visible to torch);
#   - a Python 3.11 venv with the GPU build of vLLM (`pip install vllm==0.33.*`) and this repo
#     (`pip install -e . -e distributions/trainer`), named by VLLM_PYTHON (default: .venv-gpu/bin/python).
# Exit codes: 0 done; 2 a requirement is missing or the config/an option is bad (the message says which);
# any other: a phase failed (the message names it; its logs are under outputs/gpu_smoke/).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${VLLM_PYTHON:-$ROOT/.venv-gpu/bin/python}"
CONFIG="${GPU_SMOKE_CONFIG:-$ROOT/configs/main_job/gpu.toml}"
OUT="${GPU_SMOKE_OUT:-$ROOT/outputs/gpu_smoke}"
cd "$ROOT"

need() { echo "gpu_smoke: $*" >&2; exit 2; }
case "${1:-}" in
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
for option in "$@"; do
    [[ "$option" == *=* ]] || need "option '$option' is not KEY=VALUE (e.g. rl.steps=10); see --help"
done
[[ -f "$CONFIG" ]] || need "no main job config at $CONFIG (GPU_SMOKE_CONFIG)"
command -v nvidia-smi >/dev/null 2>&1 || need "no nvidia-smi: this script needs an NVIDIA GPU"
[[ -x "$PY" ]] || need "no Python at $PY: set VLLM_PYTHON to a venv with vllm==0.33 (GPU) and this repo"
"$PY" -c 'import vllm, trainer_adapter.inference, trainer_adapter.train' 2>/dev/null \
    || need "$PY cannot import vllm and trainer_adapter (pip install vllm==0.33.* and -e . -e distributions/trainer there)"
"$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' \
    || need "torch in $PY sees no CUDA device (a CPU build of torch, or CUDA_VISIBLE_DEVICES hides the GPU)"
"$PY" -c 'import matplotlib' 2>/dev/null \
    || need "$PY cannot import matplotlib, which the job's reward curves need (pip install -e distributions/trainer there)"

mkdir -p "$OUT"
JOB_JSON="$OUT/main_job.json"
JOB_DIR="$("$PY" -m trainer_adapter.gpu_smoke_config "$CONFIG" "$JOB_JSON" "$OUT/main_job" "$PY" "$@")" || exit $?

phase="start"
trap 'status=$?; echo "gpu_smoke: failed during $phase (exit $status); logs under $OUT" >&2' ERR
started=$SECONDS

echo "== machine"
phase="machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
"$PY" -c 'import torch, vllm; print("torch", torch.__version__, "| vllm", vllm.__version__, "| cuda", torch.version.cuda)'

echo "== inference: the job's model (built in code), bfloat16: ready time, tokens/s, /update_weights latency"
phase="the model build"
rm -rf "$OUT/models"
"$PY" -m trainer_adapter.inference.testing_model "$OUT/models" --main-job "$JOB_JSON"
phase="the inference measurement"
clock=$SECONDS
"$PY" -m trainer_adapter.inference.measure --model "$OUT/models/base" --variant "$OUT/models/variant" \
    --dtype bfloat16 --requests 256 --max-tokens 256 --rounds 5 --log "$OUT/measure_vllm.log" \
    --json "$OUT/measure.json"
measure_s=$((SECONDS - clock))
rm -rf "$OUT/models"  # two copies of the weights; the job builds its own

echo "== the main job at GPU scale: $JOB_JSON"
phase="the main job (vf-train main; its phase logs are in $JOB_DIR)"
clock=$SECONDS
"$PY" -m trainer_adapter.cli.vf_train main "$JOB_JSON"
job_s=$((SECONDS - clock))

phase="the summary"
echo
"$PY" -m trainer_adapter.gpu_smoke_report --measure "$OUT/measure.json" --job "$JOB_DIR" \
    --wall "measure=$measure_s" --wall "main_job=$job_s" --wall "total=$((SECONDS - started))"
