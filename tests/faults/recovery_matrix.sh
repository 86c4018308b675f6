#!/usr/bin/env bash
# Recovery times over REPEATS runs of recovery_test's scenarios (4 processes, rank 2 killed or stopped), per transport:
# from a survivor's error to its first AllReduce on the shrunk communicator (kill), and from its last successful
# call to the heartbeat's report (stop, period 0.2 s, timeout 1 s). Prints p50 and p99 over every survivor's figure.
# Usage: tests/faults/recovery_matrix.sh <build dir> [REPEATS=10]
set -uo pipefail
build=$1 repeats=${2:-10}
percentiles() {  # reads numbers, prints "n N, p50 X, p99 Y"
  sort -g | awk '{ v[NR] = $1 } END { if (!NR) { print "no figures"; exit }
    p99 = int(0.99 * NR + 0.999); if (p99 < 1) p99 = 1
    printf "n %d, p50 %.3f s, p99 %.3f s, max %.3f s\n", NR, v[int((NR + 1) / 2)], v[p99], v[NR] }'
}
for index in 0 1; do
  transport=$([ $index -eq 0 ] && echo shm || echo tcp)
  out=$("$build/tests/recovery_test" --gtest_repeat="$repeats" \
    --gtest_filter="*SurvivorsShrinkAfterAKill*/$index:*StoppedRank*/$index" 2>&1)
  failed=$(echo "$out" | grep -c '^\[  FAILED  \]')
  echo "$transport, killed rank, error to first AllReduce after the shrink: $(echo "$out" |
    sed -n 's/.*shrink and first AllReduce \([0-9.]*\) s.*/\1/p' | percentiles)"
  echo "$transport, stopped rank, last successful call to the heartbeat's report: $(echo "$out" |
    sed -n 's/.*reported \([0-9.]*\) s after.*/\1/p' | percentiles)"
  [ "$failed" -eq 0 ] || echo "$transport: $failed failed runs"
done
