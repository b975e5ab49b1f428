#!/usr/bin/env bash
# The eager CPU benchmark of issue 20 (bench/bench_eager.py): oar, PyTorch and
# PaddlePaddle in one process per thread count, medians of interleaved
# repeats, ratios against the peers and the issue's targets. oar comes from
# .venv (built and installed by scripts/python_env.sh, under a lock shared by
# everyone using this tree), the peers from .venv-bench (bench/peers_env.sh;
# PEERS_VENV=/path/to/venv uses an existing one instead). Arguments go to the
# script:
#
#   bench/run_eager_bench.sh                          # threads 1,2, quiet
#   bench/run_eager_bench.sh --busy --launches 5      # + beside a CPU burner, matmul over 5 launches
#   bench/run_eager_bench.sh --rows rsqrt,exp --threads 1
set -euo pipefail
OAR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$OAR_ROOT"
lock="/tmp/$(basename "$OAR_ROOT")-py.lock"
if command -v flock >/dev/null; then
  flock "$lock" bash scripts/python_env.sh
else
  bash scripts/python_env.sh
fi
if [[ -n "${PEERS_VENV:-}" ]]; then
  VENV="$PEERS_VENV"
else
  source "$OAR_ROOT/bench/peers_env.sh"
  bench_peer_venv run_eager_bench
fi
site="$(ls -d "$OAR_ROOT"/.venv/lib/python*/site-packages | tail -1)"
exec "$VENV/bin/python" "$OAR_ROOT/bench/bench_eager.py" --oar-site "$site" "$@"
