#!/usr/bin/env bash
# Static mode with control flow (issue 17; bench/bench_control_flow.py): the
# greedy decoding loop and the LSTM, oar eager vs oar to_static (tensor
# while -> the program's while) vs PyTorch eager and PaddlePaddle (eager and
# to_static), each framework in its own process with the same thread count;
# ROUNDS rounds, interleaved, for every thread count in THREADS; the best
# median per framework, mode and case goes into the table. Every process
# checks its outputs against a numpy reference before timing, and the table
# checks the frameworks' tokens against each other (exit 1 on a mismatch).
# About 2 minutes on an idle 2-core machine.
#
#   bench/run_control_flow_bench.sh                 # threads 1 and 2, 3 rounds
#   THREADS="1" ROUNDS=5 bench/run_control_flow_bench.sh
#   BUILD=0 bench/run_control_flow_bench.sh         # use .venv as it is
#
# oar comes from .venv (scripts/python_env.sh builds it unless BUILD=0), the
# peers from .venv-bench (created and filled from PyPI when missing) or
# PEERS_VENV. The peers' stderr (Paddle's logging) goes to a temporary file;
# the lines the benchmark itself writes there are shown.
set -euo pipefail
OAR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$OAR_ROOT"
THREADS="${THREADS:-1 2}"
ROUNDS="${ROUNDS:-3}"
REPEATS="${REPEATS:-200}"

[[ "${BUILD:-1}" == 0 ]] || bash scripts/python_env.sh
if [[ -n "${PEERS_VENV:-}" ]]; then
  VENV="$PEERS_VENV"
else
  source "$OAR_ROOT/bench/peers_env.sh"
  bench_peer_venv run_control_flow_bench
fi
# Paddle's Intel OpenMP workers spin 200 ms (KMP_BLOCKTIME) after each of its
# regions (see bench/run_compiler_bench.sh); each framework has its own
# process here, but the next process would start beside spinning workers.
export KMP_BLOCKTIME="${KMP_BLOCKTIME:-0}"
ERR="$(mktemp)"
trap 'rm -f "$ERR"' EXIT
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
lines=""
for round in $(seq "$ROUNDS"); do
  for threads in $THREADS; do
    for fw in oar torch paddle; do
      py="$VENV/bin/python"
      [[ $fw == oar ]] && py="$OAR_ROOT/.venv/bin/python"
      # From /tmp so `import oar` is the installed package, not the source tree.
      out="$(cd /tmp && OMP_NUM_THREADS="$threads" OAR_NUM_THREADS="$threads" MKL_NUM_THREADS="$threads" \
        "$py" "$OAR_ROOT/bench/bench_control_flow.py" --framework "$fw" --threads "$threads" \
        --repeats "$REPEATS" 2>"$ERR")" || {
        echo "run_control_flow_bench: $fw failed in round $round (threads $threads):"
        grep -v '^[IW][0-9]' "$ERR" | tail -5
        [[ $fw == oar ]] && exit 1
      }
      grep '^bench_control_flow:' "$ERR" | sort -u | sed "s/^/  round $round: /" || true
      echo "$out" | cut -c1-160 | sed "s/^/  round $round: /"
      lines+="$out"$'\n'
    done
  done
done
echo "$(date -u '+%Y-%m-%d %H:%M UTC')  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "$(getconf _NPROCESSORS_ONLN) cores, rounds $ROUNDS, repeats $REPEATS," \
  "load before $load_before, after $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s' "$lines" | "$VENV/bin/python" bench/bench_control_flow.py --table
