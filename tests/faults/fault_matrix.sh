#!/usr/bin/env bash
# The fault matrix: REPEATS runs of fault_rank (tests/faults/fault_rank.cc) per cell, over shm (every rank on one
# host), tcp and UCX (one rank per simulated host, tests/netns/cluster), at each rank count, for each fault: kill,
# stop, linkdown and delay (links exist only between hosts, so shm gets kill, stop and delay). The victim is rank 2;
# the heartbeat's period is 0.2 s and its timeout 1 s; the survivors agree with a 0.5 s grace. Per cell it prints
# p50 and p99 over every survivor's figures: detection (the fault to the survivor's error), agreement and shrink,
# the first AllReduce on the shrunk communicator; for delay, the false positives (survivors that reported a failure).
# Usage: tests/faults/fault_matrix.sh <build dir> [REPEATS=5] [RANK COUNTS="4 8"]
set -uo pipefail
build=$1 repeats=${2:-5} counts=${3:-4 8}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
percentiles() {  # reads numbers, prints "p50 X s, p99 Y s"
  sort -g | awk '{ v[NR] = $1 } END { if (!NR) { printf "none"; exit }
    p99 = int(0.99 * NR + 0.999); if (p99 < 1) p99 = 1
    printf "p50 %.3f s, p99 %.3f s", v[int((NR + 1) / 2)], v[p99] }'
}
field() { sed -n "s/.* $1 \([0-9.]*\) s.*/\1/p"; }
ucx=no
# The whole report first: a `grep -q` reading from chorus-info could end it by SIGPIPE under pipefail.
info=$("$build/tools/chorus-info")
grep -qE "^  ucx +(when forced|available)" <<<"$info" && ucx=yes
for n in $counts; do
  for transport in shm tcp ucx; do
    [ "$transport" = ucx ] && [ "$ucx" = no ] && { echo "ucx: not built here, skipped"; continue; }
    if [ "$transport" = shm ]; then layout="--hosts 1 --ranks-per-host $n" faults="kill stop delay"
    else layout="--hosts $n --ranks-per-host 1" faults="kill stop linkdown delay"; fi
    for fault in $faults; do
      lines="" runs_failed=0 how=""
      for ((i = 0; i < repeats; i++)); do
        rm -rf "${dir:?}"/*
        # shellcheck disable=SC2086
        "$here/../netns/cluster" $layout --fallback --logs "$dir/logs" -- env FAULT="$fault" VICTIM=2 \
          FAULT_DIR="$dir" CHORUS_TRANSPORT="$([ "$transport" = shm ] || echo "$transport")" UCX_TLS=tcp,self \
          CHORUS_HEARTBEAT_PERIOD=0.2 CHORUS_HEARTBEAT_TIMEOUT=1 CHORUS_TIMEOUT=30 \
          "$build/tests/fault_rank" > /dev/null 2>&1
        run=$(cat "$dir"/logs/rank*.log 2>/dev/null | grep "^fault=")
        how=$(echo "$run" | sed -n 's/.* how=\(.*\)/\1/p' | head -1)
        expected=$([ "$fault" = delay ] && echo "$n" || echo $((n - 1)))
        got=$(echo "$run" | grep -cE "detected|no failure")
        [ "$got" -eq "$expected" ] || runs_failed=$((runs_failed + 1))
        lines+="$run"$'\n'
      done
      cell="$transport, $n ranks, $fault${how:+ ($how)}"
      if [ "$fault" = delay ]; then
        echo "$cell: false positives $(echo "$lines" | grep -c detected) of $(echo "$lines" | grep -cE "detected|no failure") survivors, slowest call $(echo "$lines" | sed -n 's/.*slowest call after the fault \([0-9.]*\) s.*/\1/p' | percentiles)"
      else
        echo "$cell: detected $(echo "$lines" | field detected | percentiles); agreed and shrunk $(echo "$lines" | field agreed_and_shrunk | percentiles); first AllReduce $(echo "$lines" | field first_collective | percentiles)"
      fi
      [ "$runs_failed" -eq 0 ] || echo "  $runs_failed of $repeats runs did not end with every survivor's figures"
    done
  done
done
