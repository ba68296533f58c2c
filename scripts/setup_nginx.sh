#!/usr/bin/env bash
# Debian's nginx (1.22 on bookworm) for the weight-broadcast tests and bench (tests/trainer_adapter/broadcast/,
# bench/weight_broadcast.py), which start their own relays on free 127.0.0.1 ports with configs of their own;
# nothing here starts one. Debian builds nginx with the http_dav module the relays take uploads with (PUT, DELETE);
# nginx-light is only a transitional name for it on bookworm.
set -euo pipefail
bash "$(dirname "${BASH_SOURCE[0]}")/apt_ensure.sh" /usr/sbin/nginx "the weight-broadcast tests" nginx
