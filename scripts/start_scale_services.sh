#!/usr/bin/env bash
# Start the Hub's scale-path services on 127.0.0.1: PostgreSQL (scripts/setup_postgres.sh) and an
# S3-compatible server (moto's server mode, from the project's .venv). Prints the variables the
# scale-path test run reads, as `export` lines, so:
#
#   eval "$(bash scripts/start_scale_services.sh)"
#   .venv/bin/python -m pytest tests/hub_server -m "not slow"     # now against PostgreSQL + S3
#   bash scripts/start_scale_services.sh stop
#
# Idempotent: services already running are reused. Settings: VF_HUB_MOTO_PORT (default: a free port,
# picked once and kept in $DIR/moto.port, so no fixed port in the ephemeral range can be taken by chance),
# VF_HUB_S3_BUCKET (vf-hub-test), MOTO_SERVER (default .venv/bin/moto_server), and those of
# setup_postgres.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${VF_HUB_SCALE_DIR:-${TMPDIR:-/tmp}/vf-hub-scale}"
BUCKET="${VF_HUB_S3_BUCKET:-vf-hub-test}"
MOTO="${MOTO_SERVER:-$ROOT/.venv/bin/moto_server}"
PYTHON="$ROOT/.venv/bin/python"
mkdir -p "$DIR"

free_port() {
    "$PYTHON" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
}

moto_up() {
    "$PYTHON" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)" \
        "http://127.0.0.1:$MOTO_PORT/moto-api/data.json" >/dev/null 2>&1
}

if [[ "${1:-start}" == "stop" ]]; then
    if [[ -f "$DIR/moto.pid" ]]; then
        kill "$(cat "$DIR/moto.pid")" 2>/dev/null || true
        rm -f "$DIR/moto.pid" "$DIR/moto.port"
    fi
    bash "$ROOT/scripts/setup_postgres.sh" stop
    exit 0
fi

DATABASE_URL="$(bash "$ROOT/scripts/setup_postgres.sh" | tail -n 1)"

MOTO_PORT="${VF_HUB_MOTO_PORT:-$(cat "$DIR/moto.port" 2>/dev/null || true)}"
if [[ -z "$MOTO_PORT" ]] || ! moto_up; then
    [[ -x "$MOTO" ]] || { echo "start_scale_services: $MOTO not found (pip install -e '.[test]')" >&2; exit 1; }
    MOTO_PORT="${VF_HUB_MOTO_PORT:-$(free_port)}"
    nohup setsid "$MOTO" -H 127.0.0.1 -p "$MOTO_PORT" >"$DIR/moto.log" 2>&1 &
    pid=$!
    echo "$pid" >"$DIR/moto.pid"
    # Wait by the clock, not by a count of tries: on a loaded machine each probe's interpreter start is slow.
    deadline=$((SECONDS + 90))
    until moto_up; do
        if ! kill -0 "$pid" 2>/dev/null || ((SECONDS >= deadline)); then
            echo "start_scale_services: moto_server did not start on 127.0.0.1:$MOTO_PORT; its log:" >&2
            tail -n 20 "$DIR/moto.log" >&2 || true
            exit 1
        fi
        sleep 0.3
    done
    echo "$MOTO_PORT" >"$DIR/moto.port"
fi

# moto accepts any credentials, but boto3 needs some to sign with.
echo "export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1"
echo "export VF_HUB_TEST_DATABASE_URL='$DATABASE_URL'"
echo "export VF_HUB_TEST_STORAGE_URL='s3://$BUCKET?endpoint_url=http://127.0.0.1:$MOTO_PORT'"
