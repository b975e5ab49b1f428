#!/usr/bin/env bash
# Eager vs static mode: oar's transformer block step and forward, eager and
# through the executor (bench_static, which also reports the memory
# planner's peak on an MLP training program), beside PyTorch (eager) and
# PaddlePaddle (eager and paddle.jit.to_static) with the same thread count.
#
#   bench/run_static_bench.sh
#   THREADS=1 STEPS=300 CASES="32 8 2 2;64 32 4 4" bench/run_static_bench.sh
#
# Cases, `;`-separated: dim seq batch heads. Peers live in .venv-bench
# (created when missing, like bench/run_pinn_bench.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$OAR_ROOT"

THREADS="${THREADS:-$(nproc)}"
STEPS="${STEPS:-200}"
WARMUP="${WARMUP:-20}"
IFS=';' read -ra case_list <<<"${CASES:-32 8 2 2;64 32 4 4;128 64 8 4}"

source "$OAR_ROOT/bench/peers_env.sh"
bench_peer_venv run_static_bench

oar_build >/dev/null
export OMP_NUM_THREADS="$THREADS" OAR_NUM_THREADS="$THREADS" MKL_NUM_THREADS="$THREADS"
export OAR_DEVICE="${OAR_DEVICE:-cpu}"
lines=""
for case in "${case_list[@]}"; do
  read -r dim seq batch heads <<<"$case"
  args=(--dim "$dim" --seq "$seq" --batch "$batch" --heads "$heads" --warmup "$WARMUP" --steps "$STEPS")
  out="$("$OAR_BUILD/bin/bench_static" "${args[@]}" | grep '^{')"$'\n'
  out+="$("$VENV/bin/python" bench/static_peers.py "${args[@]}" --threads "$THREADS")"
  echo "$out" | sed 's/^/  /'
  lines+="$out"$'\n'
done
echo "threads: $THREADS"
printf '%s' "$lines" | "$VENV/bin/python" bench/static_peers.py --table
