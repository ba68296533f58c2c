#!/usr/bin/env bash
# Refuse to start when the disks cannot hold what test.sh will write: the venvs in the repo, and the
# suite's temporary files (vLLM's compile cache, tiny models, Hub blobs: about 2 GB, mostly removed) in
# TMPDIR. Venv sizes are what each took on a 2-core x86-64 machine (Python 3.11) on a fresh clone; a venv
# already there is charged only what it lacks of that size, so one that an earlier run left half-built
# (out of space) still counts.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TMP="${TMPDIR:-/tmp}"
SUITE_MB=2048
declare -A VENV_MB=([.venv]=2200 [.venv-vllm]=3800 [.venv-vf030]=750 [.venv-vf015]=650 [.venv-pypiserver]=40)

if [[ ! -d "$TMP" ]]; then
  echo "check_disk: TMPDIR $TMP is not a folder; set TMPDIR to one, or unset it." >&2
  exit 1
fi
venvs_mb=0
for venv in "${!VENV_MB[@]}"; do
  have=0
  [[ -d "$ROOT/$venv" ]] && have="$(du -sm "$ROOT/$venv" | cut -f1)"
  (( have < VENV_MB[$venv] )) && venvs_mb=$((venvs_mb + VENV_MB[$venv] - have))
done

free_mb() { df -Pm "$1" | awk 'NR == 2 {print $4}'; }
refuse() {
  echo "check_disk: $1 has $2 MB free; $3 need about $4 MB." >&2
  echo "check_disk: free some space (old clones, caches) and run again; nothing was installed." >&2
  exit 1
}
if [[ "$(stat -c %d "$ROOT")" == "$(stat -c %d "$TMP")" ]]; then
  need=$((venvs_mb + SUITE_MB)); have="$(free_mb "$ROOT")"
  (( have >= need )) || refuse "$ROOT" "$have" "the venvs and the suite" "$need"
else
  have="$(free_mb "$ROOT")"
  (( have >= venvs_mb )) || refuse "$ROOT" "$have" "the venvs" "$venvs_mb"
  have="$(free_mb "$TMP")"
  (( have >= SUITE_MB )) || refuse "$TMP" "$have" "the suite's temporary files" "$SUITE_MB"
fi
echo "check_disk: enough free (venvs ${venvs_mb} MB, suite ${SUITE_MB} MB)"
