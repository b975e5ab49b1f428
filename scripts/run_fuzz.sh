#!/usr/bin/env bash
# The libFuzzer targets of tests/fuzz (one per reader of untrusted files),
# built with clang-14 into their own build dir with the core instrumented
# (libFuzzer coverage, AddressSanitizer, UndefinedBehaviorSanitizer), then
# run one after another from their seed corpora.
# Usage: scripts/run_fuzz.sh [target...]     (default: every target)
#   OAR_FUZZ_SECONDS   seconds per target (default 60)
#   OAR_FUZZ_RUNS      stop each target after this many executions instead
#   OAR_FUZZ_BUILD     build dir (default ./build-fuzz)
#   OAR_FUZZ_JOBS      parallel compile jobs (default 2)
# A finding (crash, sanitizer report, leak, timeout) stops the script with
# libFuzzer's report; the input that caused it is saved in the work dir
# (<build>/fuzz-work/<target>/) as crash-*/timeout-*/leak-*.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
oar_install_deps
oar_require_packages clang-14 libclang-rt-14-dev

FUZZ_BUILD="${OAR_FUZZ_BUILD:-$OAR_ROOT/build-fuzz}"
SECONDS_PER_TARGET="${OAR_FUZZ_SECONDS:-60}"
JOBS="${OAR_FUZZ_JOBS:-2}"
# The shared ASan runtime, so the plugins (linked with --no-undefined) resolve
# its symbols as the executables do.
SANITIZE="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=vptr -fno-sanitize-recover=undefined -shared-libasan"
ASAN_DIR="$(dirname "$(clang-14 -print-file-name=libclang_rt.asan-x86_64.so)")"

if [[ ! -f "$FUZZ_BUILD/build.ninja" ]]; then
  cmake -S "$OAR_ROOT" -B "$FUZZ_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_C_FLAGS="$SANITIZE" -DCMAKE_CXX_FLAGS="$SANITIZE -gline-tables-only" \
    -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath,$ASAN_DIR" -DCMAKE_SHARED_LINKER_FLAGS="-Wl,-rpath,$ASAN_DIR" \
    -DCMAKE_MODULE_LINKER_FLAGS="-Wl,-rpath,$ASAN_DIR" \
    -DOAR_BUILD_FUZZERS=ON -DOAR_BUILD_TESTS=OFF -DOAR_BUILD_EXAMPLES=OFF -DOAR_BUILD_BENCH=OFF \
    -DOAR_BUILD_CUDA=OFF
fi
cmake --build "$FUZZ_BUILD" -j "$JOBS" --target oar_fuzzers

targets=("$@")
if ((${#targets[@]} == 0)); then
  for exe in "$FUZZ_BUILD"/fuzz/fuzz_*; do targets+=("${exe##*/fuzz_}"); done
fi
limit=(-max_total_time="$SECONDS_PER_TARGET") how="$SECONDS_PER_TARGET s"
if [[ -n "${OAR_FUZZ_RUNS:-}" ]]; then limit=(-runs="$OAR_FUZZ_RUNS") how="$OAR_FUZZ_RUNS runs"; fi

# The safetensors target reads onto the cpu device of this build only.
export OAR_PLUGIN_PATH="$FUZZ_BUILD/plugins" OAR_DEVICE=cpu OAR_NUM_THREADS=1 OMP_NUM_THREADS=1
# ASan's leak check at exit would report the runtime's process-lifetime state.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
# The shared runtime must be the first library loaded (libstdc++ is linked first).
export LD_PRELOAD="$ASAN_DIR/libclang_rt.asan-x86_64.so"
for target in "${targets[@]}"; do
  seeds="$OAR_ROOT/tests/fuzz/corpus/$target"
  work="$FUZZ_BUILD/fuzz-work/$target"
  mkdir -p "$work/corpus"
  [[ -d "$seeds" ]] || { echo "oar: no seed corpus $seeds for target $target" >&2; exit 1; }
  echo "oar: fuzzing $target ($how)"
  (cd "$work" && "$FUZZ_BUILD/fuzz/fuzz_$target" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
     -dict="$OAR_ROOT/tests/fuzz/json.dict" -print_final_stats=1 "$work/corpus" "$seeds")
done
echo "oar: no findings in ${targets[*]}"
