#!/usr/bin/env bash
# Debian's Prometheus server (2.42 on bookworm) for the metrics test (tests/test_prometheus_scrape.py), which
# starts its own instance on a free 127.0.0.1 port with a scrape config of its own; nothing here starts one.
# No recommends: the node exporter and the rest are not needed to scrape the project's own processes.
set -euo pipefail
bash "$(dirname "${BASH_SOURCE[0]}")/apt_ensure.sh" prometheus "the Prometheus scrape test" prometheus
