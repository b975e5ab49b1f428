#!/usr/bin/env bash
# The C++ tests under sanitizers, each in its own build directory:
#   asan: -DOAR_SANITIZE=address,undefined in build-asan, the whole ctest suite;
#   tsan: -DOAR_SANITIZE=thread in build-tsan, the multi-threaded tests.
# Usage: scripts/run_sanitizers.sh [asan|tsan|all]   (default: all)
# Prints each phase's wall time. OAR_SANITIZE_JOBS sets the build jobs
# (default: nproc).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
oar_install_deps
which="${1:-all}"
jobs="${OAR_SANITIZE_JOBS:-$(nproc)}"
case "$which" in asan|tsan|all) ;; *)
  echo "run_sanitizers.sh: unknown mode '$which'; expected asan, tsan or all" >&2; exit 2 ;;
esac

# oar_sanitized_build DIR SANITIZERS TARGETS... : configure (first run) and build.
oar_sanitized_build() {
  local dir="$1" sanitize="$2"
  shift 2
  if [[ ! -f "$dir/build.ninja" ]]; then
    cmake -S "$OAR_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DOAR_SANITIZE="$sanitize" -DOAR_BUILD_BENCH=OFF -DOAR_BUILD_CUDA=OFF
  fi
  cmake --build "$dir" -j "$jobs" ${1:+--target "$@"}
}

phase() {
  local start=$SECONDS
  "$@"
  echo "oar: ${*:1:2}: $((SECONDS - start)) s"
}

run_asan() {
  local dir="$OAR_ROOT/build-asan"
  phase oar_sanitized_build "$dir" address,undefined
  # Plugins keep process-lifetime caches (oneDNN primitives) that are never
  # freed by design, so leak checking is off; everything else aborts. A
  # malloc too big for the machine returns null (the conformance suite's
  # out-of-memory check asks for twice the memory) instead of aborting.
  # A segfault stays a SIGSEGV (handle_segv=0): the plugin-probe tests check
  # that a crashing plugin's probe process dies by that signal.
  export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_string_checks=1:allocator_may_return_null=1:handle_segv=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  # The SDK test builds the template out of tree without sanitizers: skipped.
  (cd "$dir" && phase ctest --output-on-failure -j "$jobs" --timeout 1200 -E conformance_sdk_install_template)
}

run_tsan() {
  local dir="$OAR_ROOT/build-tsan"
  phase oar_sanitized_build "$dir" thread oar_cpu oar_mock test_concurrency_stress test_ir_predictor
  # libgomp is not instrumented: its thread pool looks like a data race to
  # TSan, so the CPU plugin runs its parallel regions on one thread here
  # (the host threads of the tests are what is checked).
  export OAR_NUM_THREADS=1 OMP_NUM_THREADS=1
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$OAR_ROOT/tests/sanitizers/tsan.supp"
  # Fewer iterations: TSan makes each one 5-15x slower.
  export OAR_STRESS_ITERATIONS="${OAR_STRESS_ITERATIONS:-200}"
  (cd "$dir" && phase ctest --output-on-failure --timeout 1200 -R "test_concurrency_stress|test_ir_predictor")
}

[[ "$which" == tsan ]] || run_asan
[[ "$which" == asan ]] || run_tsan
echo "oar: sanitizers ($which) passed"
