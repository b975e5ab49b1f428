#!/usr/bin/env bash
# The Python-frontend benchmark (bench/py_bench.py): oar from .venv (built and
# installed by scripts/python_env.sh) against PyTorch and PaddlePaddle from
# .venv-bench (created and filled from PyPI when missing), each framework in
# its own process with the same thread count; ROUNDS rounds, interleaved, and
# the best median per framework and case goes into the table.
#
#   bench/run_py_bench.sh                 # threads: all cores, 3 rounds
#   THREADS=1 ROUNDS=5 bench/run_py_bench.sh
set -euo pipefail
OAR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$OAR_ROOT"
CORES="$(getconf _NPROCESSORS_ONLN)"
THREADS="${THREADS:-$CORES}"
ROUNDS="${ROUNDS:-3}"

bash scripts/python_env.sh
source "$OAR_ROOT/bench/peers_env.sh"
bench_peer_venv run_py_bench

export OMP_NUM_THREADS="$THREADS" OAR_NUM_THREADS="$THREADS" MKL_NUM_THREADS="$THREADS"
lines=""
for round in $(seq "$ROUNDS"); do
  for fw in oar torch paddle; do
    py="$VENV/bin/python"
    [[ $fw == oar ]] && py="$OAR_ROOT/.venv/bin/python"
    # From /tmp so `import oar` is the installed package, not the source tree.
    out="$(cd /tmp && "$py" "$OAR_ROOT/bench/py_bench.py" --framework "$fw" --threads "$THREADS" 2>/dev/null)" ||
      echo "run_py_bench: $fw failed in round $round"
    echo "$out" | sed "s/^/  round $round: /"
    lines+="$out"$'\n'
  done
done
echo "$(date -u '+%Y-%m-%d %H:%M UTC')  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $CORES cores, threads $THREADS, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s' "$lines" | "$VENV/bin/python" bench/py_bench.py --table
