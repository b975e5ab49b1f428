#!/usr/bin/env bash
# Every test: install what is missing, build, run ctest; then the Python
# package's pytest suite; then the C++ tests again under AddressSanitizer and
# UndefinedBehaviorSanitizer (build-asan, incremental; scripts/run_sanitizers.sh,
# which also has the ThreadSanitizer run). OAR_TESTS_NO_ASAN=1 skips the last.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
oar_install_deps
oar_install_test_deps
oar_build
(cd "$OAR_BUILD" && ctest --output-on-failure -j "$(nproc)" --timeout 600)
# The Python package: build it into .venv and run its pytest suite.
bash "$OAR_ROOT/scripts/run_python_tests.sh"
# Two "machines" (network namespaces) training together; skips unless root.
OAR_PYTHON="${OAR_VENV:-$OAR_ROOT/.venv}/bin/python" bash "$OAR_ROOT/tests/scripts/test_two_machines.sh"
if [[ "${OAR_TESTS_NO_ASAN:-0}" != 1 ]]; then
  bash "$OAR_ROOT/scripts/run_sanitizers.sh" asan
fi
