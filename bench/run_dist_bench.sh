#!/usr/bin/env bash
# The distributed benchmark (bench/bench_distributed.py): 2 ranks of oar
# (from .venv, built and installed by scripts/python_env.sh) against 2 ranks
# of torch.distributed with Gloo (from .venv-bench, filled from PyPI when
# missing), the same thread count per rank; ROUNDS rounds, the frameworks
# interleaved, and the median over rounds goes into the table.
#
#   bench/run_dist_bench.sh                  # 1 thread per rank, 3 rounds
#   THREADS=2 ROUNDS=5 bench/run_dist_bench.sh
#
# BENCH_PY names another script with the same --framework/--spawn/--table
# interface (bench/run_auto_parallel_bench.sh sets it).
set -euo pipefail
OAR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$OAR_ROOT"
CORES="$(getconf _NPROCESSORS_ONLN)"
THREADS="${THREADS:-1}"
ROUNDS="${ROUNDS:-3}"
BENCH_PY="${BENCH_PY:-bench/bench_distributed.py}"
EXTRA=("$@")

[[ "${SKIP_BUILD:-0}" == 1 ]] || bash scripts/python_env.sh
source "$OAR_ROOT/bench/peers_env.sh"
bench_peer_venv run_dist_bench

lines=""
for round in $(seq "$ROUNDS"); do
  for fw in oar torch; do
    py="$VENV/bin/python"
    [[ $fw == oar ]] && py="$OAR_ROOT/.venv/bin/python"
    # From /tmp so `import oar` is the installed package, not the source tree.
    out="$(cd /tmp && "$py" "$OAR_ROOT/$BENCH_PY" --framework "$fw" --spawn \
             --threads "$THREADS" "${EXTRA[@]}")" || echo "run_dist_bench: $fw failed in round $round"
    echo "$out" | sed "s/^/  round $round: /"
    lines+="$out"$'\n'
  done
done
echo "$(date -u '+%Y-%m-%d %H:%M UTC')  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $CORES cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s' "$lines" | "$VENV/bin/python" "$BENCH_PY" --table
