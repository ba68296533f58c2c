#!/usr/bin/env bash
# The main job, offline: evaluate the bundled reverse-text environment against the bundled
# scripted OpenAI-compatible server (a deterministic stand-in for a model, not a model).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/bootstrap.sh" math
VENV="$ROOT/.venv"
LOG="$(mktemp)"
"$VENV/bin/vf-scripted-server" --policy "reverse:0.3" --port 0 > "$LOG" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 100); do grep -q '^READY' "$LOG" && break; sleep 0.1; done
URL="$(grep '^READY' "$LOG" | awk '{print $2}')"
[ -n "$URL" ] || { echo "scripted server did not start:"; cat "$LOG"; exit 1; }
cd "$ROOT"
"$VENV/bin/vf-eval" reverse-text -m scripted-reverse -b "$URL" -n 20 -r 4 -c 32 "$@"
