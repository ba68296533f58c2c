#!/usr/bin/env bash
# Debian's headless Chromium for the Hub's browser test (tests/hub_server/web/test_browser.py).
# Playwright drives it through executable_path=/usr/bin/chromium; no browser is ever downloaded.
set -euo pipefail
bash "$(dirname "${BASH_SOURCE[0]}")/apt_ensure.sh" /usr/bin/chromium "the browser test" chromium fonts-dejavu-core
