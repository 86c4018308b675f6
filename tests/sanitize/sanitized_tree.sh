# Sourced by the scripts that build chorus with sanitizers and run it: one tree per sanitizer set under the build
# directory, and the runtime options every such run uses: stop at the first report, count leaks, print stacks.

# Sanitized trees build without CUDA: no GPU runs the device code where they run (nvcc's time is saved for nothing
# lost), and the build of a host-only library is checked on the way.
# configure_sanitized_tree <source dir> <tree> <sanitizers> [more cmake arguments]
configure_sanitized_tree() {
  local src=$1 tree=$2 sanitizers=$3
  shift 3
  # CHORUS_SANITIZE builds at -O1 with line tables and without link-time optimisation (CMakeLists.txt).
  cmake -S "$src" -B "$tree" -DCHORUS_SANITIZE="$sanitizers" -DCHORUS_BENCHMARKS=OFF -DCHORUS_CUDA=OFF \
    -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
}

export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ASAN_OPTIONS="halt_on_error=1 detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"
# Full unwinding, so that leaks made inside hwloc's plugins show the hwloc frame the suppression names.
export LSAN_OPTIONS="suppressions=$(dirname "${BASH_SOURCE[0]}")/lsan.supp print_suppressions=0 fast_unwind_on_malloc=0"
