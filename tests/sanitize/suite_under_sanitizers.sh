#!/usr/bin/env bash
# The suite by tier label under the sanitizers (`make test-sanitized`; CI runs it after `make test`), each tree built
# once, only for the tiers it runs (tier_<tier> targets, cmake/test_tiers.cmake), through ccache:
#   AddressSanitizer + UndefinedBehaviorSanitizer: unit, threads, processes and soak, without the slow variants, and
#     the watchdog pattern (a call waiting, another thread aborting it at a random moment) for 1,000 rounds;
#   ThreadSanitizer: the threads tier without the slow variants (ThreadSanitizer cannot follow a fork of a threaded
#     process, which the process tiers do), the watchdog for 300 rounds, and the soak's mix on 4 thread ranks;
#   then the fuzz tier: libFuzzer targets in a clang tree of their own (tests/fuzz/run_fuzz_targets.sh).
# Any report fails the run.
# Usage: suite_under_sanitizers.sh <source dir> <build dir>
set -euo pipefail
src=$(cd "$1" && pwd) build=$2
source "$src/tests/sanitize/sanitized_tree.sh"
jobs=$(nproc)

phase() { echo "== $(date +%T) $*"; }

tree=$build/sanitize-address-undefined
phase "AddressSanitizer + UndefinedBehaviorSanitizer: building $tree"
configure_sanitized_tree "$src" "$tree" address,undefined
cmake --build "$tree" -j"$jobs" --target tier_unit tier_threads tier_processes tier_soak >/dev/null
phase "AddressSanitizer + UndefinedBehaviorSanitizer: unit, threads, processes, soak"
(cd "$tree" && CHORUS_ABORT_ITERATIONS=1000 ctest --output-on-failure -j"$jobs" -L '^(unit|threads|processes|soak)$' \
  -LE '^slow$')

tree=$build/sanitize-thread
phase "ThreadSanitizer: building $tree"
configure_sanitized_tree "$src" "$tree" thread
cmake --build "$tree" -j"$jobs" --target tier_threads chorus_soak >/dev/null
phase "ThreadSanitizer: threads"
(cd "$tree" && CHORUS_ABORT_ITERATIONS=300 ctest --output-on-failure -j"$jobs" -L '^threads$' -LE '^slow$')
# The soak's random mix on 4 thread ranks (the run above took its process runs under the other sanitizers).
phase "ThreadSanitizer: chorus_soak, 4 thread ranks"
timeout 1200 "$tree/tests/chorus_soak" --threads --nranks 4 --seed 1 --seeds 2 --calls 200 --deadline 900

phase "fuzz"
"$src/tests/fuzz/run_fuzz_targets.sh" "$src" "$build"
phase "no sanitizer reports"
