#!/usr/bin/env bash
# Makes the Python that bench/reference and tests/lit/reference run: a venv
# over Debian's python3 that sees its python3-torch (and NumPy) and adds JAX
# (CPU wheels) and safetensors from PyPI.
#   bench/reference/setup.sh [VENV]    default: .venv-reference at the root
# Needs the Debian packages python3-venv and python3-torch (.ci/install).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${1:-$root/.venv-reference}"
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "setup.sh: Debian's python3-torch is missing: apt-get install python3-torch" >&2
  exit 1
fi
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check \
  -r "$root/bench/reference/requirements.txt"
"$venv/bin/python" -c "import torch, jax, safetensors, numpy; print(
  f'reference Python {\"$venv\"}: torch {torch.__version__}, jax {jax.__version__}, '
  f'safetensors {safetensors.__version__}, numpy {numpy.__version__}')"
