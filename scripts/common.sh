#!/usr/bin/env bash
# Shared by the README's two commands: install missing Debian packages, then
# configure (first run) and build (incremental) into ./build.
set -euo pipefail
OAR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OAR_BUILD="${OAR_BUILD:-$OAR_ROOT/build}"

oar_install_deps() {
  local packages=(cmake ninja-build g++ gcc pkg-config libboost-dev libdnnl-dev nlohmann-json3-dev doctest-dev)
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "oar: installing Debian packages: ${missing[*]}"
    local sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

oar_build() {
  if [[ ! -f "$OAR_BUILD/build.ninja" ]]; then
    cmake -S "$OAR_ROOT" -B "$OAR_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
  fi
  cmake --build "$OAR_BUILD" -j "$(nproc)"
}
