#!/usr/bin/env bash
# Runs .ci/run the way CI does, to know before submitting that it passes: on a clean clone of the committed HEAD in
# another folder, with CI=true, no standard input and the machine's environment without the caller's extras, then
# prints each phase's time and each tier label's time from the log.
# Usage: scripts/ci_local.sh [commit=HEAD] [clone dir=/tmp/chorus-ci]      (the log: <clone dir>.log)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
commit=$(git -C "$root" rev-parse "${1:-HEAD}")
dir=${2:-/tmp/chorus-ci}
log=$dir.log
rm -rf "$dir"
git clone --quiet --no-hardlinks "$root" "$dir"
git -C "$dir" checkout --quiet "$commit"
# Beside the clone, as CI has it: ../shared when the caller's tree has one.
[ -d "$root/../shared" ] && [ ! -e "$(dirname "$dir")/shared" ] && ln -s "$root/../shared" "$(dirname "$dir")/shared"
echo "ci_local: .ci/run on $commit in $dir, log $log"
start=$SECONDS
status=0
# The caller's own settings of chorus, NCCL, the build and Python do not reach the run; the rest of the machine's
# environment (its certificates, package indexes, toolchains) does, as in CI.
unset_args=()
for var in $(compgen -e); do
  case $var in
    CHORUS_* | NCCL_* | CMAKE_* | CTEST_* | CC | CXX | CFLAGS | CXXFLAGS | LDFLAGS | MAKEFLAGS | MAKELEVEL | \
      PYTHONPATH | VIRTUAL_ENV | LD_LIBRARY_PATH | LD_PRELOAD | OMP_* | ASAN_* | TSAN_* | UBSAN_* | LSAN_*)
      unset_args+=(-u "$var") ;;
  esac
done
env "${unset_args[@]}" CI=true bash -c 'cd "$1" && bash .ci/run' _ "$dir" < /dev/null > "$log" 2>&1 || status=$?
echo "ci_local: exit $status after $((SECONDS - start)) s"
echo "-- phases"
grep -E "^== ci: make .* took|^== [0-9:]+ " "$log" || true
echo "-- tier labels (each ctest run's label time summary)"
awk '/^Label Time Summary:/ {on=1; next} on && /^ *$/ {on=0} on' "$log" || true
grep -E "tests passed|tests failed|^Total Test time" "$log" || true
exit "$status"
