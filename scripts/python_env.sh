#!/usr/bin/env bash
# The Python package: make .venv (once), install the build tools and test
# dependencies from PyPI when missing, then build and install ./frontends/python
# incrementally (CMake build tree in frontends/python/build/<wheel tag>).
set -euo pipefail
OAR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$OAR_ROOT/scripts/common.sh"
oar_install_deps
# python3, python3-venv and python3-dev (the extension's headers) are Debian
# packages too; a machine without python3 at all gets them here.
oar_install_python_deps
OAR_VENV="${OAR_VENV:-$OAR_ROOT/.venv}"
if [[ ! -x "$OAR_VENV/bin/python" ]]; then
  python3 -m venv "$OAR_VENV"
fi
PY="$OAR_VENV/bin/python"
missing=()
# module:package; scikit-learn carries the 8x8 digits of the Python main job
# (examples/python/digits_cnn.py) and its test.
for pair in numpy:numpy pytest:pytest pybind11:pybind11 scikit_build_core:scikit-build-core sklearn:scikit-learn; do
  "$PY" -c "import ${pair%%:*}" 2>/dev/null || missing+=("${pair##*:}")
done
if ((${#missing[@]})); then
  echo "oar: pip installing ${missing[*]}"
  "$PY" -m pip install -q --upgrade pip
  "$PY" -m pip install -q "${missing[@]}"
fi
# --no-build-isolation reuses the venv's build tools and the persistent build
# tree, so a rebuild only compiles what changed.
"$PY" -m pip install -q --no-build-isolation "$OAR_ROOT/frontends/python"
