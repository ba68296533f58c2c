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
PYTHON="$ROOT/.venv/bin/python"
if [ "$#" -gt 0 ]; then
  exec "$PYTHON" -m pytest -q --durations=40 "$@"
fi
# The whole suite runs in two lanes at once, each one pytest process, its tests one after the other: training and
# inference (real vLLM servers and trainers, which keep both cores busy), and everything else (the SDK, the Hub,
# sandboxes, installs: mostly waiting on processes, sockets and disks). Run one after the other they took 39 min;
# side by side the second lane fills the first's idle time. The lanes split by path, so together they are the
# suite: the first lane's paths are exactly what the second ignores.
# tests/trainer_adapter/model (the real model's preparation and `vf-train serve`: mostly pip, disk and one vLLM
# start) runs in the other lane, which has the idle time for it.
TRAINING=(tests/configs tests/examples tests/deploy tests/bench/test_async_rl_smoke.py
          tests/bench/test_learning_reference_smoke.py tests/bench/test_loss_ablation_smoke.py)
for path in tests/trainer_adapter/*; do
  case "$path" in tests/trainer_adapter/model|*/__pycache__) ;; *) TRAINING+=("$path") ;; esac
done
IGNORES=()
for path in "${TRAINING[@]}"; do IGNORES+=("--ignore=$path"); done
training_log="$(mktemp)"
"$PYTHON" -m pytest -q --durations=30 "${TRAINING[@]}" >"$training_log" 2>&1 &
training_pid=$!
set +e
"$PYTHON" -m pytest -q --durations=20 "${IGNORES[@]}"
others=$?
wait "$training_pid"
training=$?
set -e
echo "== the training and inference lane (${TRAINING[*]}) =="
cat "$training_log"
rm -f "$training_log"
if [ "$others" -ne 0 ] || [ "$training" -ne 0 ]; then
  echo "test.sh: failures (training and inference lane: exit $training; the other lane: exit $others)" >&2
  exit 1
fi
# The Hub again on its scale path: a real PostgreSQL (Debian's) and an S3-compatible server (moto) on 127.0.0.1.
scale_env="$(bash "$ROOT/scripts/start_scale_services.sh")"
eval "$scale_env"
trap 'bash "$ROOT/scripts/start_scale_services.sh" stop' EXIT
"$PYTHON" -m pytest -q -m "not slow" "$ROOT/tests/hub_server" --ignore="$ROOT/tests/hub_server/web"
