#!/usr/bin/env bash
# Create .venv (Python 3.11+) and install the SDK with its environments. Sourced by main.sh and test.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
VENV="$ROOT/.venv"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
EXTRAS="${1:-math}"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "$ROOT[$EXTRAS]"
for env in "$ROOT"/environments/*/; do
  [ -f "$env/pyproject.toml" ] && "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e "$env"
done
