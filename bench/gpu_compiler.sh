#!/usr/bin/env bash
# The compiler's CUDA backend on a GPU, in one command (issue 15):
#   bash bench/gpu_compiler.sh [build-dir]      (default: build-gpu)
# Builds the runner (compiler/tools/gpu_compiler_runner.cpp) and the cpu
# plugin, then runs it: every generated CUDA kernel of the compiler's test
# programs is compiled by NVRTC for the device's architecture, loaded through
# the driver API, run at several batch sizes (aligned and misaligned buffers)
# and compared with the uncompiled program on the CPU; then RMSNorm
# [4096,768] and [16384,4096] f32/bf16 are timed against the device's memcpy
# bandwidth measured in the same run. Needs the NVIDIA driver (libcuda.so.1)
# and NVRTC (CUDA toolkit); no CUDA plugin. Output also goes to
# <build-dir>/gpu_compiler.txt. Exit status: the runner's (0 all match,
# 1 a mismatch, 2 no CUDA device).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
BUILD="${1:-${OAR_GPU_BUILD:-$OAR_ROOT/build-gpu}}"
oar_install_deps
if [[ ! -f "$BUILD/build.ninja" ]]; then
  launcher=()
  command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  cmake -S "$OAR_ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DOAR_BUILD_TESTS=OFF \
    -DOAR_BUILD_EXAMPLES=OFF -DOAR_BUILD_BENCH=OFF "${launcher[@]}"
fi
cmake --build "$BUILD" -j "$(nproc)" --target gpu_compiler_runner oar_cpu
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
set +e
OAR_PLUGIN_PATH= OAR_DEVICE=cpu "$BUILD/bin/gpu_compiler_runner" 2>&1 | tee "$BUILD/gpu_compiler.txt"
rc=${PIPESTATUS[0]}
echo "gpu_compiler.sh: runner exit status $rc (output in $BUILD/gpu_compiler.txt)"
exit "$rc"
