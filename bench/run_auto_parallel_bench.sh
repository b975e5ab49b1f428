#!/usr/bin/env bash
# The semi-auto parallel benchmark (bench/bench_auto_parallel.py): the tiny
# GPT's TP=2 and DP=2 training step, oar eager and dist.to_static against
# torch DTensor (parallelize_module) and DDP with Gloo, the same thread count
# per rank; ROUNDS rounds, frameworks interleaved, medians over rounds.
#
#   bench/run_auto_parallel_bench.sh                  # 1 thread per rank, 3 rounds
#   THREADS=2 ROUNDS=5 bench/run_auto_parallel_bench.sh
set -euo pipefail
OAR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$OAR_ROOT"
CORES="$(getconf _NPROCESSORS_ONLN)"
THREADS="${THREADS:-1}"
ROUNDS="${ROUNDS:-3}"
EXTRA=("$@")

[[ "${SKIP_BUILD:-0}" == 1 ]] || bash scripts/python_env.sh
source "$OAR_ROOT/bench/peers_env.sh"
bench_peer_venv run_auto_parallel_bench

lines=""
for round in $(seq "$ROUNDS"); do
  for fw in oar torch; do
    py="$VENV/bin/python"
    [[ $fw == oar ]] && py="$OAR_ROOT/.venv/bin/python"
    # From /tmp so `import oar` is the installed package, not the source tree.
    out="$(cd /tmp && "$py" "$OAR_ROOT/bench/bench_auto_parallel.py" --framework "$fw" --spawn \
             --threads "$THREADS" "${EXTRA[@]}")" || echo "run_auto_parallel_bench: $fw failed in round $round"
    echo "$out" | sed "s/^/  round $round: /"
    lines+="$out"$'\n'
  done
done
echo "$(date -u '+%Y-%m-%d %H:%M UTC')  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $CORES cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s' "$lines" | "$VENV/bin/python" bench/bench_auto_parallel.py --table
