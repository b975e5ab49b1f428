#!/usr/bin/env bash
# PINN training step: oar (bench_pinn_step) against PyTorch and PaddlePaddle
# (bench/pinn_peers.py) with the same thread count, as one table.
#
#   bench/run_pinn_bench.sh            # threads: all cores
#   THREADS=1 STEPS=100 CASES="32 3 1024 256 float64" bench/run_pinn_bench.sh
#
# Builds with scripts/common.sh (into $OAR_BUILD, default ./build); the peers
# live in the venv .venv-bench (created, and numpy/torch/paddlepaddle
# installed into it, when missing; torch from PyPI is a multi-GB CUDA build).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$OAR_ROOT"

THREADS="${THREADS:-$(nproc)}"
STEPS="${STEPS:-50}"
WARMUP="${WARMUP:-10}"
# Cases, `;`-separated: width depth interior boundary dtype.
IFS=';' read -ra case_list <<<"${CASES:-32 3 1024 256 float32;64 3 4096 512 float32}"

source "$OAR_ROOT/bench/peers_env.sh"
bench_peer_venv run_pinn_bench

oar_build >/dev/null
BENCH="$OAR_BUILD/bin/bench_pinn_step"

export OMP_NUM_THREADS="$THREADS" OAR_NUM_THREADS="$THREADS" MKL_NUM_THREADS="$THREADS"
export OAR_DEVICE="${OAR_DEVICE:-cpu}"
rows=()
for case in "${case_list[@]}"; do
  read -r width depth points boundary dtype <<<"$case"
  args=(--width "$width" --depth "$depth" --points "$points" --boundary "$boundary" --dtype "$dtype"
        --warmup "$WARMUP" --steps "$STEPS")
  lines="$("$BENCH" "${args[@]}")"$'\n'"$("$VENV/bin/python" bench/pinn_peers.py "${args[@]}" --threads "$THREADS")"
  echo "$lines" | sed 's/^/  /'
  rows+=("$lines")
done

echo "threads: $THREADS"
printf '%s\n' "${rows[@]}" | "$VENV/bin/python" bench/pinn_peers.py --table
