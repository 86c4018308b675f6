#!/usr/bin/env bash
# False positives of the heartbeat failure detector under oversubscription: 8 ranks on this machine's cores run
# AllReduce sweeps back to back for SECONDS with CHORUS_HEARTBEAT_PERIOD=PERIOD and CHORUS_HEARTBEAT_TIMEOUT=TIMEOUT;
# a healthy rank reported silent aborts the run, so every sweep that fails is a false positive. Prints the sweeps,
# the calls, the failures and the load.
# Usage: tests/faults/heartbeat_soak.sh <build dir> [SECONDS=600] [PERIOD=0.25] [TIMEOUT=1] [RANKS=8]
set -uo pipefail
build=$1 seconds=${2:-600} period=${3:-0.25} timeout=${4:-1} ranks=${5:-8}
export CHORUS_HEARTBEAT_PERIOD=$period CHORUS_HEARTBEAT_TIMEOUT=$timeout
end=$(($(date +%s) + seconds))
sweeps=0 failures=0 calls=0
while [ "$(date +%s)" -lt "$end" ]; do
  # 8 B to 4 MiB, 20 timed calls per size plus checks: 23 sizes, about 600 calls a sweep.
  if out=$("$build/perf/all_reduce_perf" --nprocs "$ranks" -b 8 -e 4M -f 2 -n 20 -w 2 2>&1); then
    calls=$((calls + 23 * 25))
  else
    failures=$((failures + 1))
    echo "sweep $((sweeps + 1)) failed:"
    echo "$out" | grep -iE "heartbeat|error|fail" | head -5
  fi
  sweeps=$((sweeps + 1))
done
echo "heartbeat soak: $ranks ranks on $(nproc) cores, period $period s, timeout $timeout s, ${seconds} s:" \
  "$sweeps sweeps, about $calls calls, $failures failed (false positives), load $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$failures" -eq 0 ]
