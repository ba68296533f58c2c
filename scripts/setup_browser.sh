#!/usr/bin/env bash
# Debian's headless Chromium for the Hub's browser test (tests/hub_server/web/test_browser.py).
# Playwright drives it through executable_path=/usr/bin/chromium; no browser is ever downloaded.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "setup_browser: /usr/bin/chromium is missing and apt-get as root is unavailable; the browser test will skip" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core
