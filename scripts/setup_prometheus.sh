#!/usr/bin/env bash
# Debian's Prometheus server (2.42 on bookworm) for the metrics test (tests/test_prometheus_scrape.py), which
# starts its own instance on a free 127.0.0.1 port with a scrape config of its own. Nothing here starts it, and
# the test never uses a system instance. Idempotent.
set -euo pipefail
if command -v prometheus >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "setup_prometheus: prometheus is missing and apt-get as root is unavailable; the metrics test will skip" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# no recommends: the node exporter and the others are not needed to scrape the project's own processes
apt-get install -y -q --no-install-recommends prometheus
prometheus --version | head -1
