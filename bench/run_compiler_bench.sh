#!/usr/bin/env bash
# The compiler plugin's benchmark (bench/bench_compiler.py): oar compiled
# (to_static backend="CINN"), oar uncompiled static, oar's hand-fused eager
# kernels, PyTorch eager, torch.compile (Inductor CPU) and PaddlePaddle, in ONE
# process with the same thread count, plus the memcpy bandwidth of the same
# run; prints the tables and the issue's targets (met / MISSED). About 5
# minutes on an idle machine (torch.compile's first compiles are most of it;
# its cache under /tmp/torchinductor_$USER makes a rerun faster); QUICK=1 runs
# the small size only (about a minute).
#
#   bench/run_compiler_bench.sh
#   THREADS=1 QUICK=1 bench/run_compiler_bench.sh
#   PEERS_VENV=/path/to/venv bench/run_compiler_bench.sh   # torch + paddle from there
#
# oar comes from the worktree's .venv (scripts/python_env.sh builds it with
# the compiler plugin); the peers from .venv-bench (created and filled from
# PyPI when missing) or PEERS_VENV. The compiler's cache goes to a fresh
# temporary directory, so the compile-time row starts cold.
set -euo pipefail
OAR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$OAR_ROOT"
THREADS="${THREADS:-$(getconf _NPROCESSORS_ONLN)}"

bash scripts/python_env.sh
if [[ -n "${PEERS_VENV:-}" ]]; then
  VENV="$PEERS_VENV"
else
  source "$OAR_ROOT/bench/peers_env.sh"
  bench_peer_venv run_compiler_bench
fi
SITE="$("$OAR_ROOT/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')"
CACHE="$(mktemp -d)"
trap 'rm -rf "$CACHE"' EXIT
export OMP_NUM_THREADS="$THREADS" OAR_NUM_THREADS="$THREADS" MKL_NUM_THREADS="$THREADS"
# Paddle's Intel OpenMP workers spin 200 ms (KMP_BLOCKTIME) after each of its
# regions, taking the cores while oar or torch is timed next in this process.
export KMP_BLOCKTIME="${KMP_BLOCKTIME:-0}"
export OAR_COMPILER_CACHE_DIR="$CACHE" OAR_SITE="$SITE"
echo "run_compiler_bench: $(uptime)"
args=(--threads "$THREADS")
[[ "${QUICK:-0}" == 1 ]] && args+=(--quick)
# From /tmp so `import oar` is the installed package, not the source tree.
(cd /tmp && "$VENV/bin/python" "$OAR_ROOT/bench/bench_compiler.py" "${args[@]}" "$@")
