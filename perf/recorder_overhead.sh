#!/usr/bin/env bash
# The flight recorder's and metrics' cost on the 8-byte AllReduce: all_reduce_perf of a build without them (BASE,
# e.g. a worktree of the commit before) and of this one (NEW), interleaved, REPEATS times each, at 2 and 4 ranks over
# shm; prints the median in-place time of each and the ratio.
# Usage: perf/recorder_overhead.sh BASE_BUILD_DIR NEW_BUILD_DIR [REPEATS]
set -euo pipefail
base=$1 new=$2 repeats=${3:-9}
time_of() {  # the in-place time (us) of the 8-byte row
  "$1/perf/all_reduce_perf" --nprocs "$2" -b 8 -e 8 -n 20000 -w 2000 2>/dev/null | awk '$1 == 8 { print $10 }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for ranks in 2 4; do
  b=() n=()
  for ((i = 0; i < repeats; i++)); do
    b+=("$(time_of "$base" $ranks)")
    n+=("$(time_of "$new" $ranks)")
  done
  mb=$(printf '%s\n' "${b[@]}" | median)
  mn=$(printf '%s\n' "${n[@]}" | median)
  awk -v r=$ranks -v b="$mb" -v n="$mn" -v k=$repeats 'BEGIN {
    printf "%d ranks, 8-byte AllReduce, median of %d: without %.3f us, with recorder and metrics %.3f us (%+.1f%%)\n",
           r, k, b, n, (n / b - 1) * 100 }'
done
