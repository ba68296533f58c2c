#!/usr/bin/env bash
# Create a separate venv holding an ORIGINAL `verifiers` release from PyPI, for the
# compatibility tests in tests/compat/ (they run the same environment modules on the
# original and on this SDK and compare scores).
#
#   scripts/original_venv.sh VERSION DIR      e.g. scripts/original_venv.sh 0.3.0 .venv-vf030
#
# Idempotent: does nothing when DIR/bin/python already imports verifiers==VERSION.
# PyPI is reached through this machine's normal pip configuration (no --isolated).
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 VERSION DIR" >&2
    exit 2
fi
version="$1"
dir="$2"
python_bin="${PYTHON:-python3.11}"

# -I: never pick up a `verifiers` package from the current directory (this repo has one).
installed_version() {
    "$dir/bin/python" -I -c 'import importlib.metadata as m, verifiers; print(m.version("verifiers"))' 2>/dev/null || true
}

if [[ -x "$dir/bin/python" && "$(installed_version)" == "$version" ]]; then
    echo "original_venv: $dir already has verifiers==$version"
    exit 0
fi

# Packages the release imports at run time but does not declare (or declares only in extras).
#   0.1.x: math-verify backs MathRubric (an extra), openai-agents builds tool schemas.
#   0.3.x: nest-asyncio is an extra but evaluate_sync needs it inside running loops.
case "$version" in
    0.1.*) extras=("math-verify>=0.8" "openai-agents" "nest-asyncio") ;;
    *) extras=("nest-asyncio") ;;
esac

"$python_bin" -m venv "$dir"
pip_install() {
    # This machine's pip config lists local mirror folders; their "is ignored" warnings are noise.
    "$dir/bin/pip" install --quiet "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
}
pip_install --upgrade pip
pip_install "verifiers==$version" "${extras[@]}"

got="$(installed_version)"
if [[ "$got" != "$version" ]]; then
    echo "original_venv: $dir/bin/python cannot import verifiers==$version (got '${got}')" >&2
    "$dir/bin/python" -I -c 'import verifiers' >&2 || true
    exit 1
fi
echo "original_venv: $dir ready with verifiers==$version"
