#!/usr/bin/env bash
# Two "machines" on one host: two network namespaces joined by a veth pair
# (10.231.0.1/24 <-> 10.231.0.2/24), one launcher in each with --nnodes 2.
#  1. Data-parallel training across them (tests/scripts/two_machines_job.py,
#     oar.DataParallel; gradients averaged by all_reduce when DataParallel is
#     not in this build): both nodes end with the same parameters, equal to a
#     single-process run on the whole batch.
#  2. Node 1's rank is killed mid-run: node 0's launcher must exit non-zero
#     within OAR_COLLECTIVE_TIMEOUT (+ slack), its log naming rank 1.
# Traffic stays inside the namespaces (the master address exists only there).
# Needs root and iproute2's ip; otherwise prints "skipped: ..." and exits 0.
# Usage: tests/scripts/test_two_machines.sh  (OAR_PYTHON: the interpreter with
# oar installed; default ./.venv/bin/python)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${OAR_PYTHON:-$ROOT/.venv/bin/python}"
JOB="$ROOT/tests/scripts/two_machines_job.py"
STEPS=20
COLLECTIVE_TIMEOUT=5

skip() { echo "test_two_machines: skipped: $*"; exit 0; }
fail() { echo "test_two_machines: FAILED: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || skip "needs root to make network namespaces (ip netns)"
command -v ip >/dev/null 2>&1 || skip "needs ip from iproute2 (apt-get install iproute2)"
[[ -x "$PY" ]] || fail "no Python with oar at $PY (run scripts/python_env.sh, or set OAR_PYTHON)"
"$PY" -c "import oar.distributed as d; d.init_parallel_env; d.all_reduce" 2>/dev/null ||
  fail "oar.distributed has no init_parallel_env/all_reduce in $PY"
MODE=allreduce
if "$PY" -c "import oar; oar.DataParallel" 2>/dev/null; then MODE=dp; fi

TAG="$$"
NS0="oarns0_$TAG" NS1="oarns1_$TAG" V0="oarv0_$TAG" V1="oarv1_$TAG"
WORK="$(mktemp -d /tmp/oar_two_machines.XXXXXX)"
PIDS=()
cleanup() {
  local p
  # Each launcher runs under timeout, which leads its own process group; the
  # ranks die with their launcher (PR_SET_PDEATHSIG).
  for p in "${PIDS[@]}"; do kill -9 -- "-$p" "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  ip netns del "$NS0" 2>/dev/null || true
  ip netns del "$NS1" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

ip netns add "$NS0" 2>/dev/null || skip "ip netns add failed (no CAP_SYS_ADMIN in this container?)"
# ip netns exec remounts / as a slave mount: in a chroot whose / is not a
# mount point (scripts/check_fresh_machine.sh's root) that fails.
ip netns exec "$NS0" true 2>/dev/null ||
  skip "ip netns exec does not work here (a chroot whose / is not a mount point?)"
ip netns add "$NS1"
ip link add "$V0" type veth peer name "$V1"
ip link set "$V0" netns "$NS0"
ip link set "$V1" netns "$NS1"
ip -n "$NS0" addr add 10.231.0.1/24 dev "$V0"
ip -n "$NS1" addr add 10.231.0.2/24 dev "$V1"
for ns in "$NS0" "$NS1"; do ip -n "$ns" link set lo up; done
ip -n "$NS0" link set "$V0" up
ip -n "$NS1" link set "$V1" up

# start_node NODE PORT LOGDIR JOB_ARGS...: one launcher in namespace NODE, in
# the background (bounded by timeout); its pid is appended to PIDS.
start_node() {
  local node=$1 port=$2 dir=$3; shift 3
  local ns=$NS0 ifname=$V0
  if [[ $node == 1 ]]; then ns=$NS1 ifname=$V1; fi
  mkdir -p "$dir"
  ip netns exec "$ns" env GLOO_SOCKET_IFNAME="$ifname" OAR_COLLECTIVE_TIMEOUT="$COLLECTIVE_TIMEOUT" \
    OAR_NUM_THREADS=1 OMP_NUM_THREADS=1 \
    timeout 120 "$PY" -m oar.distributed.launch --nnodes 2 --node_rank "$node" --nproc_per_node 1 \
    --master "10.231.0.1:$port" --job_id "two_machines_$TAG" --log_dir "$dir/log" --grace_period 2 \
    "$JOB" "$@" >"$dir/launcher.out" 2>&1 &
  PIDS+=($!)
}

show_logs() {
  local f
  for f in "$@"; do echo "--- $f"; tail -n 30 "$f" 2>/dev/null || true; done >&2
}

# 1. Training across the two namespaces, then the single-process reference.
echo "test_two_machines: training $STEPS steps ($MODE) on 2 nodes of 1 rank each, master 10.231.0.1"
start_node 0 6170 "$WORK/n0" "$MODE" "$WORK/n0" "$STEPS"
start_node 1 6170 "$WORK/n1" "$MODE" "$WORK/n1" "$STEPS"
rc0=0 rc1=0
wait "${PIDS[0]}" || rc0=$?
wait "${PIDS[1]}" || rc1=$?
PIDS=()
if ((rc0 || rc1)); then
  show_logs "$WORK"/n0/launcher.out "$WORK"/n0/log/workerlog.0 "$WORK"/n1/launcher.out "$WORK"/n1/log/workerlog.1
  fail "training: the launchers exited with $rc0 (node 0) and $rc1 (node 1), expected 0 and 0"
fi
mkdir -p "$WORK/ref"
OAR_NUM_THREADS=1 timeout 120 "$PY" "$JOB" reference "$WORK/ref" "$STEPS" >"$WORK/ref/out" 2>&1 ||
  { show_logs "$WORK/ref/out"; fail "the single-process reference run failed"; }
"$PY" - "$WORK" <<'EOF' || fail "parameters differ (above)"
import sys
import numpy as np
w = sys.argv[1]
n0, n1, ref = (np.load(f"{w}/{d}/params.{r}.npz") for d, r in (("n0", 0), ("n1", 1), ("ref", 0)))
ok = True
for name in ("weight", "bias"):
    if not np.array_equal(n0[name], n1[name]):
        print(f"{name}: node 0 has\n{n0[name]}\nnode 1 has\n{n1[name]}", file=sys.stderr); ok = False
    if not np.allclose(n0[name], ref[name], rtol=1e-5, atol=1e-6):
        print(f"{name}: the 2 nodes have\n{n0[name]}\nthe single process has\n{ref[name]}", file=sys.stderr); ok = False
sys.exit(0 if ok else 1)
EOF
echo "test_two_machines: ok: both nodes' parameters are equal and match the single-process run"

# 2. Kill node 1's rank mid-run; node 0 must fail within the collective timeout.
start_node 0 6171 "$WORK/k0" "$MODE" "$WORK/k0" 0 3
start_node 1 6171 "$WORK/k1" "$MODE" "$WORK/k1" 0 3
deadline=$((SECONDS + 90))
until grep -q "^MARKER pid=" "$WORK/k1/log/workerlog.1" 2>/dev/null; do
  if ((SECONDS > deadline)) || ! kill -0 "${PIDS[1]}" 2>/dev/null; then
    show_logs "$WORK"/k0/launcher.out "$WORK"/k0/log/workerlog.0 "$WORK"/k1/launcher.out "$WORK"/k1/log/workerlog.1
    fail "node 1's rank never printed its MARKER line"
  fi
  sleep 0.1
done
victim=$(sed -n 's/^MARKER pid=\([0-9]*\)$/\1/p' "$WORK/k1/log/workerlog.1" | head -n 1)
kill -9 "$victim"
killed_at=$SECONDS
bound=$((COLLECTIVE_TIMEOUT + 25))  # the timeout, the launcher's grace period and start-up slack
while kill -0 "${PIDS[0]}" 2>/dev/null && ((SECONDS - killed_at <= bound)); do sleep 0.1; done
if kill -0 "${PIDS[0]}" 2>/dev/null; then
  show_logs "$WORK"/k0/launcher.out "$WORK"/k0/log/workerlog.0
  fail "node 0's launcher still runs $bound s after node 1's rank was killed (OAR_COLLECTIVE_TIMEOUT=$COLLECTIVE_TIMEOUT)"
fi
rc0=0
wait "${PIDS[0]}" || rc0=$?
((rc0 != 0 && rc0 != 124)) || { show_logs "$WORK"/k0/launcher.out; fail "node 0's launcher exited with $rc0, expected a rank's failure code"; }
grep -q "oar.distributed.launch: rank 0 (local rank 0, pid [0-9]*) exited with code $rc0; stopping the other ranks" \
  "$WORK/k0/launcher.out" || { show_logs "$WORK"/k0/launcher.out; fail "node 0's launcher did not report its failed rank"; }
grep -Eq "all_reduce #[0-9]+ on group 'world' .*: rank 1 (is unreachable or died|did not arrive)" "$WORK/k0/log/workerlog.0" ||
  { show_logs "$WORK"/k0/log/workerlog.0; fail "node 0's error does not name rank 1"; }
echo "test_two_machines: ok: node 0 failed within $((SECONDS - killed_at)) s of node 1's death (exit $rc0), naming rank 1"
