#!/usr/bin/env bash
# Install Debian packages for a test prerequisite unless its program is already there:
#   bash scripts/apt_ensure.sh PROGRAM "WHAT NEEDS IT" PACKAGE...
# PROGRAM is a command name or an absolute path. Without root or apt-get it says what will skip and exits 0:
# the tests that need PROGRAM skip outside CI, and fail under CI=true (conftest.py), naming this script.
set -euo pipefail
program="$1"
needed_by="$2"
shift 2
if command -v "$program" >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "$program is missing and apt-get as root is unavailable; $needed_by will skip" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "$@"
