#!/usr/bin/env bash
# A wheel of the Python package that installs on a machine with nothing but
# Python: `pip wheel ./frontends/python`, then `auditwheel repair` bundles
# every non-glibc shared library the core and the plugins need (libdnnl, the
# OpenCL loader it links, libgomp, ...) into oar.libs/ and rewrites RPATHs so
# the extension, liboar_core.so and the plugins in oar/lib/oar/plugins find
# them. Output: dist/oar-<version>-<tags>.manylinux_*.whl (the raw wheel stays
# in dist/raw/). Usage: bash scripts/build_wheel.sh
set -euo pipefail
OAR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$OAR_ROOT/scripts/common.sh"
oar_install_deps
oar_install_python_deps
oar_require_packages patchelf   # auditwheel rewrites RPATHs with it
# .venv with the build tools (and the package installed, reusing its build tree).
bash "$OAR_ROOT/scripts/python_env.sh"
OAR_VENV="${OAR_VENV:-$OAR_ROOT/.venv}"
PY="$OAR_VENV/bin/python"
# auditwheel 6.5 and later require patchelf >= 0.14.5; Debian 12 ships 0.14.3.
AUDITWHEEL_REQ="auditwheel>=6.1,<6.5"
"$PY" - "$AUDITWHEEL_REQ" <<'PYEOF' 2>/dev/null || { echo "oar: pip installing $AUDITWHEEL_REQ"; "$PY" -m pip install -q "$AUDITWHEEL_REQ"; }
import sys
from importlib.metadata import version
major, minor = (int(x) for x in version("auditwheel").split(".")[:2])
sys.exit(0 if (major, minor) >= (6, 1) and (major, minor) < (6, 5) else 1)
PYEOF
DIST="$OAR_ROOT/dist"
rm -rf "$DIST/raw"
mkdir -p "$DIST/raw"
"$PY" -m pip wheel -q --no-build-isolation --no-deps -w "$DIST/raw" "$OAR_ROOT/frontends/python"
raw="$(ls "$DIST"/raw/oar-*.whl)"
"$PY" -m auditwheel show "$raw"
# auditwheel picks the most compatible manylinux tag the wheel satisfies.
rm -f "$DIST"/oar-*manylinux*.whl
"$PY" -m auditwheel repair -w "$DIST" "$raw"
echo "oar: repaired wheel: $(ls "$DIST"/oar-*manylinux*.whl)"
echo "oar: install it with: python3 -m pip install $(ls "$DIST"/oar-*manylinux*.whl)"
