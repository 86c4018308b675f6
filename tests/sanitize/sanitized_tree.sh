# Sourced by the scripts that build chorus with sanitizers and run it: one tree per sanitizer set under the build
# directory, and the runtime options every such run uses: stop at the first report, count leaks, print stacks.

# Sanitized trees build without CUDA: no GPU runs the device code where they run (nvcc's time is saved for nothing
# lost), and the build of a host-only library is checked on the way.
# configure_sanitized_tree <source dir> <tree> <sanitizers> [more cmake arguments]
configure_sanitized_tree() {
  local src=$1 tree=$2 sanitizers=$3
  shift 3
  # -O1, as the sanitizers' documentation advises, and line tables only (CHORUS_SANITIZE adds -g1): building these
  # trees is the largest part of `make test-sanitized`, and -O2 -g took 1.8 to 2.6 times as long per file
  # (collectives_threads_test.cc: 36 s against 14).
  cmake -S "$src" -B "$tree" -DCHORUS_SANITIZE="$sanitizers" -DCHORUS_BENCHMARKS=OFF -DCHORUS_CUDA=OFF \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" \
    "$@" >/dev/null
}

export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ASAN_OPTIONS="halt_on_error=1 detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"
# Full unwinding, so that leaks made inside hwloc's plugins show the hwloc frame the suppression names.
export LSAN_OPTIONS="suppressions=$(dirname "${BASH_SOURCE[0]}")/lsan.supp print_suppressions=0 fast_unwind_on_malloc=0"
