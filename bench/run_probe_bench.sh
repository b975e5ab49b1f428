#!/usr/bin/env bash
# Start-up cost of the plugin probe (Note [Plugin probe]): wall time of
# `oar devices` with the probe off, on with no cache (every plugin probed),
# and on with a warm cache. Medians of RUNS runs (default 15) after one
# warm-up run, on the build's own plugins (cpu, mock).
set -euo pipefail
OAR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OAR_BUILD="${OAR_BUILD:-$OAR_ROOT/build}"
RUNS="${RUNS:-15}"
OAR="$OAR_BUILD/bin/oar"
CACHE="$(mktemp -d)/probe.cache"
trap 'rm -rf "$(dirname "$CACHE")"' EXIT
unset OAR_PLUGIN_PATH OAR_DEVICE

# median_ms ENV... : median wall milliseconds of `oar devices` under ENV.
median_ms() {
  local times=() i start end
  env "$@" "$OAR" devices >/dev/null 2>&1  # warm-up (page cache; fills a cache)
  for ((i = 0; i < RUNS; ++i)); do
    start=$(date +%s%N)
    env "$@" "$OAR" devices >/dev/null 2>&1
    end=$(date +%s%N)
    times+=($(((end - start) / 1000)))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}

off=$(median_ms OAR_PLUGIN_PROBE=0)
cold=$(median_ms OAR_PLUGIN_PROBE=1 OAR_PLUGIN_PROBE_CACHE=)
warm=$(median_ms OAR_PLUGIN_PROBE=1 OAR_PLUGIN_PROBE_CACHE="$CACHE")
echo "$(date -u '+%Y-%m-%d %H:%M UTC')  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) vCPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "oar devices, median of $RUNS runs (ms); ratio = mode / probe off"
printf '%-28s %8s %6s\n' mode ms ratio
printf '%-28s %8s %6s\n' "probe off" "$off" 1.00
printf '%-28s %8s %6s\n' "probe on, no cache" "$cold" "$(awk "BEGIN {printf \"%.2f\", $cold / $off}")"
printf '%-28s %8s %6s\n' "probe on, warm cache" "$warm" "$(awk "BEGIN {printf \"%.2f\", $warm / $off}")"
