#!/usr/bin/env bash
# Every test: install what is missing, build, run ctest.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
oar_install_deps
oar_install_test_deps
oar_build
cd "$OAR_BUILD"
ctest --output-on-failure -j "$(nproc)" --timeout 600
# The Python package: build it into .venv and run its pytest suite.
bash "$OAR_ROOT/scripts/run_python_tests.sh"
