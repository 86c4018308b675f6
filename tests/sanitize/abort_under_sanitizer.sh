#!/usr/bin/env bash
# The abort and nonblocking tests (tests/capi/abort_test.cc), built with a sanitizer and run for thousands of
# watchdog rounds: any data race (thread) or use after free (address) is a failure.
# Usage: abort_under_sanitizer.sh <source dir> <build dir> <thread|address,undefined> [rounds]
set -euo pipefail
src=$1 build=$2 sanitizer=$3 rounds=${4:-2000}
dir=$build/sanitize-${sanitizer//,/-}
cmake -S "$src" -B "$dir" -DCHORUS_SANITIZE="$sanitizer" -DCHORUS_BENCHMARKS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  >/dev/null
cmake --build "$dir" -j"$(nproc)" --target capi_abort_test >/dev/null
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ASAN_OPTIONS="halt_on_error=1 detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"
# Full unwinding, so that leaks made inside hwloc's plugins show the hwloc frame the suppression names.
export LSAN_OPTIONS="suppressions=$src/tests/sanitize/lsan.supp print_suppressions=0 fast_unwind_on_malloc=0"
CHORUS_ABORT_ITERATIONS=$rounds "$dir/tests/capi_abort_test"
