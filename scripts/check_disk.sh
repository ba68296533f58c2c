#!/usr/bin/env bash
# Refuse to start when the repo's disk (or TMPDIR's) has less room than test.sh will fill.
# Sizes are what each venv took on a 2-core x86-64 machine (Python 3.11), rounded up; a venv that already
# exists costs nothing. The suite itself writes about 2 GB of temporary files (vLLM's compile cache,
# tiny models, Hub blobs) and removes most of them.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
need_mb=2048
declare -A VENV_MB=([.venv]=2600 [.venv-vllm]=4200 [.venv-vf030]=900 [.venv-vf015]=800 [.venv-pypiserver]=100)
for venv in "${!VENV_MB[@]}"; do
  [[ -x "$ROOT/$venv/bin/python" ]] || need_mb=$((need_mb + VENV_MB[$venv]))
done
free_mb() { df -Pm "$1" | awk 'NR == 2 {print $4}'; }
for dir in "$ROOT" "${TMPDIR:-/tmp}"; do
  have_mb="$(free_mb "$dir")"
  if (( have_mb < need_mb )); then
    echo "check_disk: $dir has ${have_mb} MB free; the set-up and the suite need about ${need_mb} MB." >&2
    echo "check_disk: free some space (old clones, caches) and run again; nothing was installed." >&2
    exit 1
  fi
done
echo "check_disk: ${need_mb} MB needed, enough free"
