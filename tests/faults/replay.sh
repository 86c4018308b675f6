#!/usr/bin/env bash
# Replays the failure scenarios chorus must survive, each as the test that stages it (kills, stopped and late
# ranks, mismatched calls, idle sockets, descriptor limits, hostile inputs), plus a full /dev/shm in a private mount
# namespace, and prints one row per scenario: what was done, what happened, how long it took.
# Usage: tests/faults/replay.sh <build dir>     (after `make build`; the namespace row needs root)
set -uo pipefail
build=${1:-build}
tests=$build/tests
rows=()

# scenario, then the command that stages it (exit 0 means it ended as chorus promises).
replay() {
  local scenario=$1
  shift
  local start end status
  start=$(date +%s%N)
  "$@" >/dev/null 2>&1
  status=$?
  end=$(date +%s%N)
  rows+=("$(printf '%-4s %-78s %-6s %7s' "$number" "$scenario" "$([ $status -eq 0 ] && echo held || echo BROKE)" \
    "$(awk -v ns=$((end - start)) 'BEGIN { printf "%.1f", ns / 1e9 }')")")
}

number=1 replay "mismatched counts, types, ops, roots, collectives, Send/Recv sizes: both ranks fail, poisoned" \
  "$tests/mismatch_test" --gtest_filter='*-*Late*:*MatchingCalls*'
number=2 replay "a rank 4.5 s late with CHORUS_TIMEOUT=3: errors on both, never wrong data" \
  "$tests/mismatch_test" --gtest_filter='*LateRank*'
number=3 replay "SIGKILL of 1 of 8 ranks in AllReduce/Broadcast/Send-Recv ring: all know within 1 s, name it" \
  "$tests/dead_peer_test"
number=4 replay "a rank fails or is killed inside init: the others fail at once, naming it" \
  "$tests/init_failure_test"
number=5 replay "counts of SIZE_MAX/2 and wrapping sizes, 2^30 ranks: errors, no crash" \
  "$tests/capi_hostile_input_test" --gtest_filter='*Counts*:*Wrap*:*MemAlloc*:*Absurd*'
number=6 replay "unpaired Send/Recv to self: refused, no stale data" \
  "$tests/capi_hostile_input_test" --gtest_filter='*Self*'
number=7 replay "kills during init leave nothing in /dev/shm; ids' roots end with their comms" \
  "$tests/teardown_test" --gtest_filter='*Root*'
number=8 replay "idle connections to the root and to tcp listeners, descriptors exhausted" \
  "$tests/listener_test"
number=9 replay "malformed and injected peer entries in the store" "$tests/peer_info_test"
number=10 replay "exit right after a large tcp AllReduce: no false 'closed the connection'" \
  "$tests/teardown_test" --gtest_filter='*LargeTcp*'
number=11 replay "grouped splits of two ranks of one thread; colour -5 refused" "$tests/capi_split_test"

# A /dev/shm of 64 KiB: shared memory between ranks does not live there, so 4 ranks still run.
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null; then
  number=7 replay "/dev/shm full (64 KiB tmpfs, private mount namespace): 4 ranks over shm still run" \
    unshare -m sh -c "mount -t tmpfs -o size=64k tmpfs /dev/shm && \
      CHORUS_TRANSPORT=shm $build/perf/all_reduce_perf --nprocs 4 -b 8 -e 1M -f 4 -n 5 -w 1"
fi

printf '%-4s %-78s %-6s %7s\n' "#" "scenario" "result" "seconds"
printf '%s\n' "${rows[@]}"
! printf '%s\n' "${rows[@]}" | grep -q BROKE
