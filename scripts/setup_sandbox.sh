#!/usr/bin/env bash
# Install what the local sandbox backend needs from Debian: bubblewrap (bwrap) for namespaces, and
# util-linux's setpriv (normally present) to run each sandbox as its own host uid, and e2fsprogs' mke2fs
# and mount (normally present) for each sandbox's ext4 disk image, and gVisor's runsc for the optional gVisor
# tier (LocalBackendConfig(tier="gvisor")). Idempotent.
set -euo pipefail
need=()
export PATH="$PATH:/usr/sbin:/sbin"
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
command -v mke2fs >/dev/null 2>&1 || need+=(e2fsprogs)
command -v mount >/dev/null 2>&1 || need+=(mount)
command -v runsc >/dev/null 2>&1 || need+=(runsc)
if [ "${#need[@]}" -eq 0 ]; then
  echo "sandbox prerequisites present: $(bwrap --version), $(runsc --version | head -1)"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "run as root: apt-get install -y ${need[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
echo "installed: ${need[*]} ($(bwrap --version))"
