#!/usr/bin/env bash
# Shared by the README's two commands: install missing Debian packages, then
# configure (first run) and build (incremental) into ./build.
#
# The package lists are the whole set a new Debian 12 machine needs (checked
# by scripts/check_fresh_machine.sh in a debootstrap minbase root). Installs
# use --no-install-recommends, so a package another one only *recommends*
# must be listed here: Debian's dnnl-config.cmake calls find_package(OpenCL),
# which needs ocl-icd-opencl-dev, a Recommends of libdnnl-dev.
set -euo pipefail
OAR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OAR_BUILD="${OAR_BUILD:-$OAR_ROOT/build}"

# C++ build: compilers, CMake + Ninja, and the libraries of DESIGN.md section 6.
# OpenBLAS (f64/complex GEMM) and LAPACKE (oar.linalg) go into the cpu
# plugin; FFTW (GPL) only into its own plugin, plugins/fftw.
OAR_BUILD_PACKAGES=(cmake ninja-build g++ gcc pkg-config libboost-dev libdnnl-dev
  ocl-icd-opencl-dev nlohmann-json3-dev doctest-dev libgloo-dev
  libopenblas-dev liblapacke-dev libfftw3-dev)
# Python package: the interpreter, venv, headers for the extension
# (CMake's Development.Module; DLPack's), and CA certificates for pip.
OAR_PYTHON_PACKAGES=(python3 python3-venv python3-dev libdlpack-dev ca-certificates)
# Only the README's test command (scripts/run_tests.sh) needs these: strace
# injects kill -9 into saves (frontends/python/tests/test_durability.py);
# iproute2's ip makes the two "machines" of tests/scripts/test_two_machines.sh.
OAR_TEST_PACKAGES=(strace iproute2)

# oar_missing_packages PKG... : prints the ones not installed, one per line.
oar_missing_packages() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}

# oar_require_packages PKG... : installs the missing ones with apt-get, or
# stops with the exact command to run when that is not possible (not root
# and no sudo, no network, unknown package). Never returns on failure, so a
# missing package cannot turn into a confusing CMake error later.
oar_require_packages() {
  local missing
  mapfile -t missing < <(oar_missing_packages "$@")
  ((${#missing[@]})) || return 0
  local line="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo=(sudo)
    else
      echo "oar: these Debian packages are needed but not installed: ${missing[*]}" >&2
      echo "oar: this script is not running as root and has no password-less sudo, so it cannot install them; run as root:" >&2
      echo "  $line" >&2
      exit 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "oar: these Debian packages are needed but not installed: ${missing[*]}; apt-get was not found (oar's scripts target Debian 12)" >&2
    exit 1
  fi
  echo "oar: installing Debian packages: ${missing[*]}"
  local log
  log="$(mktemp)"
  if ! { "${sudo[@]}" apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    tail -n 15 "$log" >&2
    echo "oar: installing the Debian packages ${missing[*]} failed (output above: no network, or a package not found?)." >&2
    echo "oar: install them by hand, then run this script again:" >&2
    echo "  $line" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
  mapfile -t missing < <(oar_missing_packages "$@")
  if ((${#missing[@]})); then
    echo "oar: apt-get finished, but these packages are still not installed: ${missing[*]}; run: $line" >&2
    exit 1
  fi
}

oar_install_deps() {
  oar_require_packages "${OAR_BUILD_PACKAGES[@]}"
}

oar_install_python_deps() {
  oar_require_packages "${OAR_PYTHON_PACKAGES[@]}"
}

oar_install_test_deps() {
  ((${#OAR_TEST_PACKAGES[@]})) || return 0
  oar_require_packages "${OAR_TEST_PACKAGES[@]}"
}

oar_build() {
  if [[ ! -f "$OAR_BUILD/build.ninja" ]]; then
    cmake -S "$OAR_ROOT" -B "$OAR_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
  fi
  cmake --build "$OAR_BUILD" -j "$(nproc)"
}
