#!/usr/bin/env bash
# Start-up cost of the plugin probe (Note [Plugin probe]): wall time of
# `oar devices` with the probe off, on with no cache (every plugin probed),
# and on with a warm cache. Medians of RUNS runs (default 41; the modes take
# turns) after one warm-up run each, on the build's own plugins (cpu, mock).
set -euo pipefail
OAR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OAR_BUILD="${OAR_BUILD:-$OAR_ROOT/build}"
RUNS="${RUNS:-41}"
OAR="$OAR_BUILD/bin/oar"
CACHE="$(mktemp -d)/probe.cache"
trap 'rm -rf "$(dirname "$CACHE")"' EXIT
unset OAR_PLUGIN_PATH OAR_DEVICE

# One timed run of `oar devices` under ENV..., in microseconds.
run_us() {
  local start end
  start=$(date +%s%N)
  env "$@" "$OAR" devices >/dev/null 2>&1
  end=$(date +%s%N)
  echo $(((end - start) / 1000))
}
median_ms() { sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'; }

OFF=(OAR_PLUGIN_PROBE=0)
COLD=(OAR_PLUGIN_PROBE=1 OAR_PLUGIN_PROBE_CACHE=)
WARM=(OAR_PLUGIN_PROBE=1 OAR_PLUGIN_PROBE_CACHE="$CACHE")
run_us "${OFF[@]}" >/dev/null; run_us "${COLD[@]}" >/dev/null; run_us "${WARM[@]}" >/dev/null  # warm-up; fills the cache
# The modes take turns, so load from other jobs on a shared machine falls
# on all three alike.
off_t=() cold_t=() warm_t=()
for ((i = 0; i < RUNS; ++i)); do
  off_t+=("$(run_us "${OFF[@]}")")
  cold_t+=("$(run_us "${COLD[@]}")")
  warm_t+=("$(run_us "${WARM[@]}")")
done
off=$(printf '%s\n' "${off_t[@]}" | median_ms)
cold=$(printf '%s\n' "${cold_t[@]}" | median_ms)
warm=$(printf '%s\n' "${warm_t[@]}" | median_ms)
echo "$(date -u '+%Y-%m-%d %H:%M UTC')  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) vCPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "oar devices, median of $RUNS runs (ms); ratio = mode / probe off"
printf '%-28s %8s %6s\n' mode ms ratio
printf '%-28s %8s %6s\n' "probe off" "$off" 1.00
printf '%-28s %8s %6s\n' "probe on, no cache" "$cold" "$(awk "BEGIN {printf \"%.2f\", $cold / $off}")"
printf '%-28s %8s %6s\n' "probe on, warm cache" "$warm" "$(awk "BEGIN {printf \"%.2f\", $warm / $off}")"
