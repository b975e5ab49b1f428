#!/usr/bin/env bash
# The Python tests (pytest) against the installed package in .venv.
# Usage: scripts/run_python_tests.sh [pytest args...]
set -euo pipefail
OAR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$OAR_ROOT/scripts/python_env.sh"
OAR_VENV="${OAR_VENV:-$OAR_ROOT/.venv}"
# Run from the tests directory so `import oar` is the installed package, not
# the source tree (which has no extension).
cd "$OAR_ROOT/frontends/python/tests"
# test_jit.py runs Python-exported programs through the C++ runner too.
OAR_BUILD="${OAR_BUILD:-$OAR_ROOT/build}"
if [[ -x "$OAR_BUILD/bin/oar-run" && -z "${OAR_RUN_BIN:-}" ]]; then export OAR_RUN_BIN="$OAR_BUILD/bin/oar-run"; fi
exec "$OAR_VENV/bin/python" -m pytest -q "$@" .
