#!/usr/bin/env bash
# The semi-auto parallel benchmark (bench/bench_auto_parallel.py): the tiny
# GPT's TP=2 and DP=2 training step, oar eager and dist.to_static against
# torch DTensor (parallelize_module) and DDP with Gloo, the same thread count
# per rank; ROUNDS rounds, frameworks interleaved, medians over rounds (the
# driver is bench/run_dist_bench.sh).
#
#   bench/run_auto_parallel_bench.sh                  # 1 thread per rank, 3 rounds
#   THREADS=2 ROUNDS=5 bench/run_auto_parallel_bench.sh
set -euo pipefail
BENCH_PY=bench/bench_auto_parallel.py exec bash "$(dirname "${BASH_SOURCE[0]}")/run_dist_bench.sh" "$@"
