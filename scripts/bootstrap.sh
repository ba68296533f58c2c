#!/usr/bin/env bash
# Create .venv (Python 3.11+) and install the SDK with its environments, and the parts a job needs. Run by
# main.sh and test.sh.
#
#   bash scripts/bootstrap.sh [PART]
#
# PART (the distributions are in distributions/, each installed editable from this checkout):
#   sdk    the SDK (`verifiers[math]`) and the environments (the default)
#   train  that and the trainer (verifiers-trainer: vf-train): the main job, scripts/main.sh
#   test   the SDK's test extra, the trainer and the Hub (verifiers-hub: vf-hub): the suite, scripts/test.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
VENV="$ROOT/.venv"
PART="${1:-sdk}"
case "$PART" in
  sdk) install=(-e "$ROOT[math]") ;;
  train) install=(-e "$ROOT[math]" -e "$ROOT/distributions/trainer") ;;
  test) install=(-e "$ROOT[test]" -e "$ROOT/distributions/trainer" -e "$ROOT/distributions/hub") ;;
  *) echo "bootstrap: unknown part '$PART' (sdk, train or test)" >&2; exit 2 ;;
esac
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
# One pip call, so one resolution: the trainer's and the Hub's pins are weighed with the SDK's.
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "${install[@]}"
for env in "$ROOT"/environments/*/; do
  [ -f "$env/pyproject.toml" ] && "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e "$env"
done
