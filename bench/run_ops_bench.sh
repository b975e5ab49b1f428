#!/usr/bin/env bash
# CPU ops: oar's CPU plugin (bench_ops) against raw oneDNN (bench_onednn_raw)
# and PyTorch / PaddlePaddle (bench/ops_peers.py), all with the same thread
# count, run one after the other on this machine, printed as one table.
#
#   bench/run_ops_bench.sh                 # threads: all cores
#   THREADS=1 REPS=30 OAR_BUILD=build-x bench/run_ops_bench.sh
#
# Peers live in the venv .venv-bench (created with numpy, torch and
# paddlepaddle when missing, as bench/run_pinn_bench.sh does); a peer that
# is missing shows as "-".
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD="${OAR_BUILD:-$ROOT/build}"
THREADS="${THREADS:-$(nproc)}"
REPS="${REPS:-20}"
WARMUP="${WARMUP:-3}"

source "$ROOT/bench/peers_env.sh"
bench_peer_venv run_ops_bench

[[ -f "$BUILD/build.ninja" ]] || cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" --target bench_ops bench_onednn_raw oar_cpu >/dev/null

export OMP_NUM_THREADS="$THREADS" OAR_NUM_THREADS="$THREADS" MKL_NUM_THREADS="$THREADS" OAR_DEVICE=cpu
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
"$BUILD/bin/bench_ops" --reps "$REPS" --warmup "$WARMUP" | grep '^{' >>"$out"
"$BUILD/bin/bench_onednn_raw" --reps "$REPS" --warmup "$WARMUP" | grep '^{' >>"$out"
"$VENV/bin/python" bench/ops_peers.py --threads "$THREADS" --reps "$REPS" --warmup "$WARMUP" 2>/dev/null |
  grep '^{' >>"$out" || true

echo "$(date -u '+%Y-%m-%d %H:%M UTC')  $(lscpu | sed -n 's/^Model name: *//p'), $(nproc --all) cores, threads $THREADS, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$VENV/bin/python" - "$out" <<'EOF'
import json, sys
rows, order = {}, []
for line in open(sys.argv[1]):
    r = json.loads(line)
    key = (r["op"], r["shape"])
    if key not in rows:
        rows[key] = {}
        order.append(key)
    rows[key][r["framework"]] = r
def ms(k, f):
    r = rows[k].get(f)
    return r["median_ms"] if r else None
fmt = lambda v, s: format(v, s) if v is not None else "-"
print("median ms (tiny_add_us: microseconds per call); ratio = peer / oar, >= 1 means oar is at least as fast")
print(f"{'op':<19} {'shape':<21} {'oar':>9} {'onednn':>9} {'dnn_blk':>9} {'torch':>9} {'paddle':>9} "
      f"{'x dnn':>6} {'x blk':>6} {'x torch':>7} {'x paddle':>8}  GB/s")
for k in order:
    o = ms(k, "oar")
    peers = [ms(k, f) for f in ("onednn", "onednn_blocked", "torch", "paddle")]
    ratios = [p / o if p and o else None for p in peers]
    gb = " ".join(f"{f[:2]}={rows[k][f]['gbps']:.1f}" for f in rows[k] if "gbps" in rows[k][f])
    print(f"{k[0]:<19} {k[1]:<21} {fmt(o, '9.3f')} " + " ".join(fmt(p, "9.3f") for p in peers) + " " +
          " ".join(fmt(r, w) for r, w in zip(ratios, ("6.2f", "6.2f", "7.2f", "8.2f"))) + "  " + gb)
if ("add", "16M f32") in rows and ("memcpy", "16M f32") in rows:
    a, m = rows[("add", "16M f32")]["oar"]["gbps"], rows[("memcpy", "16M f32")]["oar"]["gbps"]
    print(f"add bandwidth: {a:.1f} GB/s = {100 * a / m:.0f}% of memcpy ({m:.1f} GB/s)")
EOF
