#!/usr/bin/env bash
# Publish a new environment to a local Environments Hub, then install it into a fresh venv and load it.
#
# Starts `vf-hub serve` on a free port with a data folder of its own, creates a user and its token
# (`vf-hub admin create-user`), writes a new environment package with `vf-init`, builds, checks and
# uploads it (`vf-hub push`), makes an empty venv with this SDK, installs the exact version from the Hub
# (`vf-hub install OWNER/NAME@VERSION`) and loads it there with `vf.load_environment`. Everything lives
# in a temporary folder, removed at the end; the Hub is stopped however the script ends.
#
#   bash examples/hub_publish_install.sh      (needs .venv with the Hub: .venv/bin/pip install -e distributions/hub)
#
# Network: only the package registry, for the fresh venv's copies of the SDK's dependencies (uv's cache
# makes later runs fast). The environment itself comes from the local Hub and nowhere else.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$PWD/.venv/bin"
work="$(mktemp -d "${TMPDIR:-/tmp}/vf-hub-example.XXXXXX")"
hub_pid=""
stop_hub() {
    if [ -n "$hub_pid" ]; then kill "$hub_pid" 2>/dev/null || true; wait "$hub_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap stop_hub EXIT
# This machine's pip and uv settings (extra indexes, local wheel folders) must not choose what gets installed.
export UV_NO_CONFIG=1 PIP_CONFIG_FILE=/dev/null

echo "== a Hub on a free port, data in $work/hub"
port="$("$bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
token="$("$bin/vf-hub" admin create-user alice --data-dir "$work/hub" | tail -n 1)"   # the token is the last line
export VF_HUB_URL="http://127.0.0.1:$port" VF_HUB_TOKEN="$token"   # what the client commands below use
"$bin/vf-hub" serve --data-dir "$work/hub" --port "$port" --no-access-log >"$work/hub.log" 2>&1 &
hub_pid=$!
for _ in $(seq 150); do   # up to 30 s for the database migration and the first answer
    curl -sf -o /dev/null "$VF_HUB_URL/simple/" && break
    kill -0 "$hub_pid" 2>/dev/null || { cat "$work/hub.log"; exit 1; }
    sleep 0.2
done
curl -sf -o /dev/null "$VF_HUB_URL/simple/" || { echo "the Hub did not answer"; cat "$work/hub.log"; exit 1; }
echo "Hub up at $VF_HUB_URL"

echo "== a new environment package, published"
"$bin/vf-init" hello-hub --path "$work/envs"
# --no-isolation builds with this venv's hatchling instead of fetching a build backend into a fresh one.
"$bin/vf-hub" push "$work/envs/hello_hub" --no-isolation

echo "== a fresh venv with this SDK (the verifiers the package requires), then the package from the Hub"
"$bin/uv" venv -q --python "$bin/python" "$work/venv"
"$bin/python" -m build -q --wheel --no-isolation --outdir "$work/sdk" . >/dev/null
"$bin/uv" pip install -q --python "$work/venv/bin/python" "$work"/sdk/verifiers-*.whl
"$bin/vf-hub" install alice/hello-hub@0.1.0 --python "$work/venv/bin/python"

echo "== loaded in the fresh venv"
cd "$work"   # not the checkout: the SDK and the package must come from the venv's site-packages
"$work/venv/bin/python" - <<'PY'
import hello_hub

import verifiers as vf

env = vf.load_environment("alice/hello-hub@0.1.0")
print(f"hello_hub from {hello_hub.__file__}")
print(f"verifiers {vf.__version__} from {vf.__file__}")
print(f"loaded alice/hello-hub@0.1.0: {type(env).__name__} with {len(env.get_eval_dataset())} eval rows")
PY
