#!/usr/bin/env bash
# A separate venv holding pypiserver 2.4 (the Hub benchmark's peer) with its directory cache (the
# `cache` extra: watchdog) and waitress, the WSGI server pypiserver picks first when it is installed:
# its own recommended setup for real use.
#
#   bash scripts/setup_pypiserver.sh [DIR]      default DIR: .venv-pypiserver
#
# Idempotent: does nothing when DIR already runs pypiserver 2.4.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${1:-$ROOT/.venv-pypiserver}"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3

version() {
    "$DIR/bin/python" -I -c 'import importlib.metadata as m; print(m.version("pypiserver"))' 2>/dev/null || true
}
if [[ -x "$DIR/bin/pypi-server" && "$(version)" == 2.4.* ]]; then
    echo "setup_pypiserver: $DIR already has pypiserver $(version)"
    exit 0
fi
"$PY" -m venv "$DIR"
"$DIR/bin/python" -m pip install --quiet --disable-pip-version-check "pypiserver[cache]==2.4.*" "waitress>=3" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
echo "setup_pypiserver: $DIR ready with pypiserver $(version)"
